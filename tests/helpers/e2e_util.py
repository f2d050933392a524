"""What the Python end-to-end suites share: a pass/fail tally and a JSON-RPC peer on a child's
stdin/stdout (one message per line). Import it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
    from e2e_util import Checks, Peer
"""
import json
import os
import select
import subprocess


class Checks:
    """Prints `ok   NAME` or `FAIL NAME DETAIL` per check; exit_code() is 1 after any failure."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name} {str(detail)[:600]}", flush=True)
        return ok

    def exit_code(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


class Peer:
    """One JSON-RPC peer over a child's stdin/stdout, one message per line. Notifications that
    arrive while a reply is awaited are kept in `notes`."""

    def __init__(self, argv, env=None, cwd=None, stderr=subprocess.DEVNULL):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                  env=env, cwd=cwd)
        self.next_id = 1
        self.buf = b""
        self.notes = []

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())
        self.p.stdin.flush()

    def _line(self, timeout):
        while b"\n" not in self.buf:
            r, _, _ = select.select([self.p.stdout], [], [], timeout)
            if not r:
                raise TimeoutError("no reply")
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("peer closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params, timeout=30):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            m = self._line(timeout)
            if m.get("id") == rid and "method" not in m:
                return m
            self.notes.append(m)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=20)


class McpClient(Peer):
    """`uexec mcp` (or any MCP server on stdio), initialized; tool() calls a tool."""

    def __init__(self, argv, env=None, cwd=None):
        super().__init__(argv, env=env, cwd=cwd)
        self.init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                "clientInfo": {"name": "e2e", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tool(self, name, args, timeout=60):
        """The tool result, and the text of its content."""
        r = self.request("tools/call", {"name": name, "arguments": args}, timeout)
        res = r.get("result", {})
        return res, "".join(c.get("text", "") for c in res.get("content", []))


def daemon_pid(holder_pid, timeout=10.0):
    """The daemon under a `uexec serve` holder (holder/holder.h: the serve process is the holder,
    the daemon its child named uexec), or None."""
    import time
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(f"/proc/{holder_pid}/task/{holder_pid}/children") as f:
                kids = [int(p) for p in f.read().split()]
        except OSError:
            return None
        for k in kids:
            try:
                with open(f"/proc/{k}/comm") as f:
                    if f.read().strip() == "uexec":
                        return k
            except OSError:
                pass
        time.sleep(0.02)
    return None


def kill_serve_hard(popen):
    """SIGKILL a `uexec serve` and its daemon both, as a machine crash would: the holder first
    (or it would start the daemon again), then the daemon (which would run on without it). The
    caller becomes a child subreaper first, so that the daemon, orphaned, is its child to reap:
    a zombie would still count as a running daemon (pid and start time)."""
    import ctypes
    import signal
    import time
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    daemon = daemon_pid(popen.pid, timeout=1.0)
    popen.send_signal(signal.SIGKILL)
    popen.wait()
    if not daemon:
        return
    try:
        os.kill(daemon, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if os.waitpid(daemon, os.WNOHANG)[0] == daemon:
                return
        except ChildProcessError:  # not (yet) re-parented to us: wait until it is gone
            if not os.path.exists(f"/proc/{daemon}"):
                return
        time.sleep(0.01)


class Proto:
    """A raw native-protocol client on a daemon's Unix socket (one JSON object per line):
    initialize with `params`, then call() waits for its answer (notifications are skipped)."""

    def __init__(self, sock, params):
        import socket
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(sock)
        self.f = self.s.makefile("rwb")
        self.next = 1
        self.init = self.call("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "initialized"})

    def send(self, obj):
        self.f.write(json.dumps(obj).encode() + b"\n")
        self.f.flush()

    def call(self, method, params):
        i = self.next
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        while True:
            line = self.f.readline()
            if not line:
                raise ConnectionError("closed")
            m = json.loads(line)
            if m.get("id") == i:
                return m

    def close(self):
        self.s.close()


def wait_for(cond, seconds=20, step=0.05):
    """cond()'s first true value within `seconds`, polled every `step`; else its last value."""
    import time
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


class Cli:
    """The uexec CLI against one daemon: run(*args) and ls() (`uexec ls` as {id: {pid, state, exit}})."""

    def __init__(self, uexec, env):
        self.uexec = uexec
        self.env = env

    def run(self, *args, timeout=60):
        return subprocess.run([self.uexec, *args], env=self.env, capture_output=True, timeout=timeout)

    def ls(self):
        rows = {}
        for line in self.run("ls").stdout.decode().splitlines()[1:]:
            f = line.split()
            if len(f) >= 6:
                rows[f[0]] = {"pid": f[2], "state": f[3], "exit": f[5]}
        return rows


def start_sandboxed(proto, marks, check):
    """A namespaces and a Landlock sandbox (tty) over `proto`, each recording SIGHUP to `marks`,
    waiting for a line, then printing it and exiting 3 and 4. {backend: exit code} of those that
    started (Landlock may be missing on this kernel; namespaces must start)."""
    started = {}
    for backend, code in (("namespaces", 3), ("landlock", 4)):
        r = proto.call("process/start", {"processId": f"sb-{backend}", "tty": True, "subscribe": False,
                                         "argv": ["sh", "-c", f'trap "echo HUP-{backend} >> {marks}" HUP; read x; '
                                                  f'cat /etc/hostname >/dev/null; echo "sb-got:$x"; exit {code}'],
                                         "sandbox": {"mode": "workspace-write", "backend": backend}})
        if "result" in r:
            started[backend] = code
        elif backend == "namespaces":
            check("a namespaces sandbox starts", False, json.dumps(r)[:300])
        else:
            print(f"note: no {backend} sandbox here: {json.dumps(r)[:200]}")
    return started
