#!/usr/bin/env python3
"""`uexec serve` and its CLI clients, end to end, as a person would use them.

Starts the daemon on a private socket, then: start / ls / send / logs / kill; attach on a
real terminal (made here with pty.fork) with replay, live output, typing, resize and the
detach key; two clients attached to one session both seeing its output; a raw protocol
client that disconnects mid-stream while its process keeps running; socket permissions;
and SIGTERM ending everything with no process left behind.
"""
import base64
import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import termios
import time

uexec = sys.argv[1]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {name} {detail}")


tmp = tempfile.mkdtemp(prefix="uexec-daemon-")
os.chmod(tmp, 0o700)
sock = os.path.join(tmp, "uexec.sock")
env = dict(os.environ, UEXEC_SOCKET=sock)
# The daemon's log goes to a file (a pipe nobody reads could fill and stall it); no WebSocket
# listener, so the test never clashes with a daemon already on 127.0.0.1:8022.
server_log = open(os.path.join(tmp, "serve.log"), "wb")
server = subprocess.Popen([uexec, "serve", "--socket", sock, "--no-ws"], stderr=server_log, env=env)
for _ in range(100):
    if os.path.exists(sock):
        break
    time.sleep(0.05)
check("socket exists", os.path.exists(sock))
check("socket is 0600", stat.S_IMODE(os.stat(sock).st_mode) == 0o600, oct(os.stat(sock).st_mode))

# One daemon per socket: a second `serve` on the same socket refuses and names the first; it
# used to delete the live daemon's socket on its way out, leaving that daemon unreachable.
def run_bounded(argv, e, seconds=20):
    """subprocess.run that kills the child on a timeout and reports it as exit code None."""
    try:
        return subprocess.run(argv, env=e, capture_output=True, timeout=seconds)
    except subprocess.TimeoutExpired as t:
        return subprocess.CompletedProcess(argv, None, t.stdout or b"", (t.stderr or b"") + b" (timed out)")


r = run_bounded([uexec, "serve", "--socket", sock, "--no-ws"], env)
second = r.stderr.decode(errors="replace")
check("a second serve on the same socket exits 1", r.returncode == 1, f"{r.returncode} {second}")
check("...naming the running daemon", f"already running (pid {server.pid})" in second and "--replace" in second, second)
check("...and leaves its socket alone", os.path.exists(sock))
r = subprocess.run([uexec, "ls"], env=env, capture_output=True, timeout=20)
check("the first daemon still answers", r.returncode == 0, r.stderr.decode(errors="replace"))

# A WebSocket port already taken: refused with exit 1, no "listening on ws://" announced.
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen(1)
busy_port = busy.getsockname()[1]
r = run_bounded([uexec, "serve", "--socket", os.path.join(tmp, "taken", "uexec.sock"), "--ws", f"127.0.0.1:{busy_port}"],
                env)
taken = r.stderr.decode(errors="replace")
check("serve with its port taken exits 1", r.returncode == 1 and f"127.0.0.1:{busy_port}: the port is in use" in taken,
      f"{r.returncode} {taken}")
check("...and announces no WebSocket listener", "listening on ws://" not in taken, taken)
busy.close()


def cli(*args, input=None, timeout=20):
    r = subprocess.run([uexec, *args], env=env, capture_output=True, timeout=timeout, input=input)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


# start / ls / send / logs / kill
code, out, err = cli("start", "--tty", "--", "bash", "--norc", "--noprofile", "-i")
pid_id = out.strip()
check("start prints an ID", code == 0 and "/" in pid_id, out + err)
code, out, _ = cli("ls")
check("ls lists it", pid_id in out and "running" in out, out)
# A command line is whatever its client chose: `ls` shows its control characters as escapes
# and never sends them to the terminal (here: clear the screen, set the title).
code, out, err = cli("start", "--", "sh", "-c", "sleep 60 # \x1b[2J\x1b]2;pwned\x07")
esc_id = out.strip()
code, out, _ = cli("ls")
check("ls shows a command's control characters as escapes",
      "\x1b" not in out and "\x07" not in out and "sleep 60 # \\e[2J\\e]2;pwned\\x07" in out, repr(out))
cli("kill", esc_id)
code, out, err = cli("send", pid_id, "echo sent-$((40+2))")
check("send", code == 0, err)
deadline = time.time() + 10
logs = ""
while time.time() < deadline and "sent-42" not in logs:
    _, logs, _ = cli("logs", pid_id)
    time.sleep(0.1)
check("logs show the output", "sent-42" in logs, logs[-300:])

# attach on a real terminal: replay, typing, resize, detach key
pid, master = pty.fork()
if pid == 0:
    os.execve(uexec, [uexec, "attach", pid_id], env)
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 99, 0, 0))


def read_until(fd, needle, timeout=10.0):
    buf = b""
    end = time.time() + timeout
    while needle not in buf and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


got = read_until(master, b"sent-42")
check("attach replays retained output", b"sent-42" in got, repr(got[-200:]))
check("attach repaints the screen model (process/snapshot ansi)", b"\x1b[H\x1b[2J" in got, repr(got[:200]))
os.write(master, b"stty size\r")
got = read_until(master, b"33 99")
check("attach forwards its size", b"33 99" in got, repr(got[-200:]))

# A second client attached to the same session sees the same output.
c2 = subprocess.Popen([uexec, "logs", pid_id, "--follow"], env=env, stdout=subprocess.PIPE)
time.sleep(0.3)
os.write(master, b"echo both-see-$((6*7))\r")
got = read_until(master, b"both-see-42")
check("attach: typing works", b"both-see-42" in got, repr(got[-200:]))
r = b""
end = time.time() + 10
os.set_blocking(c2.stdout.fileno(), False)
while b"both-see-42" not in r and time.time() < end:
    select.select([c2.stdout], [], [], 0.2)
    try:
        r += c2.stdout.read() or b""
    except Exception:
        pass
check("a second client sees the same output", b"both-see-42" in r, repr(r[-200:]))
os.write(master, b"\x1d")  # Ctrl-]
_, status = os.waitpid(pid, 0)
check("detach key leaves attach with 0", os.waitstatus_to_exitcode(status) == 0, str(status))
os.close(master)
code, out, _ = cli("ls")
check("the process survives the detach", pid_id in out and "running" in out, out)

# attach in a real terminal (tmux): after the detach key, the note and the next prompt come
# below the last output. The cleanup used to reset the scroll margins with the cursor where
# they leave it, at the top: "[detached…]" and the prompt overwrote rows 2-3.
def tmux(*a, check_rc=True):
    r = subprocess.run(["tmux", "-L", tmux_sock, *a], env=env, capture_output=True, text=True, timeout=20)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"tmux {a}: {r.stderr}")
    return r.stdout


def pane_until(pred, seconds=10):
    end = time.time() + seconds
    text = ""
    while time.time() < end:
        text = tmux("capture-pane", "-p", "-t", "attach")
        if pred(text):
            return text
        time.sleep(0.1)
    return text


tmux_sock = f"uexec-test-{os.getpid()}"
try:
    tmux("new-session", "-d", "-s", "attach", "-x", "80", "-y", "24", "sh")
    tmux("send-keys", "-t", "attach", "clear; printf 'outer-1\\nouter-2\\nouter-3\\n'", "Enter")
    pane_until(lambda t: "outer-3" in t)
    tmux("send-keys", "-t", "attach", f"{uexec} attach {pid_id}", "Enter")
    time.sleep(1.0)
    tmux("send-keys", "-t", "attach", "clear; for i in 1 2 3 4 5 6; do echo inner-$i; done", "Enter")
    pane_until(lambda t: "inner-6" in t)
    title = tmux("display-message", "-p", "-t", "attach", "#{pane_title}").strip()
    check("attach in tmux: the hint stays visible in the terminal's title (the repaint covers the line)",
          title == f"uexec attach {pid_id} (Ctrl-] detaches)", title)
    tmux("send-keys", "-t", "attach", "C-]")
    text = pane_until(lambda t: "[detached; the process keeps running]" in t)
    tmux("send-keys", "-t", "attach", "echo after-$((40+2))", "Enter")
    text = pane_until(lambda t: "after-42" in t.split("[detached", 1)[-1])
    rows = text.split("\n")
    at = lambda needle: next((i for i, r in enumerate(rows) if needle in r), -1)
    check("attach in tmux: the detach note comes below the session's last output",
          at("inner-6") >= 0 and at("[detached; the process keeps running]") > at("inner-6"), text)
    check("attach in tmux: the rows above it are intact",
          all(at(f"inner-{i}") >= 0 for i in range(1, 7)), text)
    check("attach in tmux: the next command's output follows the note",
          at("after-42") > at("[detached; the process keeps running]"), text)
    # attach to a pipe session (no --tty): lines, not a staircase; typed lines reach it;
    # Ctrl-C interrupts it (it used to be a byte the pipe ignored).
    code, out, err = cli("start", "--", "sh", "-c",
                         "echo line-a; echo line-b; while read l; do echo \"got:$l\"; done")
    pipe_id = out.strip()
    tmux("send-keys", "-t", "attach", f"clear; {uexec} attach {pipe_id}", "Enter")
    text = pane_until(lambda t: "line-b" in t)
    rows = text.split("\n")
    check("attach to a pipe session: each line starts at the left edge (no staircase)",
          any(r.startswith("line-a") for r in rows) and any(r.startswith("line-b") for r in rows), text)
    tmux("send-keys", "-t", "attach", "hello", "Enter")
    text = pane_until(lambda t: "got:hello" in t)
    check("attach to a pipe session: a typed line reaches the process",
          any(r.startswith("got:hello") for r in text.split("\n")), text)
    tmux("send-keys", "-t", "attach", "C-c")
    text = pane_until(lambda t: "[process exited" in t)
    check("attach to a pipe session: Ctrl-C interrupts the process", "[process exited" in text, text)
    end = time.time() + 5
    while True:
        _, out, _ = cli("ls")
        closed = "closed" in out.split(pipe_id, 1)[-1].split("\n", 1)[0]
        if closed or time.time() > end:
            break
        time.sleep(0.1)
    check("attach to a pipe session: the interrupted process is closed", closed, out)
finally:
    tmux("kill-server", check_rc=False)

# A raw protocol client that disconnects mid-stream: its process keeps running.
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
f = s.makefile("rwb")


def send(o):
    f.write((json.dumps(o) + "\n").encode())
    f.flush()


def recv_id(i, timeout=10):
    s.settimeout(timeout)
    while True:
        m = json.loads(f.readline())
        if m.get("id") == i:
            return m


send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientName": "raw", "detachedTtlMs": 60000}})
init = recv_id(1)
sid = init["result"]["sessionId"]
send({"jsonrpc": "2.0", "method": "initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "process/start",
      "params": {"processId": "flood", "argv": ["/bin/sh", "-c", f"while :; do echo tick-daemon-test-{os.getpid()}; sleep 0.05; done"], "tty": False}})
check("raw start", "result" in recv_id(2))
time.sleep(0.2)
s.close()  # mid-stream
time.sleep(0.3)
code, out, _ = cli("ls")
check("a disconnected client's process keeps running", f"{sid[:8]}/flood" in out and "running" in out, out)
# Resume the session within its TTL and read what was retained.
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
f = s.makefile("rwb")
send({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"clientName": "raw", "resumeSessionId": sid}})
res = recv_id(3)
check("resume within the TTL", res.get("result", {}).get("resumed") is True, json.dumps(res)[:300])
send({"jsonrpc": "2.0", "method": "initialized"})
send({"jsonrpc": "2.0", "id": 4, "method": "process/read", "params": {"processId": "flood", "afterSeq": 0}})
rd = recv_id(4)
text = b"".join(base64.b64decode(c["chunk"]) for c in rd["result"]["chunks"])
check("read after resume", b"tick" in text, repr(text[:100]))
s.close()

# Per-session limits on the wire: a bad one is refused, a timeout ends the session and says
# so, and process/list shows them with what happened under them.
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
f = s.makefile("rwb")
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientName": "limits"}})
recv_id(1)
send({"jsonrpc": "2.0", "method": "initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "process/start",
      "params": {"processId": "bad", "argv": ["true"], "limits": {"pidsMax": 0}}})
res = recv_id(2)
check("an out-of-range limit is invalidParams naming the field",
      res.get("error", {}).get("data", {}).get("field") == "limits.pidsMax", json.dumps(res))
send({"jsonrpc": "2.0", "id": 3, "method": "process/start",
      "params": {"processId": "typo", "argv": ["true"], "limits": {"timeout": 5}}})
res = recv_id(3)
check("an unknown limit is refused", "unknown limit" in res.get("error", {}).get("message", ""), json.dumps(res))
send({"jsonrpc": "2.0", "id": 4, "method": "process/start",
      "params": {"processId": "slow", "argv": ["sleep", "30"], "limits": {"timeoutMs": 300, "outputBytesPerSec": 4096}}})
check("a limited process starts", "result" in recv_id(4))
exited = closed = None
s.settimeout(10)
while closed is None:
    m = json.loads(f.readline())
    if m.get("method") == "process/exited" and m["params"]["processId"] == "slow":
        exited = m["params"]
    if m.get("method") == "process/closed" and m["params"]["processId"] == "slow":
        closed = m["params"]
check("endedBy names the timeout", (exited or {}).get("endedBy") ==
      {"limit": "timeout", "message": "a lifetime timeout of 300 ms"}, json.dumps(exited))
check("process/closed carries limitEvents", "pidsMaxHits" in closed.get("limitEvents", {}), json.dumps(closed))
send({"jsonrpc": "2.0", "id": 5, "method": "process/list", "params": {}})
rows = [r for r in recv_id(5)["result"]["processes"] if r["processId"] == "slow"]
check("process/list shows the limits",
      rows and rows[0].get("limits") == {"timeoutMs": 300, "outputBytesPerSec": 4096}, json.dumps(rows))

# Named processes: the same name and command from another connection is the live one (and
# that connection is subscribed to it); another command is nameInUse; replace restarts it.
named = ["bash", "-c", "while :; do echo named-tick; sleep 0.2; done"]
send({"jsonrpc": "2.0", "id": 6, "method": "process/start",
      "params": {"processId": "dev", "argv": named, "name": "dev-server", "cwd": "file:///tmp"}})
first = recv_id(6).get("result", {})
check("a named start spawns", first.get("existing") is False and first.get("pid"), json.dumps(first))
s2 = socket.socket(socket.AF_UNIX)
s2.connect(sock)
f2 = s2.makefile("rwb")
f2.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientName": "second"}}) + "\n"
          ).encode())
f2.write(b'{"jsonrpc":"2.0","method":"initialized"}\n')
f2.write((json.dumps({"jsonrpc": "2.0", "id": 2, "method": "process/start",
                      "params": {"processId": "mine", "argv": named, "name": "dev-server", "cwd": "file:///tmp"}})
          + "\n").encode())
f2.flush()
s2.settimeout(10)
again, saw_tick = None, False
deadline = time.time() + 10
while time.time() < deadline and not (again and saw_tick):
    m = json.loads(f2.readline())
    if m.get("id") == 2:
        again = m
    if m.get("method") == "process/output" and b"named-tick" in base64.b64decode(m["params"]["chunk"]):
        saw_tick = True
r2 = (again or {}).get("result", {})
check("the same name and command is the existing process", r2.get("existing") is True and
      r2.get("processId") == "dev" and r2.get("pid") == first.get("pid"), json.dumps(again))
check("…and the caller is subscribed to it", saw_tick)
f2.write((json.dumps({"jsonrpc": "2.0", "id": 3, "method": "process/start",
                      "params": {"processId": "other", "argv": ["sleep", "5"], "name": "dev-server"}}) + "\n").encode())
f2.flush()
while True:
    m = json.loads(f2.readline())
    if m.get("id") == 3:
        break
check("another command under the name is nameInUse", m.get("error", {}).get("data", {}).get("kind") == "nameInUse" and
      "replace" in m["error"]["message"], json.dumps(m))
f2.write((json.dumps({"jsonrpc": "2.0", "id": 4, "method": "process/start",
                      "params": {"processId": "other", "argv": ["sleep", "5"], "name": "dev-server",
                                 "replace": True}}) + "\n").encode())
f2.flush()
while True:
    m = json.loads(f2.readline())
    if m.get("id") == 4:
        break
check("replace starts anew", m.get("result", {}).get("existing") is False, json.dumps(m))
send({"jsonrpc": "2.0", "id": 7, "method": "process/list", "params": {"all": True}})
names = {(r["sessionId"], r["processId"]): (r.get("name"), r.get("state")) for r in recv_id(7)["result"]["processes"]}
check("the name moved to the new process", any(v[0] == "dev-server" and k[1] == "other" for k, v in names.items()) and
      not any(v[0] == "dev-server" and k[1] == "dev" for k, v in names.items()), json.dumps(list(names.values())))
s2.close()

# An agent session (exec/command) is a process of the caller's session named by its id
# (docs/protocol.md §4.6): listed, readable, and shown by `uexec ls`.
send({"jsonrpc": "2.0", "id": 8, "method": "exec/command",
      "params": {"cmd": "echo agent-hello; sleep 30", "yield_time_ms": 500, "login": False}})
res = recv_id(8).get("result", {})
agent_id = res.get("structuredContent", {}).get("session_id")
check("exec/command leaves a running agent session", isinstance(agent_id, int), json.dumps(res)[:300])
send({"jsonrpc": "2.0", "id": 9, "method": "process/list", "params": {}})
rows = [r for r in recv_id(9)["result"]["processes"] if r["processId"] == str(agent_id)]
check("process/list shows it with agentSessionId", rows and rows[0].get("agentSessionId") == agent_id, json.dumps(rows))
send({"jsonrpc": "2.0", "id": 10, "method": "process/read", "params": {"processId": str(agent_id), "afterSeq": 0}})
rd = recv_id(10).get("result", {})
text = b"".join(base64.b64decode(c["chunk"]) for c in rd.get("chunks", []))
check("process/read reads its output", b"agent-hello" in text, json.dumps(rd)[:300])
code, out, err = cli("ls")
check("uexec ls lists it", str(agent_id) in out, out)
send({"jsonrpc": "2.0", "id": 11, "method": "exec/killSession", "params": {"session_id": agent_id}})
recv_id(11)

# process/read from the start of a process whose middle was evicted returns the head, says
# what is omitted, and returns the tail too (it used to stop at the head, silently).
send({"jsonrpc": "2.0", "id": 12, "method": "process/start",
      "params": {"processId": "big", "argv": ["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo THE-END"],
                 "subscribe": False}})
recv_id(12)
deadline = time.time() + 20
while time.time() < deadline:
    send({"jsonrpc": "2.0", "id": 13, "method": "process/read", "params": {"processId": "big", "afterSeq": 0}})
    rd = recv_id(13)["result"]
    if rd["closed"]:
        break
    time.sleep(0.2)
data = b"".join(base64.b64decode(c["chunk"]) for c in rd["chunks"])
om = rd.get("omitted") or {}
check("a read across the evicted middle returns head, omitted and tail",
      data.endswith(b"THE-END\n") and om.get("bytes", 0) + len(data) == 3000000 + len("\nTHE-END\n") and
      om.get("fromSeq", 0) > 1 and om.get("toSeq", 0) >= om.get("fromSeq", 0), json.dumps(om))
s.close()

code, out, err = cli("kill", pid_id)
check("kill", code == 0, err)
end = time.time() + 10
while time.time() < end:
    _, out, _ = cli("ls")
    if "closed" in out.split(pid_id, 1)[-1].split("\n", 1)[0]:
        break
    time.sleep(0.1)
check("killed process is closed", "closed" in out.split(pid_id, 1)[-1].split("\n", 1)[0], out)
# logs --follow shows how the process ended and exits with its code (it used to exit 0).
code, sid_out, err = cli("start", "--", "sh", "-c", "echo before-exit; sleep 0.5; exit 4")
r = run_bounded([uexec, "logs", sid_out.strip(), "--follow"], env, 30)
check("logs --follow: the process's exit code", r.returncode == 4, f"{r.returncode} {r.stderr!r}")
check("logs --follow: its output, then a note of the exit",
      b"before-exit" in r.stdout and b"exited with code 4" in r.stderr, f"{r.stdout!r} {r.stderr!r}")
r = run_bounded([uexec, "logs", sid_out.strip(), "--follow"], env, 30)
check("logs --follow after the end: the same exit code", r.returncode == 4, f"{r.returncode} {r.stderr!r}")

# start fails as run does: the same words, 127 not found, 126 found but not runnable, 125 for
# uexec's own step (it used to print the daemon's "(os error 2)" and exit 126 for all three).
code, out, err = cli("start", "--", "/nonexistent")
check("start /nonexistent: exit 127", code == 127, f"{code} {err!r}")
check("start /nonexistent: run's message",
      "uexec: cannot run '/nonexistent': execve /nonexistent: No such file or directory (ENOENT)" in err, err)
noexec = os.path.join(tmp, "noexec")
open(noexec, "w").close()
code, out, err = cli("start", "--", noexec)
check("start of a file that is not executable: exit 126", code == 126 and "EACCES" in err, f"{code} {err!r}")
code, out, err = cli("start", "--cwd", "/no/such/dir", "--", "true")
check("start --cwd to a missing directory: exit 125", code == 125 and "chdir /no/such/dir" in err, f"{code} {err!r}")

# kill --signal takes kill(1)'s names and numbers as well as the protocol's names.
for sig in ("INT", "SIGTERM", "9", "hangup"):
    code, sid_out, err = cli("start", "--", "sleep", "1000")
    target = sid_out.strip()
    code, out, err = cli("kill", target, "--signal", sig)
    check(f"kill --signal {sig}: accepted", code == 0, err)
    end = time.time() + 10
    line = ""
    while time.time() < end:
        _, out, _ = cli("ls")
        line = out.split(target, 1)[-1].split("\n", 1)[0] if target in out else ""
        if "closed" in line or "exited" in line:
            break
        time.sleep(0.1)
    check(f"kill --signal {sig}: the process ends", "closed" in line or "exited" in line, line)
code, out, err = cli("kill", pid_id, "--signal", "BOGUS")
check("kill --signal BOGUS: usage error", code == 2 and "cannot send signal 'BOGUS'" in err, f"{code} {err}")

code, out, err = cli("send", "nope/none", "x")
check("an unknown ID is a clear error", code != 0 and "no process" in err, err)

# SIGTERM: everything ends, nothing is left running.
flood_pid = None
server.send_signal(signal.SIGTERM)
try:
    rc = server.wait(timeout=10)
except subprocess.TimeoutExpired:
    rc = None
    server.kill()
check("SIGTERM: the daemon exits 0", rc == 0, str(rc))
left = subprocess.run(["pgrep", "-f", f"echo tick-daemon-test-{os.getpid()}"], capture_output=True).stdout.decode().strip()
check("SIGTERM: nothing is left running", left == "", left)
check("the socket is removed", not os.path.exists(sock))

# --replace: a second serve stops the running one (SIGTERM: it ends its sessions and removes
# its socket) and takes over the same socket.
rsock = os.path.join(tmp, "replace", "uexec.sock")
renv = dict(env, UEXEC_SOCKET=rsock)
replace_log = open(os.path.join(tmp, "replace.log"), "wb")
first = subprocess.Popen([uexec, "serve", "--socket", rsock, "--no-ws"], stderr=replace_log, env=renv)
newer = None


def answers(e, seconds):
    """True once `uexec ls` succeeds against the socket in `e` (polled for up to `seconds`)."""
    end = time.time() + seconds
    while time.time() < end:
        try:
            if subprocess.run([uexec, "ls"], env=e, capture_output=True, timeout=20).returncode == 0:
                return True
        except subprocess.TimeoutExpired:
            pass
        time.sleep(0.05)
    return False


try:
    check("--replace: the first daemon answers", answers(renv, 30))
    r = subprocess.run([uexec, "start", "--", "sleep", "1000"], env=renv, capture_output=True, timeout=20, text=True)
    check("--replace: a session runs on the first daemon", r.returncode == 0, r.stdout + r.stderr)
    newer = subprocess.Popen([uexec, "serve", "--socket", rsock, "--no-ws", "--replace"], stderr=replace_log, env=renv)
    try:
        first_rc = first.wait(timeout=15)
    except subprocess.TimeoutExpired:
        first_rc = None
        first.kill()
    check("--replace: the running daemon exits 0", first_rc == 0, str(first_rc))
    ok = answers(renv, 30)
    r = subprocess.run([uexec, "ls"], env=renv, capture_output=True, timeout=20, text=True)
    check("--replace: the new daemon answers on the same socket", ok and "sleep" not in r.stdout, r.stdout + r.stderr)
    with open(rsock + ".lock") as f:
        holder = f.read().strip()
    check("--replace: the lock names the new daemon", holder == str(newer.pid), holder)
    # `uexec stop` ends the daemon on the clients' socket and waits for it; a second one finds none.
    r = subprocess.run([uexec, "stop"], env=renv, capture_output=True, timeout=30, text=True)
    check("stop: exit 0, naming the daemon", r.returncode == 0 and f"pid {newer.pid}" in r.stderr, f"{r.returncode} {r.stderr}")
    try:
        check("stop: the daemon has exited 0 when stop returns", newer.wait(timeout=1) == 0)
    except subprocess.TimeoutExpired:
        newer.kill()
        check("stop: the daemon has exited 0 when stop returns", False, "still running")
    check("stop: its socket is gone", not os.path.exists(rsock))
    r = subprocess.run([uexec, "stop"], env=renv, capture_output=True, timeout=30, text=True)
    check("stop with no daemon: exit 1 and says so", r.returncode == 1 and "no daemon runs on unix:" in r.stderr,
        f"{r.returncode} {r.stderr}")
except subprocess.TimeoutExpired as e:
    check("--replace/stop section finished", False, f"timed out: {e}")
finally:
    for p in (first, newer):
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()

# Retention of finished processes (issue 20: they vanished after 30 s, with no flag and no word):
# `serve --retain-exited` sets it; once one goes, `logs` says when and why instead of "no process".
r = run_bounded([uexec, "serve", "--socket", os.path.join(tmp, "bad", "uexec.sock"), "--no-ws", "--retain-exited", "soon"],
                env)
check("--retain-exited with a bad duration: exit 2, saying what it takes",
      r.returncode == 2 and b"takes a duration (30s, 10m, 24h, 7d) or forever" in r.stderr, f"{r.returncode} {r.stderr!r}")
tsock = os.path.join(tmp, "retain", "uexec.sock")
tenv = dict(env, UEXEC_SOCKET=tsock)
retain_log = open(os.path.join(tmp, "retain.log"), "wb")
short = subprocess.Popen([uexec, "serve", "--socket", tsock, "--no-ws", "--retain-exited", "1s"], stderr=retain_log,
                         env=tenv)
try:
    check("--retain-exited 1s: the daemon answers", answers(tenv, 30))
    r = subprocess.run([uexec, "start", "--", "sh", "-c", "echo kept-for-a-while"], env=tenv, capture_output=True,
                       timeout=20, text=True)
    done_id = r.stdout.strip()
    r = subprocess.run([uexec, "logs", done_id], env=tenv, capture_output=True, timeout=20, text=True)
    check("a finished process is readable within the retention", "kept-for-a-while" in r.stdout, r.stdout + r.stderr)
    time.sleep(2.5)
    r = subprocess.run([uexec, "logs", done_id], env=tenv, capture_output=True, timeout=20, text=True)
    check("after the retention: logs says it expired, when, and which flag keeps it",
          r.returncode == 1 and f"uexec: {done_id} expired" in r.stderr and "--retain-exited" in r.stderr
          and "it went at " in r.stderr, f"{r.returncode} {r.stderr!r}")
    r = subprocess.run([uexec, "ls"], env=tenv, capture_output=True, timeout=20, text=True)
    check("ls does not list it", done_id not in r.stdout, r.stdout)
    r = subprocess.run([uexec, "ls", "--all"], env=tenv, capture_output=True, timeout=20, text=True)
    row = next((l for l in r.stdout.splitlines() if l.startswith(done_id)), "")
    check("ls --all lists it as expired, with when", r.returncode == 0 and " expired " in row and "(went at " in row,
          r.stdout)
finally:
    short.terminate()
    try:
        short.wait(timeout=15)
    except subprocess.TimeoutExpired:
        short.kill()

# `uexec url` and a token that survives restarts (issue 20: every start made a new token, so open
# tabs showed "connecting…" forever, and no command printed the URL again).
usock = os.path.join(tmp, "url", "uexec.sock")
uenv = dict(env, UEXEC_SOCKET=usock)
url_log = open(os.path.join(tmp, "url.log"), "wb")


def url_daemon(*extra):
    d = subprocess.Popen([uexec, "serve", "--socket", usock, "--ws", "127.0.0.1:0", *extra], stderr=url_log, env=uenv)
    ok = answers(uenv, 30)
    r = subprocess.run([uexec, "url"], env=uenv, capture_output=True, timeout=20, text=True)
    return d, ok, r


def stop_daemon(d):
    d.terminate()
    try:
        d.wait(timeout=15)
    except subprocess.TimeoutExpired:
        d.kill()
        d.wait()


r = subprocess.run([uexec, "url"], env=uenv, capture_output=True, timeout=20, text=True)
check("url with no daemon: exit 1, saying so", r.returncode == 1 and "no daemon runs on unix:" in r.stderr,
      f"{r.returncode} {r.stderr}")
d, ok, r = url_daemon()
try:
    m = re.match(r"^http://127\.0\.0\.1:(\d+)/#token=([A-Za-z0-9_-]+)$", r.stdout.strip())
    check("url: the page's URL with its token", ok and r.returncode == 0 and m is not None, f"{r.returncode} {r.stdout!r}")
    first_token = m.group(2) if m else None
    with open(os.path.join(tmp, "url", "token")) as f:
        check("url: the token is the one in the token file", f.read().strip() == first_token)
finally:
    stop_daemon(d)
check("url: the URL file goes with the daemon", not os.path.exists(usock + ".url"))
d, ok, r = url_daemon()
try:
    check("a restart keeps the token (open pages reconnect)", first_token is not None and
          r.stdout.strip().endswith("#token=" + first_token), r.stdout)
finally:
    stop_daemon(d)
d, ok, r = url_daemon("--new-token")
try:
    check("--new-token makes a fresh one", r.returncode == 0 and first_token is not None and
          not r.stdout.strip().endswith("#token=" + first_token), r.stdout)
finally:
    stop_daemon(d)
d = subprocess.Popen([uexec, "serve", "--socket", usock, "--no-ws"], stderr=url_log, env=uenv)
try:
    answers(uenv, 30)
    r = subprocess.run([uexec, "url"], env=uenv, capture_output=True, timeout=20, text=True)
    check("url of a daemon without a page: exit 1, saying why", r.returncode == 1 and "serves no web page" in r.stderr,
          f"{r.returncode} {r.stderr}")
finally:
    stop_daemon(d)

# Auto-start (issue 20): `uexec start` starts the daemon when none runs, as tmux starts its
# server; `ls` without one says so and exits 1; UEXEC_AUTOSTART=0 turns it off.
asock = os.path.join(tmp, "auto", "uexec.sock")
aenv = dict(env, UEXEC_SOCKET=asock, UEXEC_AUTOSTART_ARGS="--no-ws")
r = subprocess.run([uexec, "ls"], env=aenv, capture_output=True, timeout=20, text=True)
check("ls with no daemon: exit 1, saying none runs and how to start one",
      r.returncode == 1 and f"no daemon runs on unix:{asock}" in r.stderr, f"{r.returncode} {r.stderr}")
r = subprocess.run([uexec, "start", "--", "sleep", "1000"], env=dict(aenv, UEXEC_AUTOSTART="0"), capture_output=True,
                   timeout=20, text=True)
check("UEXEC_AUTOSTART=0: start does not start a daemon", r.returncode == 1 and not os.path.exists(asock + ".lock"),
      f"{r.returncode} {r.stderr}")
try:
    r = subprocess.run([uexec, "start", "--", "sleep", "1000"], env=aenv, capture_output=True, timeout=30, text=True)
    check("start with no daemon starts one, and says where its log is",
          r.returncode == 0 and "started the daemon (pid" in r.stderr and asock + ".log" in r.stderr, f"{r.returncode} {r.stderr}")
    first_id = r.stdout.strip()
    r = subprocess.run([uexec, "start", "--", "true"], env=aenv, capture_output=True, timeout=30, text=True)
    check("a second start uses that daemon", r.returncode == 0 and "started the daemon" not in r.stderr, r.stderr)
    r = subprocess.run([uexec, "ls"], env=aenv, capture_output=True, timeout=20, text=True)
    check("ls finds the auto-started daemon's process", first_id in r.stdout and "running" in r.stdout, r.stdout)
    # Names as targets (issue 20: ids only, no names): start --name, then logs/kill by name; ls
    # shows the name in a column as wide as the widest entry.
    r = subprocess.run([uexec, "start", "--name", "web", "--", "sh", "-c", "echo serving-$((6*7)); sleep 1000"],
                       env=aenv, capture_output=True, timeout=30, text=True)
    check("start --name", r.returncode == 0, r.stderr)
    r = subprocess.run([uexec, "start", "--name", "web", "--", "true"], env=aenv, capture_output=True, timeout=30, text=True)
    check("start --name with a name in use: exit 1, saying so", r.returncode == 1 and "name web is used" in r.stderr,
          f"{r.returncode} {r.stderr}")
    end = time.time() + 10
    while time.time() < end:
        r = subprocess.run([uexec, "logs", "web"], env=aenv, capture_output=True, timeout=20, text=True)
        if "serving-42" in r.stdout:
            break
        time.sleep(0.1)
    check("logs NAME", "serving-42" in r.stdout, r.stdout + r.stderr)
    r = subprocess.run([uexec, "ls"], env=aenv, capture_output=True, timeout=20, text=True)
    lines = r.stdout.splitlines()
    header = lines[0] if lines else ""
    row = next((l for l in lines if " web " in l), "")
    check("ls: a NAME column, aligned with its header",
          header.split()[:2] == ["ID", "NAME"] and row and row.index(" web ") + 1 == header.index("NAME"), r.stdout)
    r = subprocess.run([uexec, "kill", "web", "--signal", "KILL"], env=aenv, capture_output=True, timeout=20, text=True)
    check("kill NAME", r.returncode == 0, r.stderr)
finally:
    r = subprocess.run([uexec, "stop"], env=aenv, capture_output=True, timeout=30, text=True)
    check("stop ends the auto-started daemon", r.returncode == 0, f"{r.returncode} {r.stderr}")

print(f"daemon: {passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
