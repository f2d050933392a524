#!/usr/bin/env python3
"""Upgrade in place (src/cli/daemon_upgrade.h): `uexec serve --upgrade` replaces the running
daemon with the binary now on disk, and no session notices.

The test serves from a copy of uexec, starts UEXEC_UPGRADE_SESSIONS (default 200) live sessions:
  - streams on pipes, each printing numbered lines in bursts (its expected bytes and their
    sha256 are known), waiting half-way until the upgrade begins, then exiting with its own
    code; started over the protocol by a session kept forever;
  - an interactive bash with vim open in it, a line under vim's cursor;
  - an interactive bash on a terminal that records any SIGHUP or SIGTERM;
  - `cat` on pipes with input written just before the upgrade;
  - a server listening on a TCP port (python3 -m http.server);
  - namespaces and Landlock sandboxes waiting for a line;
  - two agent sessions from `uexec mcp --connect`, waiting for a line;
  - a process that finished before the upgrade (exit 17);
reads part of every stream, replaces the binary on disk as a package upgrade does (a new file
renamed over the old), runs `uexec serve --upgrade` in the middle of the streams, and checks:
  - the new daemon runs the new file, under the same holder; every session is listed with the
    same pid;
  - every stream, read by seq across the upgrade, arrives exactly once: no omission, no seq
    twice, and its sha256 is the expected one; each exits with its own code;
  - vim's screen after the upgrade is the one before, exact (carried, not rebuilt), and a
    `uexec attach` held on it in a real terminal (tmux) reattaches by itself: its pane shows
    the same screen and keys reach vim again;
  - the cat gets the input written before and after, and what it printed before is still read;
  - the finished process is still listed, with its output and exit code;
  - input reaches the terminal, the sandboxes and the agents, with their true exit codes;
  - the port answers; no process received SIGHUP, SIGTERM or SIGPIPE;
  - the daemon's own WebSocket listener, probed with `GET /readyz` every few ms throughout,
    refuses no connection and is the same socket afterwards (handed over, not bound again);
then `uexec stop` leaves nothing running.

With --crash, the same set-up meets a crash instead: kill -9 of the daemon mid-stream, its
holder starting the new binary by itself. The checks are the same but for what a crash loses
by design, which must then be explicit: a stream may miss bytes, but only where the daemon
reported an omission (the others still match their sha256), and never a line twice or out of
order; vim's window comes back by its redraw (SIGWINCH), not exact; a pipe's stdin and a
finished process are not kept (cat reads EOF); the WebSocket listener dies with the daemon and
the new one binds the port again (it must answer afterwards).

    python3 tests/e2e/upgrade_test.py build/src/uexec [--crash]
"""
import base64
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
import e2e_util  # noqa: E402
from e2e_util import Checks, McpClient, daemon_pid  # noqa: E402

check = Checks()
CRASH = "--crash" in sys.argv[2:]
EVENT = "crash" if CRASH else "upgrade"
tmp = tempfile.mkdtemp(prefix="uexec-upgrade-")
os.chmod(tmp, 0o755)
bindir = os.path.join(tmp, "bin")
os.makedirs(bindir)
uexec = os.path.join(bindir, "uexec")
shutil.copy2(os.path.abspath(sys.argv[1]), uexec)
rundir = os.path.join(tmp, "run")
os.makedirs(rundir, mode=0o700)
sock = os.path.join(rundir, "uexec.sock")
marks = os.path.join(tmp, "signals")
env = {**os.environ, "UEXEC_SOCKET": sock, "UEXEC_AUTOSTART": "0"}
env.pop("UEXEC_HOLDER", None)
log = open(os.path.join(tmp, "serve.log"), "ab")
with socket.socket() as probe_sock:  # a free port for the WebSocket listener
    probe_sock.bind(("127.0.0.1", 0))
    WS_PORT = probe_sock.getsockname()[1]
serve = subprocess.Popen([uexec, "serve", "--socket", sock, "--ws", f"127.0.0.1:{WS_PORT}", "--no-web"],
                         env=env, stderr=log)
holder = serve.pid
TOTAL = int(os.environ.get("UEXEC_UPGRADE_SESSIONS", "200"))
OTHERS = 10  # vim, bash, cat, the server, two sandboxes, two agents, one finished, one spare
STREAMS = max(TOTAL - OTHERS, 1)
LINES = 1000


cli = e2e_util.Cli(uexec, env)
run, ls, wait_for = cli.run, cli.ls, e2e_util.wait_for


def Proto(params):
    return e2e_util.Proto(sock, params)


def stream_bytes(k):
    return "".join(f"stream {k} line {i} abcdefghijklmnopqrstuvwxyz\n" for i in range(LINES)).encode()


check("the daemon listens", wait_for(lambda: os.path.exists(sock), 10))
first = daemon_pid(holder)
check("serve runs as a holder with the daemon as its child", first is not None and first != holder, str(first))

p = Proto({"clientName": "upgrade-test", "detachedTtlMs": -1})
sid = p.init["result"]["sessionId"]
# Bursts of 50 lines with pauses. Past the middle a stream waits for the `go` file, which the
# test makes just before the upgrade: however slow the set-up, every stream is mid-way then.
go = os.path.join(tmp, "go")
for k in range(STREAMS):
    cmd = (f'trap "echo PIPE-{k} >> {marks}" PIPE; i=0; while [ $i -lt {LINES} ]; do '
           f'echo "stream {k} line $i abcdefghijklmnopqrstuvwxyz"; i=$((i+1)); '
           f'[ $i = {LINES // 2} ] && while [ ! -e {go} ]; do sleep 1; done; '
           f'[ $((i % 50)) = 0 ] && sleep 0.2; done; exit {k % 100}')
    r = p.call("process/start", {"processId": f"s{k}", "argv": ["sh", "-c", cmd], "subscribe": False})
    if "result" not in r:
        check(f"stream {k} starts", False, json.dumps(r)[:300])
        break
started_streams = time.time()

vim = shutil.which("vim.tiny") or shutil.which("vim")
vim_file = os.path.join(tmp, "vim.txt")
with open(vim_file, "w") as f:
    f.write("".join(f"vim line {i} of the file\n" for i in range(1, 60)))
if vim:
    # An interactive bash with vim open in it (the process "vim" is the bash).
    r = p.call("process/start", {"processId": "vim", "tty": True, "rows": 24, "cols": 80, "subscribe": False,
                                 "argv": ["bash", "--norc", "-i"]})
    check("an interactive bash starts", "result" in r, json.dumps(r)[:300])
    cmd = f"trap 'echo HUP-vim-bash >> {marks}' HUP; {vim} -u NONE -N -n +12 {vim_file}\r"
    p.call("process/write", {"processId": "vim", "chunk": base64.b64encode(cmd.encode()).decode()})
else:
    print("note: no vim here; its screen is not checked")
tty_id = run("start", "--tty", "--", "bash", "--norc", "-i").stdout.decode().strip()
cat_id = run("start", "--", "sh", "-c", f'trap "echo HUP-cat >> {marks}" HUP; exec cat').stdout.decode().strip()
port = None
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
web_id = run("start", "--", "python3", "-m", "http.server", "--bind", "127.0.0.1", str(port),
             "--directory", tmp).stdout.decode().strip()
sandboxed = e2e_util.start_sandboxed(p, marks, check)
mcp = McpClient([uexec, "mcp", "--connect", sock], env=env)
agents = []
for n in range(2):
    res, text = mcp.tool("exec_command", {"cmd": f"read x; echo agent{n}-got:$x; exit {20 + n}",
                                          "yield_time_ms": 300, "tty": True})
    m = re.search(r"session ID (\d+)", text)
    check(f"agent session {n} waits for input", m is not None, text[:300])
    if m:
        agents.append((n, int(m.group(1))))

done_id = run("start", "--", "sh", "-c", "echo finished-before; exit 17").stdout.decode().strip()
# A bash prompt, a line for vim's cursor, and cat's first input.
run("send", tty_id, "echo before-$((6*7))")
run("send", cat_id, "cat-before")
if vim:
    check("vim opens in the bash", bool(wait_for(lambda: any("vim line 20" in x for x in p.call(
        "process/snapshot", {"processId": "vim"}).get("result", {}).get("lines", [])), 15)))
    p.call("process/write", {"processId": "vim", "chunk": base64.b64encode(b"ggjjjjAinserted before the upgrade\x1b").decode()})

after = {f"s{k}": 0 for k in range(STREAMS)}
got = {f"s{k}": bytearray() for k in range(STREAMS)}
seqs = {f"s{k}": [] for k in range(STREAMS)}
omitted = {}
ended = {}


def read_streams(proto, wait_ms=0):
    """One process/read of each stream not yet closed, from its last seq."""
    for pid in after:
        if pid in ended:
            continue
        r = proto.call("process/read", {"processId": pid, "afterSeq": after[pid], "waitMs": wait_ms})
        res = r.get("result")
        if res is None:
            raise RuntimeError(json.dumps(r)[:300])
        if res.get("omitted"):
            omitted.setdefault(pid, []).append(res["omitted"])
        for c in res["chunks"]:
            got[pid] += base64.b64decode(c["chunk"])
            seqs[pid].append(c["seq"])
            after[pid] = c["seq"]
        if res.get("closed"):
            ended[pid] = res.get("exitCode")


time.sleep(1.0)
read_streams(p)
vim_before = None
if vim:
    snap = wait_for(lambda: (s := p.call("process/snapshot", {"processId": "vim"}).get("result", {})) and
                    any("inserted before the upgrade" in x for x in s.get("lines", [])) and s, 10)
    vim_before = snap and snap["lines"]
    check("vim shows its file and the edit", bool(vim_before), snap)
check(f"a process finishes before the {EVENT}", wait_for(lambda: ls().get(done_id, {}).get("exit") == "17", 15))
# A person's `uexec attach` on vim, in a real terminal (tmux), held across the upgrade.
tmux = shutil.which("tmux") if vim else None
tmux_args = ["tmux", "-L", f"uexec-upgrade-{os.getpid()}", "-f", "/dev/null"]
if tmux:
    vim_id = f"{sid[:8]}/vim"
    subprocess.run(tmux_args + ["new-session", "-d", "-x", "80", "-y", "24",
                                f"env UEXEC_SOCKET={sock} UEXEC_AUTOSTART=0 {uexec} attach {vim_id}; sleep 30"],
                   check=True)


def pane():
    return subprocess.run(tmux_args + ["capture-pane", "-p"], capture_output=True, text=True).stdout


if tmux:
    check("attach shows vim in the terminal", bool(wait_for(lambda: "inserted before the upgrade" in pane(), 10)),
          pane())
rows_before = ls()
finished_early = [k for k, v in rows_before.items() if v["state"] != "running" and k != done_id]
check(f"no stream finished before the {EVENT} (the machine is slow otherwise)", not finished_early, finished_early[:5])
check(f"{TOTAL} sessions run", len(rows_before) >= TOTAL - 1, len(rows_before))
# Input queued while the daemon hands over must not be lost either.
run("send", cat_id, "cat-queued")
p.close()

# ---- the package upgrade: a new file renamed over the old one, then --upgrade ----------------
old_ino = os.stat(uexec).st_ino
shutil.copy2(os.path.abspath(sys.argv[1]), uexec + ".new")
os.rename(uexec + ".new", uexec)
new_ino = os.stat(uexec).st_ino
in_stream = time.time() - started_streams
open(go, "w").close()
time.sleep(1.2)  # every stream sees it (it looks once a second) and streams again


def listener_inode(port):
    """The inode of the socket listening on 127.0.0.1:port (/proc/net/tcp), or None."""
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        if f[1] == f"0100007F:{port:04X}" and f[3] == "0A":
            return int(f[9])
    return None


# The WebSocket listener, probed all through the event: `GET /readyz` every few ms on a new
# connection. An upgrade passes the listening socket on, so no attempt may be refused.
ws_inode_before = listener_inode(WS_PORT)
probes = {"ok": 0, "refused": 0, "other": [], "stop": False}


def probe_ws():
    while not probes["stop"]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{WS_PORT}/readyz", timeout=30) as r:
                if r.status == 200:
                    probes["ok"] += 1
                else:
                    probes["other"].append(r.status)
        except urllib.error.URLError as e:
            if isinstance(e.reason, ConnectionRefusedError):
                probes["refused"] += 1
            else:
                probes["other"].append(str(e.reason))
        except Exception as e:  # a reset: a connection the old daemon had accepted as it left
            probes["other"].append(repr(e))
        time.sleep(0.005)


prober = threading.Thread(target=probe_ws, daemon=True)
prober.start()
time.sleep(0.1)
t0 = time.time()
if CRASH:
    os.kill(first, signal.SIGKILL)
    ok = wait_for(lambda: (d := daemon_pid(holder, 0.1)) not in (None, first) and run("ls").returncode == 0, 30)
    check("kill -9 of the daemon: its holder starts the binary on disk, which answers", bool(ok))
    print(f"note: the daemon killed {in_stream:.1f} s into the streams; a new one answered in {time.time() - t0:.2f} s")
else:
    up = run("serve", "--upgrade", timeout=60)
    took = time.time() - t0
    check("uexec serve --upgrade succeeds", up.returncode == 0, up.stderr.decode())
    print(f"note: {up.stderr.decode().strip()} (the streams {in_stream:.1f} s in; the command took {took:.2f} s)")
time.sleep(0.3)
probes["stop"] = True
prober.join(35)
ws_inode_after = listener_inode(WS_PORT)
if CRASH:
    check("the WebSocket port answers again after the crash", probes["ok"] > 0 and ws_inode_after is not None,
          f"{probes['ok']} answered")
else:
    check("the WebSocket listener is the same socket after the upgrade (handed over)",
          ws_inode_before is not None and ws_inode_after == ws_inode_before, f"{ws_inode_before} -> {ws_inode_after}")
    check("no connection to the WebSocket port was refused during the upgrade, and each was answered",
          probes["refused"] == 0 and probes["ok"] > 0 and len(probes["other"]) <= 1,
          f"{probes['ok']} answered, {probes['refused']} refused, other: {probes['other'][:3]}")
second = daemon_pid(holder)
check("a new daemon runs under the same holder", second is not None and second != first, f"{first} -> {second}")
try:
    exe_ino = os.stat(f"/proc/{second}/exe").st_ino
except OSError:
    exe_ino = None
check("the new daemon runs the new binary", exe_ino == new_ino and new_ino != old_ino,
      f"{exe_ino} vs new {new_ino} old {old_ino}")
check("the old daemon is gone", wait_for(lambda: not os.path.exists(f"/proc/{first}"), 10), first)
rows = ls()
kept = {k: v for k, v in rows_before.items() if not (CRASH and k == done_id)}  # a crash keeps no finished one
check("every session is still listed with its pid",
      all(rows.get(k, {}).get("pid") == v["pid"] for k, v in kept.items()),
      [k for k, v in kept.items() if rows.get(k, {}).get("pid") != v["pid"]][:5])

p = Proto({"clientName": "upgrade-test", "resumeSessionId": sid})
check("the protocol session resumes", p.init.get("result", {}).get("resumed") is True, json.dumps(p.init)[:300])
if vim and CRASH:
    # The model died with the daemon; vim, sent SIGWINCH at the takeover, redraws its window.
    ok = wait_for(lambda: (n := p.call("process/snapshot", {"processId": "vim"}).get("result", {}).get("lines"))
                  and n[:-1] == vim_before[:-1], 10)
    check("vim's window is what it was (it redrew on SIGWINCH)", bool(ok))
elif vim:
    snap = p.call("process/snapshot", {"processId": "vim"}).get("result", {})
    check("vim's screen is what it was, at once and exact", snap.get("lines") == vim_before and snap.get("exact"),
          f"{vim_before} -> {snap.get('lines')}")
    if tmux:
        # The attach lost its daemon and attached again: the pane shows vim, and keys reach it.
        check("the held attach shows vim's screen again", bool(wait_for(
            lambda: "inserted before the upgrade" in pane() and "[process exited" not in pane(), 10)), pane())
        subprocess.run(tmux_args + ["send-keys", "-t", "0", "G", "o", "typed through the attach", "Escape"], check=True)
        check(f"keys typed in the attach reach vim after the {EVENT}", bool(wait_for(
            lambda: any("typed through the attach" in x for x in
                        p.call("process/snapshot", {"processId": "vim"}).get("result", {}).get("lines", [])), 10)),
              pane())
    p.call("process/write", {"processId": "vim", "chunk": base64.b64encode(b"Gx:wq\r").decode()})
    # vim has left and the bash prompts again (vim discards typeahead as it resets the terminal).
    def prompting():
        snap = p.call("process/snapshot", {"processId": "vim"}).get("result", {})
        shown = [x for x in snap.get("lines", []) if x.strip()]
        return snap.get("altScreen") is False and shown and shown[-1].rstrip()[-1:] in ("#", "$")
    wait_for(prompting, 15)
    p.call("process/write", {"processId": "vim", "chunk": base64.b64encode(b"exit 5\r").decode()})
    if tmux:
        check("the attach reports the end of the bash vim ran in (exit 5)",
              bool(wait_for(lambda: "[process exited with code 5]" in pane(), 10)), pane())
        subprocess.run(tmux_args + ["kill-server"], capture_output=True)
deadline = time.time() + 90
while len(ended) < STREAMS and time.time() < deadline:
    read_streams(p, wait_ms=100)
check("every stream ended", len(ended) == STREAMS, f"{len(ended)} of {STREAMS}")
bad_sum = [pid for pid in got if hashlib.sha256(bytes(got[pid])).hexdigest() !=
           hashlib.sha256(stream_bytes(int(pid[1:]))).hexdigest()]
check("no seq is read twice", all(s == sorted(set(s)) for s in seqs.values()))
if CRASH:
    # Lost bytes only where an omission was reported; what arrived is in order, each line once.
    silent = [pid for pid in bad_sum if pid not in omitted]
    check("a stream that misses bytes had them reported as omitted (never a silent loss)", not silent,
          f"{silent[:5]} of {len(bad_sum)} incomplete")

    def lines_ok(pid):
        nums = [int(x.split()[3]) for x in bytes(got[pid]).decode(errors="replace").split("\n")
                if x.startswith(f"stream {pid[1:]} line ") and x.endswith("xyz") and len(x.split()) == 5]
        return nums == sorted(set(nums))
    disorder = [pid for pid in got if not lines_ok(pid)]
    check("every stream's lines arrive in order, none twice", not disorder, disorder[:5])
    print(f"note: {len(bad_sum)} of {len(got)} streams lost bytes in the crash, each with an omission reported; "
          f"the other {len(got) - len(bad_sum)} match their sha256")
else:
    check("every stream's bytes arrive exactly once (sha256)", not bad_sum,
          f"{len(bad_sum)} differ, e.g. {bad_sum[:3]}: {len(got[bad_sum[0]]) if bad_sum else 0} bytes of "
          f"{len(stream_bytes(0))}")
    check("nothing is reported omitted", not omitted, str(omitted)[:300])
bad_exit = {pid: c for pid, c in ended.items() if c != int(pid[1:]) % 100}
check("every stream exits with its own code", not bad_exit, str(bad_exit)[:300])

if CRASH:
    # A pipe's stdin dies with the daemon: cat reads EOF and ends with 0, reported as such.
    check("cat, its stdin gone with the daemon, ends with its true exit code (0)",
          wait_for(lambda: ls().get(cat_id, {}).get("exit") == "0", 15), ls().get(cat_id))
else:
    check("the process that finished before is still listed with its exit code (17) and output",
          ls().get(done_id, {}).get("exit") == "17" and b"finished-before" in run("logs", done_id).stdout,
          f"{ls().get(done_id)} {run('logs', done_id).stdout[:100]!r}")
    # cat: what it printed before is still there, the input sent just before arrived, and more now.
    run("send", cat_id, "cat-after")
    out = wait_for(lambda: (o := run("logs", cat_id).stdout) and b"cat-after" in o and o, 10) or run("logs", cat_id).stdout
    check("cat's output before, the input queued at the upgrade, and after: each once",
          out.count(b"cat-before") == 1 and out.count(b"cat-queued") == 1 and out.count(b"cat-after") == 1, out)
run("send", tty_id, "exit 7")
check("the terminal bash gets input and reports exit 7",
      wait_for(lambda: ls().get(tty_id, {}).get("exit") == "7", 15), ls().get(tty_id))
logs = run("logs", tty_id)
if CRASH:  # what the dead daemon had read is gone, and said to be
    check("... and its output before the crash is reported lost, not silently dropped",
          b"not retained" in logs.stderr or b"before-42" in logs.stdout, logs.stderr[-200:])
else:
    check("... and its output before the upgrade is still read", b"before-42" in logs.stdout)
for backend, code in sandboxed.items():
    r = p.call("process/write", {"processId": f"sb-{backend}", "chunk": base64.b64encode(b"go\n").decode()})
    check(f"sandboxed ({backend}): input after the {EVENT}", "result" in r, json.dumps(r)[:200])
    wait_for(lambda: ls().get(f"{sid[:8]}/sb-{backend}", {}).get("state") != "running", 15)
    res = p.call("process/read", {"processId": f"sb-{backend}", "afterSeq": 0}).get("result", {})
    out = b"".join(base64.b64decode(c["chunk"]) for c in res.get("chunks", []))
    check(f"sandboxed ({backend}): its true exit code {code} and its output",
          res.get("exitCode") == code and b"sb-got:go" in out, f"{res.get('exitCode')} {out[-200:]!r}")
for n, agent_sid in agents:
    # The relay reconnects on its own, backing off while no daemon answered; until it has, a
    # call fails cleanly (nothing is written) and is made again.
    deadline = time.time() + 30
    while True:
        res, text = mcp.tool("write_stdin", {"session_id": agent_sid, "chars": "yo\n", "yield_time_ms": 3000})
        if "not connected to the daemon" not in text or time.time() > deadline:
            break
        time.sleep(0.5)
    check(f"agent session {n} (mcp --connect) gets input after the {EVENT}, and its exit code",
          f"agent{n}-got:yo" in text and str(20 + n) in text, text[:400])
mcp.close()
with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
    check(f"the port answers after the {EVENT}", resp.status == 200)
signals = open(marks).read() if os.path.exists(marks) else ""
check("no process got SIGHUP, SIGTERM or SIGPIPE", signals == "", signals[:300])

r = run("stop")
check("uexec stop ends it", r.returncode == 0, r.stderr.decode())
try:
    serve.wait(timeout=20)
except subprocess.TimeoutExpired:
    serve.kill()
left = [v["pid"] for v in rows_before.values() if os.path.exists(f"/proc/{v['pid']}")]
check("no session process is left", not left, left[:5])
p.close()
print(open(os.path.join(tmp, "serve.log")).read()[-2500:] if check.failed else "", end="")
sys.exit(check.exit_code())
