#!/usr/bin/env python3
"""The journal (`uexec serve --journal`): what sessions printed and how they ended, on disk,
read back by `uexec logs` after everything was killed.

  - a daemon with the journal runs sessions: one that exits with code 3, one killed by a
    signal, one that floods far past journal_size, a named one and a terminal one that still
    run; then the daemon and every session get SIGKILL;
  - with no daemon, and again under a new daemon, `uexec logs` of each returns its output and
    its end ("exited with code 3", "killed by signal 15", "its end was not recorded");
  - the flood keeps its first and last parts within journal_size and says how much it cut;
    journal_max bounds them all: the oldest finished journals go;
  - `uexec logs --asciicast` reads a terminal session from the journal;
  - no sandbox of any backend can read the journal (network on and off), daemon or not;
  - an agent's sessions (`uexec mcp --connect`): after the daemon was killed, read_output of
    their ids under a new daemon answers from the journal (output, exit code, tail, grep with
    the process's own line numbers past the cut), and the new daemon never issues those ids.

    python3 tests/e2e/journal_test.py build/src/uexec
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from e2e_util import Checks, McpClient, kill_serve_hard  # noqa: E402

uexec = os.path.abspath(sys.argv[1])
check = Checks()
tmp = tempfile.mkdtemp(prefix="uexec-journal-")
os.chmod(tmp, 0o755)
state = os.path.join(tmp, "state")
root = os.path.join(state, "uexec", "journal")
sock = os.path.join(tmp, "run", "uexec.sock")
cfg = os.path.join(tmp, "config.toml")
with open(cfg, "w") as f:
    f.write('[daemon]\njournal = true\njournal_size = "1MiB"\njournal_max = "8MiB"\n')
env = {**os.environ, "UEXEC_SOCKET": sock, "UEXEC_CONFIG": cfg, "UEXEC_AUTOSTART": "0", "XDG_STATE_HOME": state}


def serve(*extra):
    err = open(os.path.join(tmp, "serve.log"), "ab")
    d = subprocess.Popen([uexec, "serve", "--socket", sock, "--no-ws", *extra], env=env, stderr=err)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return d


def run(*args, timeout=60):
    return subprocess.run([uexec, *args], env=env, capture_output=True, timeout=timeout)


def start(*argv, tty=False, name=None):
    r = run("start", *(["--tty"] if tty else []), *(["--name", name] if name else []), "--", *argv)
    return r.stdout.decode().strip()


def state_of(pid):
    out = run("ls").stdout.decode()
    return next((l for l in out.splitlines() if l.split()[:1] == [pid]), "")


def wait_exit(pid, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        line = state_of(pid)
        if line and " running " not in f" {line} ":
            return True
        time.sleep(0.1)
    return False


def metas():
    out = []
    for m in glob.glob(os.path.join(root, "*", "meta.json")):
        try:
            out.append((os.path.dirname(m), json.load(open(m))))
        except (OSError, ValueError):
            pass
    return out


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


seq_out = "".join(f"{i}\n" for i in range(1, 20001)).encode()
daemon = serve()
check("serve says where it journals", "journaling output to " + root in open(os.path.join(tmp, "serve.log")).read(),
      open(os.path.join(tmp, "serve.log")).read())

exited = start("sh", "-c", "seq 1 20000; exit 3")
termed = start("sh", "-c", "echo before the signal; kill -TERM $$")
flood = start("sh", "-c", "head -c 30000000 /dev/zero | tr '\\0' x; echo; echo flood-end")
ticker = start("sh", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.05; done", name="ticker")
screen = start("bash", "-c", "printf '\\033[1mbold\\033[0m on a terminal\\n'; exec sleep 1000", tty=True)
for pid in (exited, termed, flood):
    check(f"{pid} finished in the daemon", wait_exit(pid, 60))
time.sleep(1.0)  # the ticker ticks, the writer writes

check("the journal root is 0700", os.stat(root).st_mode & 0o777 == 0o700, oct(os.stat(root).st_mode))
check("one journal per process", len(metas()) == 5, [m for _, m in metas()])
r = run("logs", exited)
check("the daemon still answers logs itself", r.stdout == seq_out and b"journal" not in r.stderr, r.stderr)

# ---- everything killed: the daemon first (mid-stream), then what it ran --------------------
live = [m["pid"] for _, m in metas() if "end" not in m]
check("the running ones have no end yet", len(live) == 2, live)
kill_serve_hard(daemon)
for p in live:
    try:
        os.kill(p, signal.SIGKILL)
    except ProcessLookupError:
        pass
os.unlink(sock) if os.path.exists(sock) else None


def check_logs(where):
    r = run("logs", exited)
    check(f"{where}: logs of an exited process is its output", r.stdout == seq_out,
          (len(r.stdout), r.stderr))
    check(f"{where}: ... and its end", b"exited with code 3" in r.stderr and b"from the journal" in r.stderr, r.stderr)
    r = run("logs", termed)
    check(f"{where}: a process killed by a signal says so",
          r.stdout == b"before the signal\n" and b"killed by signal 15 (SIGTERM)" in r.stderr, (r.stdout, r.stderr))
    r = run("logs", "ticker")
    ticks = r.stdout.decode().splitlines()
    check(f"{where}: a running process's output, found by its name", len(ticks) > 10 and ticks[0] == "tick 0" and
          all(t == f"tick {i}" for i, t in enumerate(ticks)), ticks[:3] + ticks[-3:])
    check(f"{where}: ... and why its end is missing", b"its end was not recorded" in r.stderr, r.stderr)
    r = run("logs", flood)
    out = r.stdout
    missing = [int(w) for line in r.stderr.decode().splitlines() if "were not kept" in line for w in line.split()
               if w.isdigit()]
    check(f"{where}: a flood keeps its head and its tail", out.startswith(b"x" * 1000) and out.endswith(b"x\nflood-end\n"),
          (len(out), out[-40:]))
    check(f"{where}: ... and says how much it cut", missing and missing[0] + len(out) == 30000000 + len(b"\nflood-end\n"),
          (missing, len(out), r.stderr))
    r = run("logs", screen, "--asciicast")
    lines = r.stdout.decode().splitlines()
    header = json.loads(lines[0]) if lines else {}
    events = [json.loads(l) for l in lines[1:]]
    check(f"{where}: --asciicast from the journal", header.get("version") == 2 and header.get("width") and
          any("bold" in e[2] for e in events if len(e) == 3), (header, events[:3]))
    r = run("logs", "no-such-process")
    check(f"{where}: an unknown id is still an error", r.returncode != 0 and b"no-such-process" in r.stderr, r.stderr)


check_logs("no daemon")
flood_dir = next(d for d, m in metas() if m.get("processId") == flood.split("/")[-1])
check("a journal stays within journal_size", dir_bytes(flood_dir) <= (1 << 20) + 4096, dir_bytes(flood_dir))

daemon = serve()
check_logs("a new daemon")


# ---- no sandbox reads it, daemon or not ----------------------------------------------------
def sandbox_reads(backend, network, target):
    r = run("sandbox", "--backend", backend, "--mode", "read-only", "--network", network, "--cwd", tmp, "--",
            "sh", "-c", f"cat {target}/meta.json; ls {root}", timeout=60)
    return r


check_r = run("sandbox", "--check").stdout.decode()
backends = ["namespaces", "landlock"] + (["bwrap"] if "bwrap:" in check_r and "/bwrap" in check_r else [])
for with_daemon in (True, False):
    if not with_daemon:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
    for backend in backends:
        for network in ("on", "off"):
            r = sandbox_reads(backend, network, flood_dir)
            # Landlock grants a whole tree: the list-only right on the journal's parent lets a
            # sandbox list the names inside (start times and pids); nothing more is readable.
            leaked = b"argv" in r.stdout or (backend != "landlock" and
                                             os.path.basename(flood_dir).encode() in r.stdout)
            check(f"{backend}, network {network}, {'a daemon runs' if with_daemon else 'no daemon'}: "
                  "the journal is hidden", not leaked and r.returncode not in (125,), (r.returncode, r.stdout[:200],
                                                                                       r.stderr[:300]))

# ---- read_output (MCP) from the journal: an agent's sessions after its daemon was killed ----
def mcp_connect():
    return McpClient([uexec, "mcp", "--connect", sock, "--structured-content"], env=env)


def sc(res):
    return res.get("structuredContent", {})


daemon = serve()
mcp = mcp_connect()
res, text = mcp.tool("exec_command", {"cmd": "seq 1 3000; echo agent-done; exit 4", "login": False,
                                      "yield_time_ms": 10000})
done_id = sc(res).get("session")
check("agent: a finished command", sc(res).get("exit_code") == 4 and isinstance(done_id, int), text)
res, text = mcp.tool("exec_command", {"cmd": "seq 1 300000; exit 0", "login": False, "yield_time_ms": 20000})
big_id = sc(res).get("session")
res, text = mcp.tool("exec_command", {"cmd": "echo started-long; exec sleep 1000", "login": False,
                                      "yield_time_ms": 500})
long_id = sc(res).get("session_id")
check("agent: a command still running", isinstance(long_id, int), text)
old_ids = {done_id, big_id, long_id}


def journaled(agent_id, ended):
    return next((m for _, m in metas() if m.get("agentSessionId") == agent_id and (not ended or "end" in m)), None)


# The writer writes on its own thread: wait for the two ends and the running one's start.
deadline = time.time() + 30
while time.time() < deadline and not (journaled(done_id, True) and journaled(big_id, True) and journaled(long_id, False)):
    time.sleep(0.05)
time.sleep(0.1)  # its first output, gathered for up to 10 ms
long_pid = (journaled(long_id, False) or {}).get("pid")
mcp.close()
kill_serve_hard(daemon)
if long_pid:
    try:
        os.kill(long_pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
os.unlink(sock) if os.path.exists(sock) else None

daemon = serve()
mcp = mcp_connect()
res, text = mcp.tool("read_output", {"session_id": done_id})
check("read_output of an earlier daemon's session: its output, from the journal",
      not res.get("isError") and "agent-done" in sc(res).get("output", "") and sc(res).get("journal", "").startswith(root),
      text[:400])
check("... its exit code and state", sc(res).get("exit_code") == 4 and sc(res).get("state") == "exited", sc(res))
check("... and the envelope says where it came from", "From the journal" in text and "exited with code 4" in text, text[-300:])
res, text = mcp.tool("read_output", {"session_id": done_id, "tail_lines": 2})
check("read_output tail_lines from the journal", sc(res).get("output", "") == "3000\nagent-done\n", sc(res).get("output"))
res, text = mcp.tool("read_output", {"session_id": done_id, "offset": 4, "length": 6})
check("read_output byte range from the journal", sc(res).get("output", "") == "3\n4\n5\n", sc(res).get("output"))
line = 299999
offset = sum(len(f"{i}\n") for i in range(1, line))
res, text = mcp.tool("read_output", {"session_id": big_id, "grep": f"^{line}$"})
check("grep past the journal's cut numbers lines as the process wrote them",
      f"L{line}@{offset}: {line}" in sc(res).get("output", "") and "dropped from retention" in sc(res).get("output", ""),
      sc(res).get("output", "")[:400])
res, text = mcp.tool("read_output", {"session_id": long_id})
check("a session whose daemon died first: its output, state unknown, and why",
      "started-long" in sc(res).get("output", "") and sc(res).get("state") == "unknown" and
      "its end was not recorded" in text, text[-400:])
res, text = mcp.tool("read_output", {"session_id": long_id, "view": "screen"})
check("view screen of a journaled session is refused, pointing at the output", res.get("isError") and "journal" in text, text)
res, text = mcp.tool("write_stdin", {"session_id": long_id, "chars": "x"})
check("write_stdin to it says an earlier daemon ran it", res.get("isError") and "earlier daemon" in text, text)
new_ids = set()
for i in range(30):
    res, text = mcp.tool("exec_command", {"cmd": "true", "login": False, "yield_time_ms": 5000})
    new_ids.add(sc(res).get("session"))
check("the new daemon never issues the journaled ids", not (new_ids & old_ids) and None not in new_ids,
      (sorted(old_ids), sorted(x for x in new_ids if x is not None)[:5]))
res, text = mcp.tool("read_output", {"session_id": 99999 if 99999 not in old_ids | new_ids else 99998})
check("an id no daemon issued is still unknown", res.get("isError") and "Unknown process id" in text, text)
mcp.close()
daemon.send_signal(signal.SIGTERM)
daemon.wait(timeout=30)
os.unlink(sock) if os.path.exists(sock) else None

# ---- journal_max: the oldest finished journals go ------------------------------------------
daemon = serve()
floods = [start("sh", "-c", f"head -c 5000000 /dev/zero | tr '\\0' {c}") for c in "abcdefghijklmnop"]
for p in floods:
    wait_exit(p, 60)
time.sleep(0.5)
daemon.send_signal(signal.SIGTERM)
daemon.wait(timeout=30)
total = sum(dir_bytes(d) for d, _ in metas())
print("journals:", sorted((os.path.basename(d), dir_bytes(d)) for d, _ in metas()))
check("journal_max bounds every journal together", total <= (8 << 20) + 64 * 1024, total)
check("the newest stay", run("logs", floods[-1]).stdout.startswith(b"p" * 100))
check("the oldest went", run("logs", exited).returncode != 0)

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(check.exit_code())
