#!/usr/bin/env python3
"""Sessions end with the front door that owns them, also when it is killed (SIGKILL).

`uexec mcp` alone and `uexec exec-server` own their sessions: when they exit, their sessions
end. A tty session would get SIGHUP from the kernel anyway; a pipe session's process group (and
a Landlock or bwrap sandbox's) would run on, orphaned. The lifeline watcher
(src/session/owner_lifeline.h) ends them:

  - `uexec mcp`: a pipe session with a background child in its group, a tty session, a
    session that traps SIGTERM (it gets SIGTERM first, then the rest), a Landlock-sandboxed
    pipe session; SIGKILL of mcp: every one of them is gone within seconds;
  - `uexec exec-server --listen stdio`: a pipe process from process/start, the same;
  - the watcher is never the owner's child, and a clean exit (stdin EOF) disarms it: it goes
    without killing anything;
  - `uexec lifeline` by hand says it is not for direct use.

    python3 tests/e2e/owner_death_test.py build/src/uexec
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import random
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from e2e_util import Checks, McpClient, Peer  # noqa: E402

uexec = os.path.abspath(sys.argv[1])
check = Checks()
tmp = tempfile.mkdtemp(prefix="uexec-owner-death-")
os.chmod(tmp, 0o755)
mark = "UEXEC_OWNER_DEATH_" + uuid.uuid4().hex[:12]
env = {**os.environ, "UEXEC_AUTOSTART": "0", mark: "1", "UEXEC_CONFIG": os.path.join(tmp, "none.toml")}


def procs_with(marker):
    """Pids whose command line has `marker` (its words, as the kernel keeps them: NUL-separated)."""
    marker = marker.replace(" ", "\0")
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if (marker + "\0").encode() in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out


def watchers():
    """Our lifeline watchers: comm uexec-lifeline, with this test's mark in their environment."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() != "uexec-lifeline":
                    continue
            with open(f"/proc/{p}/environ", "rb") as f:
                if (mark + "=1").encode() in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out


def ppid_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def running(pid):
    """Alive and not a zombie (a zombie waits for whoever reaps the orphans here)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone_within(pids, seconds):
    return wait_for(lambda: not any(running(p) for p in pids), seconds)


def wait_for(pred, seconds=15):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


# Sleep lengths unique to this run (GNU sleep takes fractions), so that no other run's match.
tag = random.randint(10000, 99999)


def sleep_of(n):
    return f"sleep {n}.{tag}"


def new_watcher(before):
    """The one watcher that appeared since `before` (the grandchild names itself a moment later)."""
    got = wait_for(lambda: [p for p in watchers() if p not in before], 10)
    return got or []


def sc(res):
    return res.get("structuredContent", {})


# ---- uexec mcp, SIGKILLed ------------------------------------------------------------------------
trap_file = os.path.join(tmp, "got-term")
before = set(watchers())
mcp = McpClient([uexec, "mcp", "--structured-content"], env=env, cwd=tmp)
w = new_watcher(before)
check("mcp starts one watcher, not its own child", len(w) == 1 and ppid_of(w[0]) != mcp.p.pid, (w, [ppid_of(p) for p in w]))
sessions = {
    "pipe": f"{sleep_of(4101)} & exec {sleep_of(4102)}",
    "tty": f"exec {sleep_of(4103)}",
    # `wait` on a background job: the trap runs at once (a foreground job's "Terminated" line
    # would go to the dead owner's pipe first, and SIGPIPE end the shell before its trap).
    "trap": f"trap 'echo got-term > {trap_file}; exit 0' TERM; {sleep_of(4104)} & wait",
}
for name, cmd in sessions.items():
    res, text = mcp.tool("exec_command", {"cmd": cmd, "login": False, "yield_time_ms": 300, "tty": name == "tty"})
    check(f"mcp: the {name} session runs", isinstance(sc(res).get("session_id"), int), text[-300:])
res, text = mcp.tool("exec_command", {"cmd": "echo done-early", "login": False, "yield_time_ms": 5000})
check("mcp: a session that ends before its owner", sc(res).get("exit_code") == 0, text[-300:])
markers = [sleep_of(n) for n in (4101, 4102, 4103, 4104)]
check("every marker process runs", wait_for(lambda: all(procs_with(m) for m in markers)),
      {m: procs_with(m) for m in markers})
pids = [p for m in markers for p in procs_with(m)]
mcp.p.send_signal(signal.SIGKILL)
mcp.p.wait()
check("after SIGKILL of mcp, every session's processes are gone (pipe group, tty, trap)", gone_within(pids, 10),
      {m: procs_with(m) for m in markers})
check("the session that traps SIGTERM got SIGTERM first", wait_for(lambda: os.path.exists(trap_file), 10))
check("the watcher exits once it ended them", gone_within(w, 10), watchers())

# ---- uexec mcp with the Landlock-only sandbox, SIGKILLed ------------------------------------------
if subprocess.run([uexec, "sandbox", "--backend", "landlock", "--", "true"], env=env, capture_output=True).returncode == 0:
    mcp = McpClient([uexec, "mcp", "--structured-content", "--sandbox", "workspace-write", "--backend", "landlock"],
                    env=env, cwd=tmp)
    res, text = mcp.tool("exec_command", {"cmd": f"{sleep_of(4105)} & exec {sleep_of(4106)}", "login": False,
                                          "yield_time_ms": 300})
    wait_for(lambda: procs_with(sleep_of(4105)) and procs_with(sleep_of(4106)))
    pids = procs_with(sleep_of(4105)) + procs_with(sleep_of(4106))
    check("landlock: the sandboxed session runs", len(pids) == 2 and isinstance(sc(res).get("session_id"), int), text[-300:])
    mcp.p.send_signal(signal.SIGKILL)
    mcp.p.wait()
    check("landlock: after SIGKILL of mcp, the sandboxed session is gone", gone_within(pids, 10), pids)
else:
    print("skip landlock: not available here")

# ---- uexec exec-server, SIGKILLed ------------------------------------------------------------------
es = Peer([uexec, "exec-server", "--listen", "stdio"], env=env, cwd=tmp)
es.request("initialize", {"clientName": "owner-death"})
es.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
r = es.request("process/start", {"processId": "p", "argv": ["sh", "-c", f"{sleep_of(4107)} & exec {sleep_of(4108)}"]})
check("exec-server: process/start", "result" in r, r)
wait_for(lambda: procs_with(sleep_of(4107)) and procs_with(sleep_of(4108)))
pids = procs_with(sleep_of(4107)) + procs_with(sleep_of(4108))
check("exec-server: both processes run", len(pids) == 2, pids)
es.p.send_signal(signal.SIGKILL)
es.p.wait()
check("after SIGKILL of exec-server, its process group is gone", gone_within(pids, 10), pids)

# ---- a clean exit disarms the watcher ----------------------------------------------------------------
before = set(watchers())  # the ones above may still be in their grace
mcp = McpClient([uexec, "mcp", "--structured-content"], env=env, cwd=tmp)
w = new_watcher(before)
res, text = mcp.tool("exec_command", {"cmd": f"exec {sleep_of(4109)}", "login": False, "yield_time_ms": 300})
last = wait_for(lambda: procs_with(sleep_of(4109)))
mcp.close()  # stdin EOF: mcp ends its sessions itself and exits 0
check("mcp exits 0 at stdin EOF", mcp.p.returncode == 0, mcp.p.returncode)
check("...its session is gone", bool(last) and gone_within(last, 10), last)
check("...and so is its watcher", len(w) == 1 and gone_within(w, 10), (w, watchers()))

# ---- by hand -------------------------------------------------------------------------------------------
r = subprocess.run([uexec, "lifeline"], env=env, capture_output=True, text=True, timeout=10)
check("`uexec lifeline` by hand: exit 2, not for direct use", r.returncode == 2 and "not for direct use" in r.stderr,
      (r.returncode, r.stderr))

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(check.exit_code())
