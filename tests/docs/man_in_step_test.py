#!/usr/bin/env python3
"""The manual page and the shell completions stay in step with `--help`.

usage: man_in_step_test.py UEXEC SOURCE_ROOT

The commands are the ones `uexec --help` lists; a command's options are the ones its own
`uexec COMMAND --help` names in its usage lines or at the start of an option line (an option
only mentioned in a sentence does not count). The test fails, naming what is missing, when
  - dist/man/uexec.1.scd has no section for a command (`## uexec COMMAND`, or a `*uexec COMMAND*`
    entry under "The daemon's clients"), or that section does not name one of its options as
    `*--option*`;
  - the bash, zsh or fish completion does not offer a command, or does not offer one of its
    options for that command.
A new flag therefore fails here until the manual page and the completions know it.
"""
import re
import subprocess
import sys

UEXEC, ROOT = sys.argv[1], sys.argv[2]
failures = []


def run_help(*args):
    p = subprocess.run([UEXEC, *args], capture_output=True, text=True, timeout=20,
                       env={"PATH": "/usr/bin:/bin", "UEXEC_AUTOSTART": "0"})
    return p.stdout + p.stderr


def commands():
    out = run_help("--help")
    names = []
    for m in re.finditer(r"^  uexec ([a-z][a-z-]*)", out, re.M):
        if m.group(1) not in names:
            names.append(m.group(1))
    return names


def options_of(cmd):
    """The options in `uexec CMD --help`'s usage lines and option lines."""
    out = run_help(cmd, "--help")
    opts = []
    in_usage = False
    for line in out.splitlines():
        if line.startswith("usage:") or re.match(r"^\s+uexec %s\b" % re.escape(cmd), line):
            in_usage = True
        elif in_usage and re.match(r"^\s+\[", line):
            pass  # a continuation of the usage
        else:
            in_usage = False
            if not line.strip().startswith("--"):
                continue
        for o in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line):
            if o not in opts:
                opts.append(o)
    return [o for o in opts if o != "--help"]


def man_sections(text):
    """COMMAND -> its part of the page."""
    sections = {}
    for m in re.finditer(r"^## uexec ([a-z-]+)(.*?)(?=^## |^# |\Z)", text, re.M | re.S):
        sections[m.group(1)] = m.group(0)
        for extra in re.findall(r",\s*uexec ([a-z-]+)", m.group(2).splitlines()[0]):
            sections[extra] = m.group(0)
    clients = re.search(r"^## The daemon's clients(.*?)(?=^## |^# )", text, re.M | re.S)
    if clients:
        for m in re.finditer(r"^\*uexec ([a-z-]+)\*(.*?)(?=^\*uexec |\Z)", clients.group(1), re.M | re.S):
            sections[m.group(1)] = m.group(0)
    return sections


def bash_options(text, cmd):
    variables = dict(re.findall(r'local (\w+_opts)="([^"]*)"', text))
    m = re.search(r"^\s+%s\) opts=\"([^\"]*)\"" % re.escape(cmd), text, re.M)
    if not m:
        return None
    words = []
    for w in m.group(1).split():
        words += variables.get(w[1:], "").split() if w.startswith("$") else [w]
    return set(words)


def zsh_options(text, cmd):
    arrays = {name: body for name, body in re.findall(r"^\s+(\w+)=\(\n(.*?)^\s+\)", text, re.M | re.S)}
    m = re.search(r"^\s+%s\) _arguments(.*?);;" % re.escape(cmd), text, re.M | re.S)
    if not m:
        return None
    body = m.group(1)
    for name in re.findall(r"\$(\w+)", body):
        body += arrays.get(name, "")
    return set(re.findall(r"'\*?(--[a-z][a-z-]*)", body))


def fish_options(text, cmd):
    found = set()
    for line in text.splitlines():
        m = re.search(r'__fish_seen_subcommand_from ([^"]*)"', line)
        if m and cmd in m.group(1).split():
            found.update("--" + o for o in re.findall(r"(?<!\S)-l ([a-z][a-z-]*)", line))
    return found


cmds = commands()
if len(cmds) < 10:
    failures.append(f"`uexec --help` lists only {cmds}")
man = open(f"{ROOT}/dist/man/uexec.1.scd").read()
bash = open(f"{ROOT}/dist/completions/uexec.bash").read()
zsh = open(f"{ROOT}/dist/completions/_uexec").read()
fish = open(f"{ROOT}/dist/completions/uexec.fish").read()
sections = man_sections(man)
bash_commands = set(re.search(r'local commands="([^"]*)"', bash).group(1).split())
zsh_commands = set(re.findall(r"^\s+['\"]([a-z-]+):", zsh, re.M))
fish_commands = set(re.search(r"set -l commands (.*)", fish).group(1).split())

checked = 0
for cmd in cmds:
    if cmd not in sections:
        failures.append(f"man page: no section for `uexec {cmd}`")
    for name, offered in (("bash", bash_commands), ("zsh", zsh_commands), ("fish", fish_commands)):
        if cmd not in offered:
            failures.append(f"{name} completion: `uexec {cmd}` is not offered")
    if cmd in ("help", "version"):
        continue
    opts = options_of(cmd)
    for opt in opts:
        checked += 1
        if cmd in sections and f"*{opt}*" not in sections[cmd]:
            failures.append(f"man page: `uexec {cmd} --help` names {opt}; its section does not")
        for name, got in (("bash", bash_options(bash, cmd)), ("zsh", zsh_options(zsh, cmd)),
                          ("fish", fish_options(fish, cmd))):
            if got is None:
                failures.append(f"{name} completion: no options for `uexec {cmd}`")
                break
            if opt not in got:
                failures.append(f"{name} completion: `uexec {cmd}` does not offer {opt}")

for f in failures:
    print("FAIL:", f)
print(f"{len(cmds)} commands, {checked} options checked against the man page and 3 completions: "
      f"{len(failures)} missing")
sys.exit(1 if failures else 0)
