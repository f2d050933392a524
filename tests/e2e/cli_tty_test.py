#!/usr/bin/env python3
"""`uexec run --tty` on a real terminal: raw mode, forwarded keys and size, restored termios.

Runs uexec inside a PTY made here (as a terminal emulator would), types into it, resizes
it, and checks that uexec puts the terminal back exactly as it found it.
"""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

uexec = os.path.abspath(sys.argv[1])


def read_until(fd, needle, timeout=10.0):
    buf = b""
    end = time.time() + timeout
    while needle not in buf:
        left = end - time.time()
        if left <= 0:
            raise SystemExit(f"timeout waiting for {needle!r}; got {buf!r}")
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


def run(argv, script):
    pid, master = pty.fork()
    if pid == 0:
        os.execv(uexec, [uexec] + argv)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    before = termios.tcgetattr(master)
    script(master, pid)
    _, status = os.waitpid(pid, 0)
    after = termios.tcgetattr(master)
    os.close(master)
    return os.waitstatus_to_exitcode(status), before, after


def interactive(master, pid):
    # The inner shell sees our size, then a resize.
    read_until(master, b"READY")
    os.write(master, b"stty size\r")
    read_until(master, b"30 100")
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    os.kill(pid, 28)  # SIGWINCH, as the kernel would send to the foreground group
    time.sleep(0.2)
    os.write(master, b"stty size\r")
    read_until(master, b"40 120")
    # Ctrl-C travels as a byte in raw mode and interrupts the inner foreground job only.
    os.write(master, b"sleep 30\r")
    time.sleep(0.3)
    os.write(master, b"\x03")
    os.write(master, b"echo after-int $?\r")
    read_until(master, b"after-int 130")
    os.write(master, b"exit 4\r")
    read_until(master, b"exit")


code, before, after = run(["run", "--tty", "--", "/bin/sh", "-c", "echo READY; exec /bin/sh -i"], interactive)
assert code == 4, f"exit code {code}"
assert before == after, f"termios not restored: {before} != {after}"


def terminated(master, pid):
    read_until(master, b"READY")
    os.kill(pid, 15)  # SIGTERM to uexec: it ends the command and restores the terminal


code, before, after = run(["run", "--tty", "--", "/bin/sh", "-c", "echo READY; sleep 30"], terminated)
assert code == 128 + 1 or code == 128 + 15, f"exit code {code}"
assert before == after, "termios not restored after SIGTERM"

# `uexec sandbox --approval on-failure`: a denied write is offered one retry without the sandbox
# on the terminal; "n" keeps the denial, "y" runs it unsandboxed. Needs the namespace backend.
check = os.popen(f"{uexec} sandbox --check").read()
if "user namespaces: yes" in check:
    import tempfile
    target = os.path.join(tempfile.mkdtemp(dir="/var/tmp"), "outside")
    os.chdir(tempfile.mkdtemp(dir="/var/tmp"))

    def answer(reply):
        def script(master, pid):
            prompt = read_until(master, b"abort: ")
            assert b"retry without sandbox?" in prompt and b"read-only file system" in prompt, prompt
            os.write(master, reply)
            read_until(master, b"\n", 5)
        return script

    code, _, _ = run(["sandbox", "--approval", "on-failure", "--", "touch", target], answer(b"n\n"))
    assert code == 1 and not os.path.exists(target), f"denied retry: exit {code}"
    code, _, _ = run(["sandbox", "--approval", "on-failure", "--", "touch", target], answer(b"y\n"))
    assert code == 0 and os.path.exists(target), f"approved retry: exit {code}"
else:
    print("cli_tty_test: SKIP the --approval prompt: the namespace sandbox is unavailable here")
print("cli_tty_test: ok")
