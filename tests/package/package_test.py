#!/usr/bin/env python3
"""The Debian package installs a working product (issue 20's acceptance, on this machine).

usage: package_test.py SOURCE_ROOT BUILD_DIR

Builds the package with the project's own script (`tools/dev deb`), installs it with `dpkg -i`
(root only: the test skips, exit 77, without root, and when a uexec package is already
installed, which it would replace), checks it as a person would use it, and purges it at the
end whatever happened:
  - the package's metadata and files: the binary, the page with xterm.js under
    /usr/share/uexec/web, the man page, three completions, the systemd user unit;
  - `uexec --version` is the package's version;
  - `man uexec` finds and renders the page, and groff has no warning about it;
  - the completions load in bash (bash-completion's loader), zsh (compinit) and fish, and
    complete commands, options and, with a daemon running, its process names;
  - `systemd-analyze verify` accepts the user unit;
  - the installed `uexec serve` serves the page from the installed data directory (the tree
    the package was built from is gone by then, so nothing else could serve it), and its
    clients (start, logs, url, stop) work against it.
"""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT, BUILD = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {name}")
    else:
        failed += 1
        print(f"FAIL  {name}" + (f": {detail}" if detail else ""))


def sh(cmd, **kw):
    """Runs cmd; a program that is not installed is exit 127 with a message, not an exception."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 60)
    try:
        return subprocess.run(cmd, **kw)
    except FileNotFoundError as e:
        return subprocess.CompletedProcess(cmd, 127, "", f"{cmd[0]}: not installed ({e}); tools/dev test installs it")


if os.geteuid() != 0:
    print("SKIP: dpkg -i needs root")
    sys.exit(77)
if "install ok installed" in sh(["dpkg-query", "-W", "-f=${Status}", "uexec"]).stdout:
    print("SKIP: a uexec package is installed on this machine; this test would replace and purge it")
    sys.exit(77)

# 1. Build it with the project's script.
t0 = time.monotonic()
p = sh([f"{ROOT}/tools/dev", "deb"], cwd=ROOT, timeout=1500, env={**os.environ, "UEXEC_BUILD_DIR": BUILD})
debs = glob.glob(f"{BUILD}/deb/uexec_*.deb")
check("tools/dev deb builds the package", p.returncode == 0 and len(debs) == 1, p.stderr[-2000:])
if not debs:
    sys.exit(1)
deb = debs[0]
# Where tools/dev deb built it ("building the package uexec V in DIR"): gone by now, so the page
# the installed daemon serves can only come from the installed files.
m = re.search(r"building the package uexec \S+ in (\S+)", p.stderr)
stage = m.group(1) if m else None
print(f"      {os.path.basename(deb)}, {os.path.getsize(deb)} bytes, built in {time.monotonic() - t0:.0f} s")
fields = {f: sh(["dpkg-deb", "-f", deb, f]).stdout.strip() for f in ("Package", "Version", "Depends", "Recommends")}
check("its Depends name the run-time libraries and libwebsockets' libuv plug-in",
      all(x in fields["Depends"] for x in ("libuv1", "libwebsockets17", "libwebsockets-evlib-uv", "libseccomp",
                                         "libtomlplusplus3")),
      fields["Depends"])
check("it recommends bubblewrap", "bubblewrap" in fields["Recommends"], fields["Recommends"])

tmp = tempfile.mkdtemp(prefix="uexec-pkg-", dir="/var/tmp")
daemon = None
try:
    # 2. Install it. --path-include: a machine set up to drop man pages (minimal images) keeps ours.
    p = sh(["dpkg", "--path-include=/usr/share/man/man1/uexec.1.gz", "--path-include=/usr/share/doc/uexec/examples/*",
            "-i", deb], timeout=300)
    check("dpkg -i installs it", p.returncode == 0, p.stdout[-1500:] + p.stderr[-1500:])
    listed = set(sh(["dpkg", "-L", "uexec"]).stdout.split())
    for path in ["/usr/bin/uexec", "/usr/share/man/man1/uexec.1.gz",
                 "/usr/share/bash-completion/completions/uexec", "/usr/share/zsh/vendor-completions/_uexec",
                 "/usr/share/fish/vendor_completions.d/uexec.fish", "/usr/lib/systemd/user/uexec.service",
                 "/usr/share/uexec/web/index.html", "/usr/share/uexec/web/app.js", "/usr/share/uexec/web/style.css",
                 "/usr/share/uexec/web/node_modules/@xterm/xterm/lib/xterm.js",
                 "/usr/share/uexec/web/node_modules/@xterm/addon-fit/lib/addon-fit.js",
                 "/usr/share/doc/uexec/copyright", "/usr/share/doc/uexec/examples/config.toml"]:
        check(f"the package holds {path}", path in listed and os.path.exists(path))

    # 3. --version is the package's version.
    out = sh(["/usr/bin/uexec", "--version"]).stdout.strip()
    check("uexec --version is the package's version", out == f"uexec {fields['Version']}", out)

    # The sample config is the installed binary's own, and reads back as every default.
    sample = sh(["/usr/bin/uexec", "config", "--sample"]).stdout
    check("the installed sample config is `uexec config --sample`",
          os.path.exists("/usr/share/doc/uexec/examples/config.toml") and
          open("/usr/share/doc/uexec/examples/config.toml").read() == sample)
    listing = subprocess.run(["/usr/bin/uexec", "config"], capture_output=True, text=True,
                             env={**os.environ, "UEXEC_CONFIG": "/usr/share/doc/uexec/examples/config.toml"})
    check("uexec config reads the sample: every key its default", listing.returncode == 0 and
          all(l.endswith("# default") for l in listing.stdout.splitlines() if " = " in l), listing.stdout + listing.stderr)

    # 4. man uexec.
    where = sh(["man", "-w", "uexec"]).stdout.strip()
    check("man -w uexec finds the installed page", where == "/usr/share/man/man1/uexec.1.gz", where)
    page = sh(["man", "uexec"], env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "100", "LC_ALL": "C.UTF-8"})
    check("man uexec renders it", page.returncode == 0 and "uexec serve" in page.stdout and "SYNOPSIS" in page.stdout,
          page.stderr[-500:])
    warn = sh(["man", "--warnings", "-l", where], env={**os.environ, "MANPAGER": "cat", "LC_ALL": "C.UTF-8"})
    check("groff has no warning about it", warn.returncode == 0 and warn.stderr.strip() == "", warn.stderr[-800:])

    # 5. systemd user unit.
    # As a user unit; --user needs a runtime directory, which a machine without a session lacks.
    os.makedirs(f"{tmp}/xdg-runtime", mode=0o700)
    v = sh(["systemd-analyze", "--user", "verify", "/usr/lib/systemd/user/uexec.service"],
           env={**os.environ, "XDG_RUNTIME_DIR": f"{tmp}/xdg-runtime"})
    unit_lines = [l for l in (v.stdout + v.stderr).splitlines() if "uexec" in l]
    check("systemd-analyze verify accepts the user unit", v.returncode == 0 and not unit_lines,
          (v.stdout + v.stderr)[-800:])
    unit = open("/usr/lib/systemd/user/uexec.service").read()
    check("the unit runs the installed binary", "ExecStart=/usr/bin/uexec serve" in unit)

    # 6. The installed daemon serves the installed page.
    check("the tree the package was built from is gone", stage is not None and not os.path.exists(stage), stage)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run_dir = os.path.join(tmp, "run")
    os.makedirs(run_dir, mode=0o700)
    sock = os.path.join(run_dir, "uexec.sock")
    env = {k: v for k, v in os.environ.items() if k != "UEXEC_WEB_ROOT"}
    env.update({"UEXEC_SOCKET": sock, "UEXEC_AUTOSTART": "0", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    daemon = subprocess.Popen(["/usr/bin/uexec", "serve", "--socket", sock, "--ws", f"127.0.0.1:{port}"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd="/")
    url = ""
    for _ in range(100):
        u = sh(["/usr/bin/uexec", "url"], env=env)
        if u.returncode == 0:
            url = u.stdout.strip()
            break
        time.sleep(0.1)
    check("uexec url prints the page's URL", url.startswith(f"http://127.0.0.1:{port}/"), url)
    for path, installed in [("/", "index.html"), ("/app.js", "app.js"), ("/style.css", "style.css"),
                            ("/vendor/xterm/xterm.js", "node_modules/@xterm/xterm/lib/xterm.js"),
                            ("/vendor/addon-fit/addon-fit.js", "node_modules/@xterm/addon-fit/lib/addon-fit.js")]:
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).read()
        except Exception as e:  # noqa: BLE001 - reported as the failure
            body = repr(e).encode()
        want = open(f"/usr/share/uexec/web/{installed}", "rb").read()
        check(f"GET {path} is the installed {installed}", body == want, body[:200])
    st = sh(["/usr/bin/uexec", "start", "--name", "pkgcheck", "--", "sh", "-c", "echo from-the-package; sleep 60"],
            env=env)
    check("uexec start runs a process in the installed daemon", st.returncode == 0, st.stderr)
    logs = ""
    for _ in range(50):
        logs = sh(["/usr/bin/uexec", "logs", "pkgcheck"], env=env).stdout
        if "from-the-package" in logs:
            break
        time.sleep(0.1)
    check("uexec logs reads its output", "from-the-package" in logs, logs)

    # 7. Completions, in each shell, with the daemon running (its process names complete).
    bash = sh(["bash", "--norc", "-c", r"""
        source /usr/share/bash-completion/bash_completion
        _completion_loader uexec
        complete -p uexec
        comp() { COMP_LINE="$*"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_POINT=${#COMP_LINE}
                 COMPREPLY=(); _uexec uexec "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"; echo "${COMPREPLY[*]}"; }
        comp uexec se
        comp uexec serve --re
        comp uexec kill x --signal ""
        comp uexec logs ""
        """], env=env)
    lines = bash.stdout.splitlines()
    check("bash: the completion loads on demand", len(lines) == 5 and "-F _uexec" in lines[0], bash.stdout + bash.stderr)
    if len(lines) == 5:
        check("bash: commands", set(lines[1].split()) == {"send", "serve"}, lines[1])
        check("bash: a command's options", set(lines[2].split()) == {"--replace", "--retain-exited"}, lines[2])
        check("bash: signal names", "INT" in lines[3].split() and "TERM" in lines[3].split(), lines[3])
        check("bash: the daemon's process names", "pkgcheck" in lines[4].split(), lines[4])
    zsh = sh(["zsh", "-f", "-c", f"autoload -Uz compinit; compinit -u -d {tmp}/zcompdump; print -r -- $_comps[uexec]"],
             env=env)
    check("zsh: compinit finds the completion", zsh.stdout.strip() == "_uexec", zsh.stdout + zsh.stderr)
    zsyntax = sh(["zsh", "-n", "/usr/share/zsh/vendor-completions/_uexec"])
    check("zsh: it parses", zsyntax.returncode == 0, zsyntax.stderr)
    fish_env = {**env, "HOME": tmp, "XDG_CONFIG_HOME": f"{tmp}/config", "XDG_DATA_HOME": f"{tmp}/data"}

    def fish(line):
        r = sh(["fish", "-c", f"complete -C '{line}'"], env=fish_env)
        return {l.split("\t")[0] for l in r.stdout.splitlines()}, r.stderr

    got, err = fish("uexec se")
    check("fish: commands", got == {"send", "serve"}, f"{got} {err}")
    got, err = fish("uexec serve --re")
    check("fish: a command's options", got == {"--replace", "--retain-exited"}, f"{got} {err}")
    got, err = fish("uexec logs ")
    check("fish: the daemon's process names", "pkgcheck" in got, f"{got} {err}")

    stop = sh(["/usr/bin/uexec", "stop"], env=env, timeout=30)
    check("uexec stop stops the installed daemon", stop.returncode == 0 and daemon.wait(timeout=20) is not None,
          stop.stderr)
finally:
    if daemon is not None and daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=10)
        except subprocess.TimeoutExpired:
            daemon.kill()
    p = sh(["dpkg", "-P", "uexec"], timeout=300)
    check("dpkg -P removes it again", p.returncode == 0 and not os.path.exists("/usr/bin/uexec"), p.stderr)
    shutil.rmtree(tmp, ignore_errors=True)

print(f"package: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
