"""Deny-read holes (issue 19 rows 4, 5, 6, 9, 10): attacks on `--deny-read` through the shapes
a workspace can have at launch (deep trees, hard links, symlinked directories) and through
what appears after it (many new directories, a late file held open).

    python3 tests/sandbox/holes_deny.py build/src/uexec [build/tests/sandbox/sandbox-probe]

Every case runs on each backend: `landlock` must refuse deny-read outright (it cannot
express it), the mount backends must keep the secret unreadable or refuse to run.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import Suite, Fail, Skip, expect, describe  # noqa: E402

uexec = sys.argv[1] if len(sys.argv) > 1 else "build/src/uexec"
probe = sys.argv[2] if len(sys.argv) > 2 else None
suite = Suite("deny-read", uexec, probe)

SECRET = "UEXEC-SECRET-7f3a"
# A python every identity can run (the test's own may live in root's home).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def refused_by_landlock(ctx, r):
    """On the Landlock-only backend deny-read is refused before anything runs."""
    expect(r.returncode == 125, f"landlock should refuse deny-read: {describe(r)}")
    expect("deny" in r.stderr and SECRET not in r.stdout, f"landlock refusal should say why: {describe(r)}")


def read_denied(ctx, flags, rel, also_ok_refusal=None):
    """`cat rel` in the sandbox must not show the secret (or the policy is refused, when
    `also_ok_refusal` names the word the refusal must carry)."""
    r = ctx.sandbox(["sh", "-c", 'cat "$1"; echo "rc=$?"', "sh", rel], flags)
    if ctx.backend == "landlock":
        return refused_by_landlock(ctx, r)
    if also_ok_refusal and r.returncode == 125 and also_ok_refusal in r.stderr:
        return
    expect(SECRET not in r.stdout, f"{rel} is readable: {describe(r)}")
    expect("rc=1" in r.stdout, f"the sandbox should run and cat {rel} fail: {describe(r)}")


@suite.case("row 4: a deny glob reaches files deeper than 16 directories")
def _(ctx):
    deep = "/".join(f"d{i}" for i in range(24))
    ctx.write(f"{deep}/key.pem", SECRET + "\n")
    ctx.write("shallow/key.pem", SECRET + "\n")
    read_denied(ctx, ["--deny-read", "**/*.pem"], "shallow/key.pem")
    read_denied(ctx, ["--deny-read", "**/*.pem"], f"{deep}/key.pem")
    # The same through a glob that starts deep and keeps going.
    read_denied(ctx, ["--deny-read", "d0/d1/**/key.pem"], f"{deep}/key.pem")


@suite.case("row 9: a hard link made before start to a denied file is denied too")
def _(ctx):
    secret = ctx.write("keys/id.pem", SECRET + "\n")
    os.link(secret, ctx.path("notes.txt"))
    os.makedirs(ctx.path("sub/deeper"))
    os.link(secret, ctx.path("sub/deeper/copy.txt"))
    ctx.ident.chown(ctx.base)
    read_denied(ctx, ["--deny-read", "**/*.pem"], "notes.txt")
    read_denied(ctx, ["--deny-read", "**/*.pem"], "sub/deeper/copy.txt")
    read_denied(ctx, ["--deny-read", "keys/id.pem"], "notes.txt")


@suite.case("row 9: a hard link outside every tree uexec walks refuses the policy")
def _(ctx):
    secret = ctx.write("keys/id.pem", SECRET + "\n")
    os.link(secret, os.path.join(ctx.outside, "elsewhere.txt"))
    ctx.ident.chown(ctx.base)
    r = ctx.sandbox(["cat", os.path.join(ctx.outside, "elsewhere.txt")], ["--deny-read", "**/*.pem"])
    if ctx.backend == "landlock":
        return refused_by_landlock(ctx, r)
    expect(SECRET not in r.stdout, f"the outside hard link is readable: {describe(r)}")
    expect(r.returncode == 125 and "hard link" in r.stderr, f"expected a refusal naming the hard link: {describe(r)}")


def mcp_call(ctx, flags, cmd):
    """One exec_command through `uexec mcp FLAGS` (stdio JSON-RPC) as this identity."""
    argv = [ctx.suite.uexec, "mcp", "--sandbox", "workspace-write", "--backend", ctx.backend, *flags]
    p = subprocess.Popen(ctx.ident.wrap(argv), cwd=ctx.ws, env=ctx.ident.env(), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "holes", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "exec_command", "arguments": {"cmd": cmd, "login": False, "yield_time_ms": 10000}}},
    ]
    for m in msgs:
        p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()
    reply = None
    for line in p.stdout:
        m = json.loads(line)
        if m.get("id") == 2:
            reply = m
            break
    p.stdin.close()
    p.wait(timeout=60)
    stderr = p.stderr.read()
    return reply, stderr


@suite.case("row 9: the same hard link through `uexec mcp --deny-read`")
def _(ctx):
    secret = ctx.write("keys/id.pem", SECRET + "\n")
    os.link(secret, ctx.path("notes.txt"))
    ctx.ident.chown(ctx.base)
    reply, stderr = mcp_call(ctx, ["--deny-read", "**/*.pem"], "cat notes.txt; echo rc=$?")
    text = json.dumps(reply)
    expect(reply is not None, f"no reply from uexec mcp; stderr {stderr[:300]!r}")
    expect(SECRET not in text, f"the hard link is readable through mcp: {text[:400]}")
    if ctx.backend == "landlock":
        expect("deny" in text, f"landlock should refuse deny-read through mcp: {text[:400]}")
    else:
        expect("rc=1" in text, f"cat should have failed: {text[:400]}")


@suite.case("row 10: a deny glob follows a symlinked directory and masks the real file")
def _(ctx):
    ctx.write(os.path.join(ctx.outside, "secret.pem"), SECRET + "\n")
    ctx.symlink(ctx.outside, "linkout")
    ctx.symlink(".", "loop")             # a cycle: the scan must end
    ctx.symlink("../ws", "sub/back")     # another one, through the parent
    read_denied(ctx, ["--deny-read", "**/*.pem"], "linkout/secret.pem")
    read_denied(ctx, ["--deny-read", "**/*.pem"], os.path.join(ctx.outside, "secret.pem"))
    read_denied(ctx, ["--deny-read", "linkout/*.pem"], "linkout/secret.pem")


@suite.case("row 10: a symlink whose name matches masks its target")
def _(ctx):
    ctx.write(os.path.join(ctx.outside, "plain.txt"), SECRET + "\n")
    ctx.symlink(os.path.join(ctx.outside, "plain.txt"), "alias.pem")
    read_denied(ctx, ["--deny-read", "**/*.pem"], "alias.pem")


def sandboxed_pids(popen):
    """Descendants of `popen` that live in another mount namespace than ours."""
    mine = os.readlink("/proc/self/ns/mnt")
    out, todo = [], [popen.pid]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        todo.extend(kids)
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") != mine:
                out.append(pid)
        except OSError:
            pass
    return out


def masked_inside(popen, path):
    for pid in sandboxed_pids(popen):
        try:
            with open(f"/proc/{pid}/mountinfo") as f:
                if any(line.split()[4] == path for line in f):
                    return True
        except OSError:
            pass
    return False


def sandbox_init(pid):
    """Is `pid` the sandbox's pid 1 (uexec-init, which stops the others, never itself)?"""
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.startswith("NSpid:") and line.split()[-1] == "1" for line in f)
    except OSError:
        return False


def stopped(pid):
    """Is `pid` stopped (state T), or gone?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t", "Z", "X")
    except OSError:
        return True


def wait_for(cond, popen, bound=120):
    """Polls `cond` until it holds or `popen` ends; the bound only ends a failing case."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if cond():
            return True
        if popen.poll() is not None:
            return False
        time.sleep(0.05)
    return False


@suite.case("row 5: past the watcher's directory cap a late secret is not left readable",
            backends=("namespaces", "landlock"))  # bwrap masks at launch only (README)
def _(ctx):
    if os.geteuid() != 0:
        raise Skip("needs root to look into the sandbox's mounts")
    ctx.mkdir("big")
    script = ("cd big && seq 1 8400 | xargs mkdir && cd .. && touch ready && "
              "while [ ! -e go ]; do sleep 0.05; done; cat big/8400/late.pem; echo END")
    p = ctx.popen_sandbox(["sh", "-c", script], ["--deny-read", "**/*.pem"])
    try:
        ready = wait_for(lambda: os.path.exists(ctx.path("ready")), p)
        if ready:
            late = ctx.write("big/8400/late.pem", SECRET + "\n")
            # The watcher has seen the file once it is masked, or has ended the session.
            wait_for(lambda: masked_inside(p, late), p, bound=60)
            ctx.write("go")
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    if ctx.backend == "landlock":
        expect(p.returncode == 125 and "deny" in err, f"landlock should refuse deny-read: {err[:300]!r}")
        return
    expect(SECRET not in out, f"the late secret past 8192 directories is readable: exit {p.returncode}; "
                              f"stdout {out[-200:]!r}; stderr {err[-300:]!r}")
    expect(p.returncode != 0 and "deny-read" in err,
           f"an uncovered session should end, saying why: exit {p.returncode}; stderr {err[-300:]!r}")


@suite.case("row 6: a late deny file the host writes is masked, for an unprivileged manager too",
            backends=("namespaces",))
def _(ctx):
    if os.geteuid() != 0:
        raise Skip("needs root to look into the sandbox's mounts")
    script = "touch ready; while [ ! -e go ]; do sleep 0.05; done; cat late.pem; echo rc=$?"
    p = ctx.popen_sandbox(["sh", "-c", script], ["--deny-read", "*.pem"])
    try:
        expect(wait_for(lambda: os.path.exists(ctx.path("ready")), p), "the sandbox did not start")
        late = ctx.write("late.pem", SECRET + "\n")
        wait_for(lambda: masked_inside(p, late), p, bound=60)
        ctx.write("go")
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    expect(SECRET not in out and "rc=1" in out, f"the late file is readable: exit {p.returncode}; "
                                                f"stdout {out[-200:]!r}; stderr {err[-300:]!r}")


@suite.case("row 6: a late deny file held open when its mask lands ends the session", backends=("namespaces",))
def _(ctx):
    if os.geteuid() != 0:
        raise Skip("needs root to pause the manager and look into the sandbox's mounts")
    spin = ("import os,sys,time\n"
            "open('ready','w').close()\n"
            "while True:\n"
            "    try:\n"
            "        fd = os.open('late.pem', os.O_RDONLY); break\n"
            "    except FileNotFoundError:\n"
            "        pass\n"
            "open('got','w').close()\n"
            "while not os.path.exists('go'):\n"
            "    time.sleep(0.05)\n"
            "print('read:', os.read(fd, 100).decode().strip(), flush=True)\n")
    p = ctx.popen_sandbox([PYTHON, "-c", spin], ["--deny-read", "*.pem"])
    try:
        expect(wait_for(lambda: os.path.exists(ctx.path("ready")), p), f"the spinner did not start")
        # The manager paused: the name is visible inside and no mask can land yet, so the
        # spinner gets its fd (the window every late file has, made wide).
        os.kill(p.pid, signal.SIGSTOP)
        try:
            late = ctx.write("late.pem", "")
            got = wait_for(lambda: os.path.exists(ctx.path("got")), p, bound=60)
        finally:
            os.kill(p.pid, signal.SIGCONT)
        expect(got, "the spinner never opened the late file")
        wait_for(lambda: masked_inside(p, late), p, bound=60)
        # Init stops the sandbox once its look after the mask finds the holder (the look takes
        # as long as the sandbox's processes and fds make it: that window is best effort).
        # What the host writes after that is out of the holder's reach.
        wait_for(lambda: all(stopped(pid) for pid in sandboxed_pids(p) if not sandbox_init(pid)), p, bound=60)
        with open(late, "w") as f:
            f.write(SECRET + "\n")
        ctx.write("go")
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    expect(SECRET not in out, f"the fd taken before the mask read the secret: exit {p.returncode}; "
                              f"stdout {out[-200:]!r}; stderr {err[-300:]!r}")
    expect(p.returncode != 0 and "deny-read" in err,
           f"the session should end, saying why: exit {p.returncode}; stderr {err[-300:]!r}")


@suite.case("row 6: `uexec sandbox --check` says what late deny-read masking guarantees", backends=("namespaces",))
def _(ctx):
    r = ctx.run([ctx.suite.uexec, "sandbox", "--check"])
    expect(r.returncode == 0, describe(r))
    expect("deny-read" in r.stdout and "best effort" in r.stdout and "launch" in r.stdout,
           f"--check should state the deny-read guarantees: {r.stdout!r}")


sys.exit(suite.run())
