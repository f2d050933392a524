#!/usr/bin/env python3
"""Hostile-workspace cases for the process boundary and the denial record (issue 19 rows 11, 12).

    python3 tests/sandbox/holes_misc.py build/src/uexec [build/tests/sandbox/sandbox-probe]

  - the command cannot signal, or read the ptrace-guarded /proc files of, a host process of
    its own user; the namespaces and bwrap backends do not even see it (a pid namespace),
    the landlock backend sees its pid and world-readable /proc files (cmdline, stat) but
    Landlock's scoping denies the signal (ABI 6) and the ptrace-guarded files (environ,
    maps, the cwd and fd links);
  - the command holds no capability and has no_new_privs: a setuid-root or file-capability
    binary gains nothing, also as a non-root user whose bounding set stays full (no
    CAP_SETPCAP to drop it);
  - `--log-denials` lists the seccomp filter's denials (socket(AF_INET) with the network
    off, unshare) with the landlock and bwrap backends too;
  - `--log-denials` lists the filesystem writes the policy forbids, with their paths, on every
    backend: a file created outside the workspace, a directory made there, a rename onto it
    (both names), the protected .git/config, a relative name through a dirfd, and a symlink
    planted in the workspace that points outside (named where it points), a dangling one that
    O_CREAT follows (named at its target); the writes it allows (the workspace,
    /dev/null) are not listed, nor calls that write nothing forbidden (O_TMPFILE in the
    workspace, mkdir of an existing name, a read-only open with O_CREAT, a directory opened
    for writing, moving a symlink that points at /usr), a listed write is not the verdict,
    and nothing is listed without the flag;
  - `--log-denials` lists the reads of what the sandbox hides (namespaces, bwrap): a deny-read
    file, also through a symlink, a file below a denied directory and the directory itself;
    allowed and missing reads are not listed (the control plane's token: holes_control.py);
  - a denied path's control characters (an escape sequence in a file name) are shown as
    escapes, never sent to the terminal;
  - root cannot leave a setuid file made with O_TMPFILE and linked in, with or without
    --log-denials;
  - more denials than the record holds (255 socket families) end normally and the rest are
    counted, also for a user over fs.pipe-user-pages-soft (8 KiB pipes).

The first six cases are guards: they passed before (row 11 asked to verify what the landlock
backend gives, and the README now says it); the last three are regression cases: the seccomp one failed
before for landlock and bwrap, the filesystem one for every backend (row 12: filesystem
denials were never listed), the last one everywhere (the rest were dropped uncounted). The
escape-sequence case is a regression case too: the path reached the terminal as it was.
"""
import errno
import os
import re
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import Suite, Fail, Skip, expect, describe  # noqa: E402

suite = Suite("misc", sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)


def landlock_abi():
    out = subprocess.run([suite.uexec, "sandbox", "--check"], capture_output=True, text=True).stdout
    m = re.search(r"landlock ABI:\s*(\d+)", out)
    return int(m.group(1)) if m else 0


class HostProcess:
    """A `sleep` of the identity's own, outside any sandbox, with a secret in its environment."""

    def __init__(self, ctx):
        self.p = subprocess.Popen(ctx.ident.wrap(["sleep", "300"]), env=ctx.ident.env({"UEXEC_HOLE_SECRET": "s3cr3t"}),
                                  cwd=ctx.outside, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        for _ in range(200):  # setpriv execs sleep: wait until the pid runs `sleep` as the identity
            try:
                if open(f"/proc/{self.p.pid}/comm").read().strip() == "sleep":
                    break
            except OSError:
                pass
            time.sleep(0.01)
        self.pid = self.p.pid

    def close(self):
        self.p.kill()
        self.p.wait()


@suite.case("a host process of the same user cannot be signalled")
def _(ctx):
    if ctx.backend == "landlock" and landlock_abi() < 6:
        raise Skip("Landlock ABI below 6 does not scope signals (documented in the README)")
    h = HostProcess(ctx)
    try:
        r = ctx.sandbox(["sh", "-c", f"kill -CONT {h.pid} && echo SIGNALLED"])
        expect("SIGNALLED" not in r.stdout, f"the sandbox signalled host pid {h.pid}: {describe(r)}")
        expect(h.p.poll() is None, "the host process died")
        r = ctx.sandbox(["sh", "-c", f"kill -KILL {h.pid}; sleep 0.2; true"])
        expect(h.p.poll() is None, f"the sandbox killed host pid {h.pid}: {describe(r)}")
    finally:
        h.close()


@suite.case("a host process's environment, memory map and links are unreadable")
def _(ctx):
    h = HostProcess(ctx)
    try:
        outside = ctx.run(["cat", f"/proc/{h.pid}/environ"])
        expect("s3cr3t" in outside.stdout, f"the test is void: outside the sandbox environ reads {describe(outside)}")
        for what in ("environ", "maps", "auxv", "mem"):
            r = ctx.sandbox(["cat", f"/proc/{h.pid}/{what}"])
            expect(r.returncode != 0 and "s3cr3t" not in r.stdout and not r.stdout.strip(),
                   f"/proc/{h.pid}/{what} is readable: {describe(r)}")
        for link in ("cwd", "root", "exe", "fd/0"):
            r = ctx.sandbox(["readlink", f"/proc/{h.pid}/{link}"])
            expect(r.returncode != 0 and not r.stdout.strip(), f"/proc/{h.pid}/{link} resolves: {describe(r)}")
    finally:
        h.close()


@suite.case("host pids are not visible", backends=("namespaces", "bwrap"))
def _(ctx):
    h = HostProcess(ctx)
    try:
        r = ctx.sandbox(["sh", "-c", f"test -e /proc/{h.pid}/cmdline && cat /proc/{h.pid}/cmdline"])
        expect("sleep" not in r.stdout, f"host pid {h.pid} is visible: {describe(r)}")
    finally:
        h.close()


def caps(ctx):
    r = ctx.sandbox(["cat", "/proc/self/status"])
    expect(r.returncode == 0, describe(r))
    return {k: v.strip() for k, v in (line.split(":", 1) for line in r.stdout.splitlines() if ":" in line)}


@suite.case("no capabilities held, no_new_privs set")
def _(ctx):
    st = caps(ctx)
    for k in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        expect(int(st.get(k, "1"), 16) == 0, f"{k} is {st.get(k)}")
    expect(st.get("NoNewPrivs") == "1", f"NoNewPrivs is {st.get('NoNewPrivs')}")
    if ctx.ident.is_root or ctx.backend != "landlock":
        expect(int(st.get("CapBnd", "1"), 16) == 0, f"CapBnd is {st.get('CapBnd')}")


def privileged_copy(ctx, src, name):
    """A root-owned copy of `src` beside the workspace, readable and runnable by the identity."""
    d = os.path.join(ctx.base, "priv")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    dst = os.path.join(d, name)
    shutil.copy(src, dst)
    os.chown(dst, 0, 0)
    return dst


@suite.case("a setuid-root binary gains nothing", unpriv_only=True)
def _(ctx):
    idbin = privileged_copy(ctx, shutil.which("id"), "suid-id")
    os.chmod(idbin, 0o4755)
    outside = ctx.run([idbin, "-u"])
    if outside.stdout.strip() != "0":
        raise Skip(f"setuid does not work on this file system ({outside.stdout.strip()}): nothing to show")
    r = ctx.sandbox([idbin, "-u"])
    expect(r.returncode == 0 and r.stdout.strip() == str(ctx.ident.uid), f"setuid-root id says {describe(r)}")


# Regression (review of row 12): O_TMPFILE takes a mode too, and linkat names the file, so root
# could leave a setuid file in the workspace past the chmod and O_CREAT rules.
@suite.case("root cannot leave a setuid file made with O_TMPFILE and linked in", root_only=True)
def _(ctx):
    script = ("import os, stat, sys\n"
              "try:\n"
              "    fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755)\n"
              "except OSError as e:\n"
              "    print('refused', e.errno); sys.exit(0)\n"
              "os.link(f'/proc/self/fd/{fd}', 'suid', follow_symlinks=True)\n"
              "print('made', oct(os.stat('suid').st_mode))\n")
    for flags in ((), ("--log-denials",)):
        r = ctx.sandbox(["python3", "-c", script], flags=flags)
        made = os.path.exists(ctx.path("suid")) and os.stat(ctx.path("suid")).st_mode & 0o6000
        expect(not made and f"refused {errno.EPERM}" in r.stdout,
               f"a setuid file was made with {' '.join(flags) or 'no flags'}: {describe(r)}")


@suite.case("a file-capability binary gains nothing", unpriv_only=True)
def _(ctx):
    catbin = privileged_copy(ctx, shutil.which("cat"), "fcap-cat")
    # struct vfs_cap_data, revision 2: CAP_DAC_READ_SEARCH (2) permitted and effective.
    cap = struct.pack("<IIIII", 0x02000000 | 1, 1 << 2, 0, 0, 0)
    try:
        os.setxattr(catbin, "security.capability", cap)
    except OSError as e:
        raise Skip(f"cannot set file capabilities here: {e}")
    outside = ctx.run([catbin, "/etc/shadow"])
    if outside.returncode != 0:
        raise Skip(f"file capabilities do not work on this file system: {describe(outside)}")
    r = ctx.sandbox([catbin, "/etc/shadow"])
    expect(r.returncode != 0 and "root:" not in r.stdout, f"the file capability worked: {describe(r)}")


# Regression (failed before: landlock and bwrap recorded nothing). The namespace backend's
# records are covered by tests/sandbox/acceptance.py (SECCOMP_PROBES).
@suite.case("--log-denials lists the seccomp filter's denials", backends=("landlock", "bwrap"))
def _(ctx):
    r = ctx.sandbox(["python3", "-c", "import ctypes, socket\n"
                     "try:\n    socket.socket(socket.AF_INET, socket.SOCK_STREAM)\nexcept OSError as e:\n    print('socket', e.errno)\n"
                     "libc = ctypes.CDLL(None, use_errno=True)\n"
                     "if libc.unshare(0x10000000) < 0:\n    print('unshare', ctypes.get_errno())\n"  # CLONE_NEWUSER
                     "raise SystemExit(1)\n"], flags=("--log-denials",))
    expect("socket 1" in r.stdout and "unshare 1" in r.stdout, f"the calls were not denied with EPERM: {describe(r)}")
    expect("seccomp denied socket(AF_INET) (network)" in r.stderr, f"socket(AF_INET) is not listed: {describe(r)}")
    expect(re.search(r"seccomp denied unshare\b.*\(namespace\)", r.stderr), f"unshare is not listed: {describe(r)}")


# Regression (row 12: filesystem denials were listed by no backend).
@suite.case("--log-denials lists the filesystem writes the policy forbids, with the path")
def _(ctx):
    ctx.symlink(ctx.outside, "planted")
    ctx.write("mine.txt")  # made outside: Landlock-only may refuse new names at a workspace top with a link in it
    ctx.write("kept.txt")
    ctx.write("sub/kept.txt")
    script = ("import os\n"
              "def attempt(f):\n"
              "    try:\n        f()\n    except OSError as e:\n        print('denied', e.errno)\n"
              f"attempt(lambda: open('/etc/uexec-holes-{os.getpid()}', 'w'))\n"
              f"attempt(lambda: os.mkdir({ctx.outside!r} + '/made'))\n"
              "open('mine.txt', 'w').write('ok')\n"
              f"attempt(lambda: os.rename('mine.txt', {ctx.outside!r} + '/moved'))\n"
              "attempt(lambda: open('.git/config', 'a'))\n"
              "d = os.open('/usr', os.O_RDONLY | os.O_DIRECTORY)\n"
              "attempt(lambda: os.open('uexec-rel', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d))\n"
              "attempt(lambda: open('planted/through-link', 'w'))\n"
              f"os.symlink({ctx.outside!r} + '/dangle-target', 'sub/dangle')\n"
              "attempt(lambda: open('sub/dangle', 'w'))\n"
              "open('/dev/null', 'w').write('x')\n"
              "open('kept.txt', 'w').write('ok')\n"
              # Calls that write nothing forbidden: no record (the review's false records).
              "def harmless(f):\n"
              "    try:\n        f()\n    except OSError as e:\n        print('failed', e.errno)\n"
              "harmless(lambda: os.close(os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o600)))\n"
              "harmless(lambda: os.mkdir('/usr'))\n"
              "harmless(lambda: os.open('/usr', os.O_WRONLY))\n"
              "harmless(lambda: os.close(os.open('/etc/passwd', os.O_RDONLY | os.O_CREAT)))\n"
              "os.symlink('/usr', 'sub/to-usr'); os.rename('sub/to-usr', 'sub/to-usr-moved')\n"
              "os.unlink('sub/to-usr-moved')\n"
              "raise SystemExit(3)\n")
    r = ctx.sandbox(["python3", "-c", script], flags=("--log-denials",))
    expect(r.stdout.count("denied") == 7, f"not every write was refused: {describe(r)}")
    expect(r.returncode == 3, f"the script did not run to its end: {describe(r)}")
    listed = [line for line in r.stderr.splitlines() if line.startswith("uexec: filesystem denied")]
    for want in (f"openat /etc/uexec-holes-{os.getpid()} (fs_write)", f"mkdir {ctx.outside}/made (fs_write)",
                 f"{ctx.outside}/moved (fs_write)", f"openat {ctx.ws}/.git/config (fs_write)",
                 "openat /usr/uexec-rel (fs_write)", f"openat {ctx.outside}/through-link (fs_write)",
                 f"openat {ctx.outside}/dangle-target (fs_write)"):
        expect(any(line.endswith(want) for line in listed), f"{want!r} is not listed: {describe(r)}")
    expect(not any("mine.txt" in l or "kept.txt" in l or "/dev/null" in l for l in listed),
           f"an allowed write is listed: {describe(r)}")
    expect(not any(l.endswith((f"openat {ctx.ws} (fs_write)", "mkdir /usr (fs_write)", "openat /usr (fs_write)"))
                   or "/etc/passwd" in l
                   or "to-usr" in l for l in listed),
           f"a call that writes nothing forbidden is listed (O_TMPFILE in the workspace, an existing "
           f"name, a read-only open, a directory opened for writing, moving a symlink): {describe(r)}")
    # The listing is information, not the verdict: the kernel decided each call, and this
    # script failed (exit 3) for a reason of its own.
    expect("no sign of a sandbox denial" in r.stderr and "sandbox (" not in r.stderr,
           f"a filesystem record became the verdict: {describe(r)}")
    quiet = ctx.sandbox(["python3", "-c", script])
    expect("filesystem denied" not in quiet.stderr, f"listed without --log-denials: {describe(quiet)}")


# Regression (noticed in review: the paths were printed as the program wrote them): a sandboxed
# program names the paths of its denials, and a name can hold escape sequences that set the
# title, clear the screen or move the cursor over what uexec printed before.
@suite.case("--log-denials shows a denied path's control characters instead of sending them")
def _(ctx):
    name = f"/etc/uexec-esc-{os.getpid()}\x1b]2;pwned\x07\x1b[2J\u202e"
    script = ("import sys\n"
              f"try:\n    open({name!r}, 'w')\nexcept OSError as e:\n    print('denied', e.errno)\n")
    r = ctx.sandbox(["python3", "-c", script], flags=("--log-denials",))
    expect("denied" in r.stdout, f"the write was not refused: {describe(r)}")
    listed = [line for line in r.stderr.splitlines() if line.startswith("uexec: filesystem denied")]
    shown = f"/etc/uexec-esc-{os.getpid()}\\e]2;pwned\\x07\\e[2J\\u{{202e}}"
    expect(any(shown in line for line in listed), f"{shown!r} is not listed: {describe(r)}")
    expect("\x1b" not in r.stderr and "\x07" not in r.stderr and "\u202e" not in r.stderr,
           f"a control character reached the terminal: {r.stderr!r}")


@suite.case("--log-denials lists the reads of what the sandbox hides, with the path", backends=("namespaces", "bwrap"))
def _(ctx):
    ctx.write("secret.pem", "UEXEC-SECRET\n")
    ctx.write("private/inner.txt", "UEXEC-SECRET\n")
    ctx.write("plain.txt", "plain\n")
    ctx.symlink(ctx.path("secret.pem"), "alias")
    script = ("import os\n"
              "def attempt(f):\n"
              "    try:\n        f()\n    except OSError as e:\n        print('denied', e.errno)\n"
              "attempt(lambda: open('secret.pem').read())\n"
              "attempt(lambda: open('alias').read())\n"
              "attempt(lambda: open('private/inner.txt').read())\n"
              "attempt(lambda: os.listdir('private'))\n"
              "open('plain.txt').read(); os.listdir('.'); open('/etc/hostname').read()\n"
              "attempt(lambda: open('missing.txt').read())\n")
    r = ctx.sandbox(["python3", "-c", script], flags=("--log-denials", "--deny-read", "*.pem",
                                                      "--deny-read", "private"))
    expect(r.returncode == 0 and "UEXEC-SECRET" not in r.stdout, f"the script failed or read a secret: {describe(r)}")
    listed = [line for line in r.stderr.splitlines() if line.startswith("uexec: filesystem denied")]
    # The read through `alias` lands on secret.pem: one record, counted twice.
    for want in (f"openat {ctx.ws}/secret.pem x2 (fs_read)", f"openat {ctx.ws}/private/inner.txt (fs_read)",
                 f"openat {ctx.ws}/private (fs_read)"):
        expect(any(line.endswith(want) for line in listed), f"{want!r} is not listed: {describe(r)}")
    expect(not any("plain.txt" in l or "/etc/hostname" in l or "missing.txt" in l or l.endswith(f"{ctx.ws} (fs_read)")
                   for l in listed), f"an allowed read is listed: {describe(r)}")


# Regression (the review of row 12): init wrote its records into the status pipe that the
# manager reads only after reaping it, so more records than the pipe holds (8 KiB for a user
# over fs.pipe-user-pages-soft) hung the sandbox, with or without --log-denials.
@suite.case("more denials than the record holds: the command ends, the rest are counted")
def _(ctx):
    script = ("import socket\n"
              "for family in range(256):\n"
              "    try:\n        socket.socket(family, socket.SOCK_STREAM).close()\n"
              "    except OSError:\n        pass\n"
              "print('all tried')\n")
    soft = "/proc/sys/fs/pipe-user-pages-soft"
    saved = open(soft).read().strip() if not ctx.ident.is_root and os.access(soft, os.W_OK) else None
    try:
        if saved is not None:
            open(soft, "w").write("1")  # this user's next pipes: two pages
        r = ctx.sandbox(["python3", "-c", script], flags=("--log-denials",), timeout=30)
    finally:
        if saved is not None:
            open(soft, "w").write(saved)
    expect("all tried" in r.stdout and r.returncode == 0, f"the command did not end well: {describe(r)}")
    listed = len(re.findall(r"^uexec: seccomp denied socket\(", r.stderr, re.M))
    more = re.search(r"^uexec: sandbox denied (\d+) more calls or writes", r.stderr, re.M)
    denied = 256 if ctx.backend == "landlock" else 255  # Landlock-only refuses AF_UNIX too
    expect(more and listed + int(more.group(1)) == denied,
           f"{denied} families denied, {listed} listed and {more.group(1) if more else 'none'} counted: {describe(r)}")


if __name__ == "__main__":
    sys.exit(suite.run())
