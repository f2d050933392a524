#!/usr/bin/env python3
"""1000 tty sessions in one `uexec serve` daemon (docs/agent.md §7, "1000 sessions").

    daemon_scale_test.py UEXEC_BINARY

Starts the daemon on a private socket in a private 0700 directory (no WebSocket listener,
so nothing else on the machine is touched), and over one raw protocol connection:

  1. warm-up: starts, echoes and terminates a batch of WARMUP tty `cat`s, so the first-use
     growth of the allocator, libuv and the connection's buffers is not charged to the 1000;
  2. baseline: the daemon's VmRSS (/proc/PID/status) and open fds (/proc/PID/fd);
  3. starts N=1000 tty `cat`s (process/start, tty:true, our own processIds) and writes each
     a unique token + "\\n" (process/write); requests are pipelined (a window of starts in
     flight, each write sent as its start is answered) and process/output notifications are
     collected until every process has shown its token twice: the line discipline's echo
     and `cat`'s own copy (so `cat` really read it); no other process's token may appear;
  4. idle: after ~1 s of quiet, VmRSS again; (idle - baseline) / N must be <= 8 KiB for the
     daemon and its holder together (holder/holder.h: `uexec serve` is two processes, the
     holder keeping copies of each session's fds); all N `cat`s are live children of the
     daemon;
  5. process/terminate on each, then waits for every process/closed; then polls (up to a
     generous deadline) until the daemon has no child left (no zombie, no `cat`) and its fd
     count is back to the baseline exactly, and the holder's too.

The only timing in here is generous deadlines (120 s overall) and the short settles before
measuring. Prints every figure; on failure, what it got. Summary line `daemon-scale: N
passed, M failed`; exit 1 on failure, 77 (meson: skipped) when the machine cannot host 1000
PTYs (kernel.pty.max or RLIMIT_NOFILE too low). The daemon, and any `cat` it left, are
killed in a `finally`, so a failure midway leaves nothing behind.
"""
import base64
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

uexec = os.path.abspath(sys.argv[1])
N = int(os.environ.get("UEXEC_SCALE_SESSIONS", "1000"))
WARMUP = 20
WINDOW = 128                 # process/start requests in flight at once
PER_SESSION_KIB = 8.0        # docs/agent.md §7 / docs/performance.md §3 (M1)
T0 = time.monotonic()
DEADLINE = T0 + float(os.environ.get("UEXEC_SCALE_DEADLINE_S", "120"))

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok: {name}")
    else:
        failed += 1
        print(f"FAIL: {name} {detail}")
    sys.stdout.flush()


def note(msg):
    print(f"  [{time.monotonic() - T0:6.2f}s] {msg}")
    sys.stdout.flush()


def left():
    return max(0.0, DEADLINE - time.monotonic())


# ---- the machine must be able to host N PTYs ------------------------------------------------

def read_int(path, default=None):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return default


pty_max = read_int("/proc/sys/kernel/pty/max")
pty_nr = read_int("/proc/sys/kernel/pty/nr", 0)
if pty_max is not None and pty_max - pty_nr < N + WARMUP + 16:
    print(f"SKIP: kernel.pty.max {pty_max} with {pty_nr} in use leaves no room for {N} PTYs")
    sys.exit(77)
# The daemon raises its soft limit to the hard one; it inherits ours. Raise ours too (we
# need few fds ourselves, but the daemon's ceiling is our hard limit).
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
need = 4 * N + 256  # generous: master fd, pidfd, and the like per session
if hard != resource.RLIM_INFINITY and hard < need:
    print(f"SKIP: RLIMIT_NOFILE hard limit {hard} < {need} needed for {N} sessions")
    sys.exit(77)
if soft != resource.RLIM_INFINITY and soft < hard:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# ---- /proc probes -------------------------------------------------------------------------

def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def fd_targets(pid):
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    return out


def children(ppid):
    """[(pid, comm, state)] of every process whose parent is ppid."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                st = f.read()
        except OSError:
            continue  # gone meanwhile
        lp, rp = st.find("("), st.rfind(")")
        rest = st[rp + 2:].split()
        if len(rest) >= 2 and int(rest[1]) == ppid:
            out.append((int(name), st[lp + 1:rp], rest[0]))
    return out


def snapshot(pid, label):
    s = {"rss": status_kib(pid, "VmRSS"), "anon": status_kib(pid, "RssAnon"), "fds": fd_count(pid),
         "children": children(pid)}
    note(f"{label}: VmRSS {s['rss']} KiB (RssAnon {s['anon']} KiB), {s['fds']} fds, "
         f"{len(s['children'])} children")
    return s


# ---- a pipelined protocol client on one socket --------------------------------------------

class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.setblocking(False)
        self.out = bytearray()
        self.inbuf = bytearray()
        self.next_id = 1
        self.callbacks = {}           # request id -> fn(message)
        self.on_notification = None   # fn(method, params)
        self.bad = []                 # messages we could not make sense of

    def send(self, obj):
        self.out += (json.dumps(obj, separators=(",", ":")) + "\n").encode()

    def request(self, method, params, cb):
        rid = self.next_id
        self.next_id += 1
        self.callbacks[rid] = cb
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def pump(self, timeout):
        rl, wl, _ = select.select([self.sock], [self.sock] if self.out else [], [], timeout)
        if wl:
            try:
                n = self.sock.send(self.out[:1 << 20])
                del self.out[:n]
            except BlockingIOError:
                pass
        if rl:
            try:
                data = self.sock.recv(1 << 20)
            except BlockingIOError:
                data = None
            if data == b"":
                raise ConnectionError("the daemon closed the connection")
            if data:
                self.inbuf += data
                self._dispatch()

    def _dispatch(self):
        while True:
            nl = self.inbuf.find(b"\n")
            if nl < 0:
                return
            line = bytes(self.inbuf[:nl])
            del self.inbuf[:nl + 1]
            if not line.strip():
                continue
            msg = json.loads(line)
            if "method" in msg and "id" not in msg:
                if self.on_notification:
                    self.on_notification(msg["method"], msg.get("params", {}))
            elif "id" in msg and msg["id"] in self.callbacks:
                self.callbacks.pop(msg["id"])(msg)
            else:
                self.bad.append(msg)

    def run_until(self, done, deadline):
        while not done() and time.monotonic() < deadline:
            self.pump(min(0.2, max(0.0, deadline - time.monotonic())))
        return done()

    def call(self, method, params, timeout=10):
        box = []
        self.request(method, params, box.append)
        self.run_until(lambda: box, min(DEADLINE, time.monotonic() + timeout))
        return box[0] if box else None

    def close(self):
        self.sock.close()


# ---- per-process bookkeeping ------------------------------------------------------------------

class Proc:
    def __init__(self, pid_key, token):
        self.key = pid_key
        self.token = token
        self.start = None       # the start response
        self.os_pid = None
        self.write = None       # the write response
        self.output = bytearray()
        self.exited = False
        self.closed = False
        self.term = None        # the terminate response

    def echoed(self):
        # Twice: the line discipline's echo of our input, then cat's copy of the line.
        return self.output.count(self.token) >= 2


procs = {}  # processId -> Proc


def on_notification(method, params):
    p = procs.get(params.get("processId"))
    if p is None or "sessionId" in params:
        return
    if method == "process/output":
        p.output += base64.b64decode(params["chunk"])
    elif method == "process/exited":
        p.exited = True
    elif method == "process/closed":
        p.closed = True


def start_batch(client, keys, deadline):
    """Starts each key's `cat` and writes its token, pipelined; returns when every process has
    answered and echoed its token (or failed), or at the deadline."""
    queue = list(keys)
    inflight = [0]

    def on_write(p):
        def cb(msg):
            p.write = msg
        return cb

    def on_start(p):
        def cb(msg):
            inflight[0] -= 1
            p.start = msg
            if "result" in msg:
                p.os_pid = msg["result"].get("pid")
                client.request("process/write", {"processId": p.key, "writeId": p.key + "-w1",
                                                 "chunk": base64.b64encode(p.token + b"\n").decode()},
                               on_write(p))
        return cb

    def feed():
        while queue and inflight[0] < WINDOW:
            p = procs[queue.pop(0)]
            inflight[0] += 1
            client.request("process/start", {"processId": p.key, "argv": ["cat"], "tty": True},
                           on_start(p))

    def done():
        feed()
        if queue or inflight[0]:
            return False
        for k in keys:
            p = procs[k]
            if "result" not in p.start:
                continue  # failed: nothing more will come
            if p.write is None or not p.echoed():
                return False
        return True

    client.run_until(done, deadline)


def terminate_batch(client, keys, deadline):
    live = [k for k in keys if procs[k].start and "result" in procs[k].start]

    def on_term(p):
        def cb(msg):
            p.term = msg
        return cb

    for k in live:
        client.request("process/terminate", {"processId": k}, on_term(procs[k]))
    client.run_until(lambda: all(procs[k].term is not None and procs[k].closed for k in live), deadline)
    return live


def summarize_failures(keys, what, pred, show):
    bad = [k for k in keys if not pred(procs[k])]
    detail = ""
    if bad:
        detail = f"{len(bad)} of {len(keys)}; first: " + "; ".join(f"{k}: {show(procs[k])}" for k in bad[:3])
    return bad, detail


def wait_for(cond, deadline, step=0.1):
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


# ---- the run ---------------------------------------------------------------------------------

tmp = tempfile.mkdtemp(prefix="uexec-scale-")
os.chmod(tmp, 0o700)
sock_path = os.path.join(tmp, "uexec.sock")
log_path = os.path.join(tmp, "daemon.log")
env = dict(os.environ, UEXEC_SOCKET=sock_path)
server = None
client = None
log = open(log_path, "wb")
try:
    # --no-ws: this test needs only the Unix socket, and must not collide with a daemon (or
    # another test) on 127.0.0.1:8022.
    server = subprocess.Popen([uexec, "serve", "--socket", sock_path, "--no-ws"], stdin=subprocess.DEVNULL,
                              stdout=log, stderr=log, env=env, cwd=tmp)
    hpid = server.pid  # the holder; the daemon is its child
    ok = wait_for(lambda: os.path.exists(sock_path) or server.poll() is not None, time.monotonic() + 10, 0.02)
    check("daemon listens", ok and server.poll() is None, f"exit {server.poll()}")
    if server.poll() is not None:
        raise SystemExit
    daemons = [c[0] for c in children(hpid) if c[1] == "uexec"]
    check("the daemon runs under its holder", len(daemons) == 1, str(children(hpid)))
    dpid = daemons[0] if daemons else hpid

    fds_fresh = fd_count(dpid)
    client = Client(sock_path)
    client.on_notification = on_notification
    init = client.call("initialize", {"clientName": "daemon-scale", "detachedTtlMs": 60000})
    check("initialize", init is not None and "result" in init, json.dumps(init)[:300])
    client.send({"jsonrpc": "2.0", "method": "initialized"})
    client.pump(0)
    time.sleep(0.2)
    client.pump(0)
    init_snap = snapshot(dpid, "after initialize")
    init_fd_map = fd_targets(dpid)

    # 1. Warm-up batch: first use of the spawn path, the ring pages, the connection's buffers.
    warm = [f"warm-{i:03d}" for i in range(WARMUP)]
    for i, k in enumerate(warm):
        procs[k] = Proc(k, f"uexec-warm-{i:03d}-{os.urandom(4).hex()}".encode())
    start_batch(client, warm, min(DEADLINE, time.monotonic() + 30))
    bad, d = summarize_failures(warm, "warm-up", lambda p: p.start and "result" in p.start and p.echoed(),
                                lambda p: f"start={json.dumps(p.start)[:200]} out={bytes(p.output[-120:])!r}")
    check(f"warm-up: {WARMUP} cats start and echo", not bad, d)
    terminate_batch(client, warm, min(DEADLINE, time.monotonic() + 30))
    bad, d = summarize_failures(warm, "warm-up closed", lambda p: p.closed, lambda p: f"term={p.term}")
    check("warm-up: all closed after terminate", not bad, d)
    wait_for(lambda: not children(dpid), min(DEADLINE, time.monotonic() + 10))

    # 2. Baseline: let the daemon settle after the warm-up, then measure.
    time.sleep(1.0)
    client.pump(0)
    base = snapshot(dpid, "baseline (after warm-up)")
    hbase = snapshot(hpid, "holder baseline")
    base_fd_map = fd_targets(dpid)
    check("baseline: no children after the warm-up", not base["children"], str(base["children"][:5]))
    # Closed processes stay listed for exitedRetentionMs (30 s) but hold no fd (docs/protocol.md
    # §3.6: at `closed` uexec closes the fds), so the warm-up leaves the fd table as it was.
    # (Lazily made singletons would show up here too; none exist today: the init memfd is
    # made during initialize, before init_fd_map.)
    kept = {fd: t for fd, t in base_fd_map.items() if init_fd_map.get(fd) != t}
    check("the warm-up's closed processes hold no fd", base["fds"] == init_snap["fds"] and not kept,
          f"after initialize {init_snap['fds']}, after the warm-up {base['fds']}; "
          f"new: {dict(list(kept.items())[:6])}")

    # 3. N sessions.
    keys = [f"cat-{i:04d}" for i in range(N)]
    for i, k in enumerate(keys):
        # Fixed width with a random suffix: no token is a substring of another.
        procs[k] = Proc(k, f"uexec-token-{i:04d}-{os.urandom(6).hex()}".encode())
    t_start = time.monotonic()
    start_batch(client, keys, DEADLINE - 20)  # keep time for the teardown checks
    note(f"{N} started and echoed in {time.monotonic() - t_start:.2f} s")
    bad, d = summarize_failures(keys, "start", lambda p: p.start is not None and "result" in p.start,
                                lambda p: json.dumps(p.start)[:300])
    check(f"all {N} process/start succeed", not bad, d)
    bad, d = summarize_failures(keys, "write", lambda p: p.write is not None and
                                p.write.get("result", {}).get("status") == "accepted",
                                lambda p: json.dumps(p.write)[:300])
    check(f"all {N} process/write accepted", not bad, d)
    bad, d = summarize_failures(keys, "echo", lambda p: p.echoed(),
                                lambda p: f"{len(p.output)} bytes, tail {bytes(p.output[-120:])!r}")
    check(f"every token echoed by its own process (line discipline + cat)", not bad, d)
    tokens = {k: procs[k].token for k in keys}
    cross = []
    for k in keys:
        out = bytes(procs[k].output)
        if out.count(b"uexec-token-") != out.count(procs[k].token):
            cross.append(f"{k}: {out[:200]!r}")
    check("no process shows another process's token", not cross, f"{len(cross)}: {cross[:3]}")
    pids = {procs[k].os_pid for k in keys if procs[k].os_pid}
    check(f"{N} distinct OS pids", len(pids) == N, str(len(pids)))

    # 4. Idle: a moment of quiet, then measure.
    time.sleep(1.0)
    client.pump(0)
    idle = snapshot(dpid, f"idle with {N} sessions")
    hidle = snapshot(hpid, f"holder with {N} sessions")
    live_cats = [c for c in idle["children"] if c[1] == "cat" and c[2] != "Z"]
    check(f"{N} live `cat` children of the daemon", len(live_cats) == N,
          f"{len(live_cats)} (children {len(idle['children'])})")
    per_daemon = (idle["rss"] - base["rss"]) / N
    per_holder = (hidle["rss"] - hbase["rss"]) / N
    per = per_daemon + per_holder
    per_anon = (idle["anon"] - base["anon"] + hidle["anon"] - hbase["anon"]) / N
    note(f"memory per idle session: {per:.2f} KiB VmRSS (daemon {per_daemon:.2f}, holder {per_holder:.2f}; "
         f"{per_anon:.2f} KiB RssAnon), {(idle['fds'] - base['fds']) / N:.2f} fds in the daemon, "
         f"{(hidle['fds'] - hbase['fds']) / N:.2f} in the holder")
    # Under AddressSanitizer (tools/dev sanitize) redzones and quarantine make RSS meaningless.
    # (gcc links libasan.so; clang links its runtime in, so look for the runtime's entry.)
    with open(uexec, "rb") as f:
        sanitized = b"__asan_init" in f.read()
    check(f"idle daemon + holder memory per session <= {PER_SESSION_KIB:g} KiB", sanitized or per <= PER_SESSION_KIB,
          f"{per:.2f} KiB/session: daemon VmRSS {base['rss']} -> {idle['rss']} KiB, "
          f"holder {hbase['rss']} -> {hidle['rss']} KiB")

    # 5. Kill all, then nothing may remain.
    t_kill = time.monotonic()
    live = terminate_batch(client, keys, DEADLINE - 8)
    note(f"{len(live)} terminated and closed in {time.monotonic() - t_kill:.2f} s")
    bad, d = summarize_failures(live, "terminate", lambda p: p.term is not None and "result" in p.term,
                                lambda p: json.dumps(p.term)[:200])
    check("every process/terminate answered", not bad, d)
    bad, d = summarize_failures(live, "closed", lambda p: p.exited and p.closed,
                                lambda p: f"exited={p.exited} closed={p.closed}")
    check("every process sends exited and closed", not bad, d)
    # Give the daemon a moment, then poll until its children are gone and its fd table is
    # back, or the deadline passes (a deadline, not a threshold).
    time.sleep(0.5)
    wait_for(lambda: not children(dpid) and fd_count(dpid) <= base["fds"], min(DEADLINE, time.monotonic() + 15))
    client.pump(0)
    end = snapshot(dpid, "after killing all")
    zombies = [c for c in end["children"] if c[2] == "Z"]
    cats = [c for c in end["children"] if c[1] == "cat"]
    check("no zombie child of the daemon", not zombies, str(zombies[:10]))
    check("no `cat` child left", not cats, str(cats[:10]))
    check("no child at all left", not end["children"], str(end["children"][:10]))
    stray = [p for p in pids if os.path.exists(f"/proc/{p}")
             and open(f"/proc/{p}/comm").read().strip() == "cat"]
    check("none of the started cats is alive (reparented or not)", not stray, str(stray[:10]))
    end_fd_map = fd_targets(dpid)
    extra = {fd: t for fd, t in end_fd_map.items() if base_fd_map.get(fd) != t}
    missing = {fd: t for fd, t in base_fd_map.items() if end_fd_map.get(fd) != t}
    check("fd count back to the baseline", end["fds"] == base["fds"],
          f"baseline {base['fds']}, now {end['fds']}; new {dict(list(extra.items())[:10])}, "
          f"gone {dict(list(missing.items())[:10])}")
    wait_for(lambda: fd_count(hpid) <= hbase["fds"], min(DEADLINE, time.monotonic() + 10))
    check("the holder's fd count back to its baseline", fd_count(hpid) == hbase["fds"],
          f"baseline {hbase['fds']}, now {fd_count(hpid)}")
    check("the connection saw no unexpected message", not client.bad, str(client.bad[:3]))
    note(f"figures: baseline {base['rss']} KiB / {base['fds']} fds (fresh daemon {fds_fresh} fds); "
         f"idle {idle['rss']} KiB / {idle['fds']} fds; end {end['rss']} KiB / {end['fds']} fds; "
         f"{per:.2f} KiB per session")
except SystemExit:
    pass
except Exception as e:  # report, then clean up below
    import traceback
    traceback.print_exc()
    check("the test ran to the end", False, repr(e))
finally:
    if client is not None:
        try:
            client.close()
        except OSError:
            pass
    if server is not None:
        # The daemon's own children, in case we end before it can terminate them.
        kids = [c[0] for c in children(server.pid)] if server.poll() is None else []
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                rc = server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                rc = server.wait()
            if failed == 0:
                check("SIGTERM: the daemon exits 0", rc == 0, str(rc))
        else:
            check("the daemon was still running at the end", False, f"exit {server.returncode}")
        # Anything we started that is still a live `cat` (SIGKILL only our own processes).
        ours = set(kids) | {p.os_pid for p in procs.values() if p.os_pid}
        # A pid is taken for ours only if it is still a `cat` leading its own session (the
        # daemon setsid()s every child), so a recycled pid is never hit.
        for p in ours:
            try:
                with open(f"/proc/{p}/stat") as f:
                    st = f.read()
                fields = st[st.rfind(")") + 2:].split()
                if st[st.find("(") + 1:st.rfind(")")] == "cat" and int(fields[3]) == p:
                    os.kill(p, signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass
    log.close()
    if failed:
        try:
            with open(log_path, "rb") as f:
                tail = f.read()[-3000:]
            print("---- daemon log (tail) ----")
            print(tail.decode(errors="replace"))
        except OSError:
            pass
    shutil.rmtree(tmp, ignore_errors=True)

print(f"daemon-scale: {passed} passed, {failed} failed")
sys.exit(0 if failed == 0 and passed > 0 else 1)
