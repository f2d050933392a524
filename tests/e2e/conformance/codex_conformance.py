#!/usr/bin/env python3
"""Codex exec-server conformance client (docs/protocol.md §1–§3).

Usage: codex_conformance.py SERVER_ARGV...
  e.g. codex_conformance.py build/src/uexec exec-server --listen stdio
       codex_conformance.py node_modules/.bin/codex exec-server --listen stdio

Speaks only the Codex exec-server 0.169.0 subset (initialize, initialized, process/*, environment/info,
environment/status, fs/*) over NDJSON on the server's stdin/stdout and checks only behaviour that uexec and Codex share
(docs/protocol.md §3 minus the deliberate differences of §3.8). Extra result members are accepted.
Responses are matched by id, because a server may put notifications between responses or answer out of order.

Prints one line per failed check and a final line `conformance: N passed, M failed`; exits 1 on any failure.
Standard library only (Python >= 3.8).
"""

import base64
import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

OVERALL_BUDGET_S = 55.0
T0 = time.monotonic()

passed = 0
failed = 0


def check(cond, name, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        msg = f"FAIL: {name}"
        if detail:
            msg += f" -- {detail}"
        print(msg, flush=True)
    return bool(cond)


def short(obj, limit=400):
    s = json.dumps(obj, sort_keys=True) if not isinstance(obj, str) else obj
    return s if len(s) <= limit else s[:limit] + "..."


def b64(data):
    return base64.b64encode(data).decode("ascii")


def unb64(s):
    try:
        return base64.b64decode(s, validate=True)
    except Exception:
        return None


def tool(name):
    path = shutil.which(name, path="/usr/bin:/bin")
    if path is None:
        print(f"conformance: required tool {name!r} not found", file=sys.stderr)
        sys.exit(2)
    return path


SH = tool("sh")
SLEEP = tool("sleep")
HEAD = tool("head")
CAT = tool("cat")
ENV = tool("env")
PWD = tool("pwd")
TTY = tool("tty")
CHILD_PATH = "/usr/bin:/bin"


class Server:
    """One NDJSON connection to a server child process on its stdin/stdout."""

    def __init__(self, argv):
        self.errlog = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errlog)
        self.fd = self.proc.stdout.fileno()
        self.buf = b""
        self.eof = False
        self.next_id = 1
        self.responses = {}  # id (json-encoded) -> message
        self.events = {}  # processId -> [(arrival index, method, params)]
        self.arrival = 0
        self.junk = []  # stdout lines that are not JSON-RPC messages

    # --- transport -------------------------------------------------------------------------------------------
    def send_line(self, raw):
        try:
            self.proc.stdin.write(raw.encode() + b"\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def send(self, obj):
        return self.send_line(json.dumps(obj, separators=(",", ":")))

    def pump(self, timeout):
        """Read whatever arrives within `timeout` seconds (at most one select wait)."""
        if self.eof:
            time.sleep(min(timeout, 0.05))
            return
        r, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not r:
            return
        data = os.read(self.fd, 1 << 20)
        if not data:
            self.eof = True
            return
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            line = line.rstrip(b"\r")
            if line.strip():
                self._dispatch(line)

    def _dispatch(self, line):
        self.arrival += 1
        try:
            msg = json.loads(line)
        except ValueError:
            self.junk.append(line[:200])
            return
        if not isinstance(msg, dict):
            self.junk.append(line[:200])
            return
        if "method" in msg and "id" not in msg:
            params = msg.get("params") or {}
            pid = params.get("processId") if isinstance(params, dict) else None
            self.events.setdefault(pid, []).append((self.arrival, msg["method"], params))
        elif "id" in msg and ("result" in msg or "error" in msg):
            key = json.dumps(msg["id"])
            self.responses[key] = msg
        else:
            self.junk.append(line[:200])

    def wait_until(self, pred, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if pred():
                return True
            left = deadline - time.monotonic()
            if left <= 0 or (self.eof and not self.buf):
                return pred()
            self.pump(min(left, 0.25))

    # --- JSON-RPC ----------------------------------------------------------------------------------------------
    def request_async(self, method, params=None, req_id=None):
        if req_id is None:
            req_id = self.next_id
            self.next_id += 1
        msg = {"id": req_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return req_id

    def wait_response(self, req_id, timeout=5.0):
        key = json.dumps(req_id)
        self.wait_until(lambda: key in self.responses, timeout)
        return self.responses.pop(key, None)

    def request(self, method, params=None, timeout=5.0, req_id=None):
        rid = self.request_async(method, params, req_id)
        return self.wait_response(rid, timeout)

    def notify(self, method, params=None):
        msg = {"method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    # --- process events ----------------------------------------------------------------------------------------
    def evs(self, pid):
        return self.events.get(pid, [])

    def has_event(self, pid, method):
        return any(m == method for _, m, _ in self.evs(pid))

    def wait_event(self, pid, method, timeout=5.0):
        return self.wait_until(lambda: self.has_event(pid, method), timeout)

    def event(self, pid, method):
        for _, m, p in self.evs(pid):
            if m == method:
                return p
        return None

    def output(self, pid, stream=None):
        out = b""
        for _, m, p in sorted(self.evs(pid), key=lambda e: e[2].get("seq", 0)):
            if m == "process/output" and (stream is None or p.get("stream") == stream):
                out += unb64(p.get("chunk", "")) or b""
        return out

    def stderr_tail(self):
        try:
            self.errlog.seek(0)
            return self.errlog.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""


class WsConn(Server):
    """One JSON-RPC connection over WebSocket (one message per text frame), for the sections that
    need a server with sessions (resume). Minimal RFC 6455 client: masked text frames out, text,
    ping and close frames in."""

    def __init__(self, url):
        import socket
        host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
        self.sock = socket.create_connection((host, port), timeout=5)
        key = b64(os.urandom(16))
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise OSError("closed during the WebSocket handshake")
            head += chunk
        head, self.raw = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise OSError(f"upgrade refused: {head[:200]!r}")
        self.fd = self.sock.fileno()
        self.buf = b""
        self.eof = False
        self.next_id = 1
        self.responses = {}
        self.events = {}
        self.arrival = 0
        self.junk = []
        self._frames()

    def send_line(self, raw):
        data = raw.encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                               bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536 else
                               bytes([0x80 | 127]) + n.to_bytes(8, "big"))
        try:
            self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
            return True
        except OSError:
            return False

    def _frames(self):
        while len(self.raw) >= 2:
            op, n, at = self.raw[0] & 0x0F, self.raw[1] & 0x7F, 2
            if n == 126:
                n, at = int.from_bytes(self.raw[2:4], "big"), 4
            elif n == 127:
                n, at = int.from_bytes(self.raw[2:10], "big"), 10
            if len(self.raw) < at + n:
                return
            payload, self.raw = self.raw[at:at + n], self.raw[at + n:]
            if op == 0x1:
                self._dispatch(payload)
            elif op == 0x8:
                self.eof = True
            elif op == 0x9:
                self.sock.sendall(bytes([0x8A, 0x80]) + os.urandom(4))

    def pump(self, timeout):
        if self.eof:
            time.sleep(min(timeout, 0.05))
            return
        r, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not r:
            return
        try:
            data = self.sock.recv(1 << 20)
        except OSError:
            data = b""
        if not data:
            self.eof = True
            return
        self.raw += data
        self._frames()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# --- helpers -------------------------------------------------------------------------------------------------------
def result_of(name, resp):
    """Return the result dict, or record a failure and return None."""
    if resp is None:
        check(False, name, "no response (timeout)")
        return None
    if "error" in resp:
        check(False, name, f"unexpected error {short(resp['error'])}")
        return None
    res = resp.get("result")
    if not check(isinstance(res, dict), name, f"result is not an object: {short(resp)}"):
        return None
    return res


def expect_error(name, resp, code, message=None, contains=None, prefix=None):
    if resp is None:
        return check(False, name, "no response (timeout)")
    err = resp.get("error")
    if not isinstance(err, dict):
        return check(False, name, f"expected error {code}, got {short(resp)}")
    ok = err.get("code") == code and isinstance(err.get("message"), str)
    msg = err.get("message", "")
    if ok and message is not None:
        ok = msg == message
    if ok and contains is not None:
        ok = contains in msg
    if ok and prefix is not None:
        ok = msg.startswith(prefix)
    want = f"code {code}"
    if message is not None:
        want += f" message {message!r}"
    if contains is not None:
        want += f" message containing {contains!r}"
    if prefix is not None:
        want += f" message starting {prefix!r}"
    return check(ok, name, f"expected {want}, got {short(err)}")


@contextlib.contextmanager
def scratch_dir(prefix):
    """A fresh directory for one section, removed when it ends however it ends."""
    top = tempfile.mkdtemp(prefix=prefix)
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def file_uri(path):
    return "file://" + urllib.parse.quote(path)


def start_params(pid, argv, env=None, cwd=None, tty=False, pipe_stdin=None):
    params = {
        "processId": pid,
        "argv": argv,
        "cwd": cwd or file_uri(tempfile.gettempdir()),
        "env": {} if env is None else env,
        "tty": tty,
    }
    if pipe_stdin is not None:
        params["pipeStdin"] = pipe_stdin
    return params


def start(srv, name, pid, argv, **kw):
    resp = srv.request("process/start", start_params(pid, argv, **kw))
    res = result_of(f"{name}: process/start {pid}", resp)
    if res is not None:
        check(res.get("processId") == pid, f"{name}: start result processId", short(res))
        check(isinstance(res.get("sandboxType"), str), f"{name}: start result sandboxType is a string", short(res))
        # Not checked: uexec writes the start response before any notification of the process (docs/protocol.md §1),
        # but Codex 0.169.0 sometimes sends output/exited ahead of it.
    return res


def wait_done(srv, pid, timeout):
    """Wait for both exited and closed of `pid`, then briefly collect stragglers."""
    ok = srv.wait_until(lambda: srv.has_event(pid, "process/closed") and srv.has_event(pid, "process/exited"), timeout)
    srv.pump(0.05)
    return ok


def check_event_stream(srv, name, pid, exit_code=None):
    """Seq rules of docs/protocol.md §3.6 for a process whose closed event has arrived."""
    evs = srv.evs(pid)
    seqs = [p.get("seq") for _, _, p in evs]
    check(all(isinstance(s, int) for s in seqs), f"{name}: every notification has an integer seq", short(seqs))
    if not all(isinstance(s, int) for s in seqs):
        return None
    # Output chunks of each stream reach the client in seq order. Codex 0.169.0 may send `exited` ahead of an output
    # notification that has a lower seq, so the position of `exited` is not checked. It also reads a pipe process's
    # stdout and stderr in separate tasks, so under load chunks of the two streams can cross (seen in CI: [2, 1, 3,
    # 4]); the order holds per stream. And on pipes its `closed` can arrive just before `exited` (seen in CI:
    # [output, output, closed, exited]), so `closed` is checked to carry the last seq rather than to arrive last.
    # (uexec keeps one global arrival order, closed last; tests/e2e/node checks it.)
    for stream in ("pty", "stdout", "stderr"):
        out_seqs = [p.get("seq") for _, m, p in evs if m == "process/output" and p.get("stream") == stream]
        check(out_seqs == sorted(out_seqs), f"{name}: {stream} output notifications arrive in seq order", str(seqs))
    check(len(set(seqs)) == len(seqs), f"{name}: seqs are not reused", str(seqs))
    check(sorted(seqs) == list(range(1, len(seqs) + 1)), f"{name}: seq is shared, starts at 1, no holes", str(seqs))
    methods = [m for _, m, _ in evs]
    check(methods.count("process/exited") == 1, f"{name}: exactly one process/exited", str(methods))
    check(methods.count("process/closed") == 1, f"{name}: exactly one process/closed", str(methods))
    closed_seqs = [p.get("seq") for _, m, p in evs if m == "process/closed"]
    check(bool(closed_seqs) and closed_seqs[-1] == max(seqs), f"{name}: process/closed carries the last seq",
          str([(m, p.get("seq")) for _, m, p in evs]))
    exited = srv.event(pid, "process/exited")
    if exited is not None:
        check(isinstance(exited.get("exitCode"), int), f"{name}: exited.exitCode is an int", short(exited))
        check(exited.get("sandboxDenied") is False, f"{name}: exited.sandboxDenied is false", short(exited))
        if exit_code is not None:
            check(exited.get("exitCode") == exit_code, f"{name}: exitCode == {exit_code}", short(exited))
    bad = [p for _, m, p in evs if m == "process/output"
           and not (p.get("stream") in ("stdout", "stderr", "pty") and unb64(p.get("chunk", "")) is not None)]
    check(not bad, f"{name}: every output has a stream and a base64 chunk", short(bad))
    closed = srv.event(pid, "process/closed")
    if closed is not None and seqs:
        check(closed.get("seq") == max(seqs), f"{name}: closed has the highest seq", str(seqs))
    return closed.get("seq") if closed else None


def read_shape(name, res):
    check(isinstance(res.get("chunks"), list), f"{name}: chunks is a list", short(res))
    check(isinstance(res.get("nextSeq"), int), f"{name}: nextSeq is an int", short(res))
    check(isinstance(res.get("exited"), bool), f"{name}: exited is a bool", short(res))
    check("exitCode" in res and (res["exitCode"] is None or isinstance(res["exitCode"], int)),
          f"{name}: exitCode is int|null", short(res))
    check(isinstance(res.get("closed"), bool), f"{name}: closed is a bool", short(res))
    check("failure" in res and (res["failure"] is None or isinstance(res["failure"], str)),
          f"{name}: failure is string|null", short(res))
    check(isinstance(res.get("sandboxDenied"), bool), f"{name}: sandboxDenied is a bool", short(res))
    chunks = res.get("chunks") if isinstance(res.get("chunks"), list) else []
    bad = [c for c in chunks if not (isinstance(c, dict) and isinstance(c.get("seq"), int)
                                     and c.get("stream") in ("stdout", "stderr", "pty")
                                     and unb64(c.get("chunk", "")) is not None)]
    check(not bad, f"{name}: every chunk has seq, stream and a base64 chunk", short(bad))
    seqs = [c.get("seq") for c in chunks if isinstance(c, dict)]
    check(seqs == sorted(seqs), f"{name}: chunks in seq order", str(seqs))
    return chunks


def output_triples(srv, pid):
    return [(p["seq"], p["stream"], p["chunk"]) for _, m, p in sorted(srv.evs(pid), key=lambda e: e[2].get("seq", 0))
            if m == "process/output"]


def chunk_triples(chunks):
    return [(c.get("seq"), c.get("stream"), c.get("chunk")) for c in chunks]


# --- test sections ------------------------------------------------------------------------------------------------
def test_handshake(srv):
    n = "handshake"
    r = srv.request("environment/status", {})
    expect_error(f"{n}: environment/status before initialize", r, -32600,
                 message="client must call initialize before using environment status methods")
    r = srv.request("environment/info", {})
    expect_error(f"{n}: environment/info before initialize", r, -32600)
    r = srv.request("process/read", {"processId": "gate"})
    expect_error(f"{n}: process/read before initialize", r, -32600,
                 message="client must call initialize before using exec methods")
    r = srv.request("process/start", start_params("gate", [SH, "-c", "exit 0"]))
    expect_error(f"{n}: process/start before initialize", r, -32600,
                 message="client must call initialize before using exec methods")

    r = srv.request("initialize", {"clientName": "codex-conformance"}, req_id="init-1")
    check(r is not None and r.get("id") == "init-1", f"{n}: string id echoed exactly", short(r))
    res = result_of(f"{n}: initialize", r)
    info = None
    if res is not None:
        check(isinstance(res.get("sessionId"), str) and res["sessionId"], f"{n}: initialize.sessionId", short(res))
        info = res.get("environmentInfo")
        check(isinstance(info, dict), f"{n}: initialize.environmentInfo is an object", short(res))

    r = srv.request("process/read", {"processId": "gate"})
    expect_error(f"{n}: process/read before initialized", r, -32600,
                 message="client must send initialized before using exec methods")
    r = srv.request("initialize", {"clientName": "codex-conformance"})
    expect_error(f"{n}: second initialize before initialized", r, -32600,
                 message="initialize may only be sent once per connection")
    srv.notify("initialized", {})
    r = srv.request("initialize", {"clientName": "codex-conformance"})
    expect_error(f"{n}: second initialize after initialized", r, -32600,
                 message="initialize may only be sent once per connection")
    r = srv.request("process/read", {"processId": "gate"})
    expect_error(f"{n}: gate opens after initialized (unknown process)", r, -32600,
                 message="unknown process id gate")
    return info


def test_environment(srv, init_info):
    n = "environment"
    info = result_of(f"{n}: environment/info", srv.request("environment/info", {}))
    if info is not None:
        shell = info.get("shell")
        check(isinstance(shell, dict) and isinstance(shell.get("name"), str) and isinstance(shell.get("path"), str),
              f"{n}: shell {{name, path}}", short(info))
        check(info.get("executorVersion") == "0.169.0", f"{n}: executorVersion 0.169.0", short(info))
        check(isinstance(info.get("providerId"), str) and info["providerId"].startswith("sha256:"),
              f"{n}: providerId sha256:<hex>", short(info))
        for key in ("cwd", "userHomeDir", "tempDir"):
            check(isinstance(info.get(key), str) and info[key].startswith("file://"), f"{n}: {key} is a file URI",
                  short(info))
        check(info.get("platformOs") == "linux", f"{n}: platformOs linux", short(info))
        for key in ("prependPathDirs", "temporaryDirectories"):
            v = info.get(key)
            check(isinstance(v, list) and all(isinstance(x, str) and x.startswith("file://") for x in v),
                  f"{n}: {key} is a list of file URIs", short(info))
        caps = info.get("capabilities")
        check(isinstance(caps, dict) and all(isinstance(v, bool) for v in caps.values()),
              f"{n}: capabilities is an object of booleans", short(info))
        if isinstance(init_info, dict):
            same = all(init_info.get(k) == info.get(k) for k in ("executorVersion", "platformOs", "providerId", "cwd"))
            check(same, f"{n}: initialize.environmentInfo matches environment/info", short(init_info))
    st = result_of(f"{n}: environment/status", srv.request("environment/status", {}))
    if st is not None:
        check(st.get("status") == "ready", f"{n}: status ready", short(st))
    # Missing params means {}.
    st = result_of(f"{n}: environment/status without params", srv.request("environment/status"))
    if st is not None:
        check(st.get("status") == "ready", f"{n}: status ready (no params)", short(st))


def test_pipes_and_read(srv):
    n = "pipes"
    pid = "pipes-1"
    start(srv, n, pid, [SH, "-c", "echo out; echo err >&2; exit 3"], env={"PATH": CHILD_PATH})
    if not check(wait_done(srv, pid, 5), f"{n}: exited and closed arrive"):
        return
    srv.pump(0.2)
    closed_seq = check_event_stream(srv, n, pid, exit_code=3)
    check(srv.output(pid, "stdout") == b"out\n", f"{n}: stdout bytes", repr(srv.output(pid, "stdout")))
    check(srv.output(pid, "stderr") == b"err\n", f"{n}: stderr bytes", repr(srv.output(pid, "stderr")))
    triples = output_triples(srv, pid)

    res = result_of(f"{n}: read afterSeq 0", srv.request("process/read", {"processId": pid, "afterSeq": 0}))
    if res is not None:
        chunks = read_shape(f"{n}: read afterSeq 0", res)
        check(chunk_triples(chunks) == triples, f"{n}: read returns the notified chunks",
              f"{chunk_triples(chunks)} vs {triples}")
        check(res.get("exited") is True and res.get("exitCode") == 3 and res.get("closed") is True,
              f"{n}: read exited/exitCode/closed", short(res))
        check(res.get("failure") is None and res.get("sandboxDenied") is False, f"{n}: read failure/sandboxDenied",
              short(res))
        if closed_seq is not None:
            check(res.get("nextSeq") == closed_seq + 1, f"{n}: nextSeq counts exited/closed",
                  f"nextSeq {res.get('nextSeq')} closed seq {closed_seq}")
    res = result_of(f"{n}: read without afterSeq", srv.request("process/read", {"processId": pid}))
    if res is not None:
        check(chunk_triples(res.get("chunks", [])) == triples, f"{n}: afterSeq defaults to 0", short(res))
    if triples:
        first = triples[0][0]
        res = result_of(f"{n}: read afterSeq first", srv.request("process/read", {"processId": pid, "afterSeq": first}))
        if res is not None:
            check(chunk_triples(res.get("chunks", [])) == [t for t in triples if t[0] > first],
                  f"{n}: read afterSeq={first} returns only later chunks", short(res))
    if closed_seq is not None:
        res = result_of(f"{n}: read afterSeq last",
                        srv.request("process/read", {"processId": pid, "afterSeq": closed_seq}))
        if res is not None:
            read_shape(f"{n}: read afterSeq last", res)
            check(res.get("chunks") == [] and res.get("nextSeq") == closed_seq + 1,
                  f"{n}: read afterSeq=<last seen> is empty with the same nextSeq", short(res))

    # Write to an exited process that had no stdin pipe.
    r = result_of(f"{n}: write to exited process",
                  srv.request("process/write", {"processId": pid, "chunk": b64(b"x\n"), "writeId": "late-1"}))
    if r is not None:
        check(r.get("status") == "stdinClosed", f"{n}: write to exited process -> stdinClosed", short(r))
    # Duplicate processId (the retained, closed process still owns the id).
    r = srv.request("process/start", start_params(pid, [SH, "-c", "exit 0"]))
    expect_error(f"{n}: duplicate processId", r, -32600, message=f"process {pid} already exists")
    # Terminate after exit.
    r = result_of(f"{n}: terminate exited process", srv.request("process/terminate", {"processId": pid}))
    if r is not None:
        check(r.get("running") is False, f"{n}: terminate after exit -> running false", short(r))


def test_max_bytes(srv):
    n = "maxBytes"
    pid = "chunks-1"
    start(srv, n, pid, [SH, "-c", "printf a; sleep 0.3; printf bb; sleep 0.3; printf ccc"], env={"PATH": CHILD_PATH})
    if not check(wait_done(srv, pid, 5), f"{n}: exited and closed arrive"):
        return
    closed_seq = check_event_stream(srv, n, pid, exit_code=0)
    triples = output_triples(srv, pid)
    check(srv.output(pid) == b"abbccc", f"{n}: output bytes", repr(srv.output(pid)))
    if not check(len(triples) >= 2, f"{n}: several output chunks", str(triples)):
        return
    res = result_of(f"{n}: read maxBytes 1",
                    srv.request("process/read", {"processId": pid, "afterSeq": 0, "maxBytes": 1}))
    if res is None:
        return
    chunks = read_shape(f"{n}: read maxBytes 1", res)
    check(chunk_triples(chunks) == triples[:1], f"{n}: maxBytes 1 returns exactly one whole chunk",
          f"{chunk_triples(chunks)} vs {triples[:1]}")
    check(res.get("nextSeq") == triples[0][0] + 1, f"{n}: nextSeq is last returned seq + 1 when chunks were left out",
          short(res))
    nxt = res.get("nextSeq")
    if isinstance(nxt, int):
        res = result_of(f"{n}: read afterSeq nextSeq-1",
                        srv.request("process/read", {"processId": pid, "afterSeq": nxt - 1}))
        if res is not None:
            check(chunk_triples(res.get("chunks", [])) == triples[1:], f"{n}: afterSeq=nextSeq-1 returns exactly the rest",
                  short(res))
            if closed_seq is not None:
                check(res.get("nextSeq") == closed_seq + 1, f"{n}: final nextSeq", short(res))


def test_long_poll(srv):
    n = "waitMs"
    pid = "late-1"
    start(srv, n, pid, [SH, "-c", "sleep 0.7; echo late; sleep 3"], env={"PATH": CHILD_PATH})
    t = time.monotonic()
    res = result_of(f"{n}: quiet long poll", srv.request("process/read",
                                                          {"processId": pid, "afterSeq": 0, "waitMs": 250}))
    dt = time.monotonic() - t
    if res is not None:
        check(res.get("chunks") == [] and res.get("exited") is False and res.get("closed") is False,
              f"{n}: quiet long poll times out empty", short(res))
        check(res.get("nextSeq") == 1, f"{n}: nextSeq 1 before any event", short(res))
        check(0.2 <= dt < 0.7, f"{n}: quiet long poll honours waitMs", f"{dt:.3f}s")
    t = time.monotonic()
    res = result_of(f"{n}: long poll", srv.request("process/read", {"processId": pid, "afterSeq": 0, "waitMs": 8000},
                                                   timeout=10))
    dt = time.monotonic() - t
    if res is not None:
        data = b"".join(unb64(c.get("chunk", "")) or b"" for c in res.get("chunks", []))
        check(b"late" in data and res.get("exited") is False, f"{n}: long poll returns the output", short(res))
        check(dt < 2.5, f"{n}: long poll returns when output arrives, not at timeout or exit", f"{dt:.3f}s")
    r = result_of(f"{n}: terminate", srv.request("process/terminate", {"processId": pid}))
    if r is not None:
        check(r.get("running") is True, f"{n}: terminate running process -> running true", short(r))
    check(wait_done(srv, pid, 5), f"{n}: closed after terminate")


def test_write(srv):
    n = "write"
    pid = "stdin-1"
    start(srv, n, pid, [HEAD, "-n", "2"], env={}, pipe_stdin=True)
    line1 = b"\xfb\xff-1\n"  # base64 "+/8tMQo=": standard alphabet with + and /
    check(b64(line1) == "+/8tMQo=", f"{n}: test vector")
    r = result_of(f"{n}: write w1", srv.request("process/write",
                                                 {"processId": pid, "chunk": b64(line1), "writeId": "w1"}))
    if r is not None:
        check(r.get("status") == "accepted", f"{n}: write -> accepted", short(r))
    r = result_of(f"{n}: repeated w1", srv.request("process/write",
                                                    {"processId": pid, "chunk": b64(line1), "writeId": "w1"}))
    if r is not None:
        check(r.get("status") == "accepted", f"{n}: repeated writeId gets the first status", short(r))
    r = result_of(f"{n}: write w2", srv.request("process/write",
                                                 {"processId": pid, "chunk": b64(b"two\n"), "writeId": "w2"}))
    if r is not None:
        check(r.get("status") == "accepted", f"{n}: second writeId -> accepted", short(r))
    if check(wait_done(srv, pid, 5), f"{n}: exited and closed arrive"):
        check_event_stream(srv, n, pid, exit_code=0)
        out = srv.output(pid, "stdout")
        check(out == line1 + b"two\n", f"{n}: repeated writeId wrote once, base64 decoded",
              f"got {out!r}, want {line1 + b'two' + bytes([10])!r}")

    r = result_of(f"{n}: write unknown", srv.request("process/write",
                                                      {"processId": "no-such-proc", "chunk": b64(b"x"),
                                                       "writeId": "u1"}))
    if r is not None:
        check(r.get("status") == "unknownProcess", f"{n}: write to unknown -> unknownProcess", short(r))

    # A running process whose stdin is not a pipe.
    pid2 = "nostdin-1"
    start(srv, n, pid2, [SLEEP, "30"], env={})
    r = result_of(f"{n}: write without pipeStdin", srv.request("process/write",
                                                               {"processId": pid2, "chunk": b64(b"x\n"),
                                                                "writeId": "n1"}))
    if r is not None:
        check(r.get("status") == "stdinClosed", f"{n}: write without pipeStdin -> stdinClosed", short(r))
    r = srv.request("process/write", {"processId": pid2, "chunk": "!!not base64", "writeId": "n2"})
    expect_error(f"{n}: undecodable base64", r, -32602)
    srv.request("process/terminate", {"processId": pid2})
    check(wait_done(srv, pid2, 5), f"{n}: cleanup closed")


def test_signal_terminate(srv):
    n = "signal"
    pid = "sig-1"
    start(srv, n, pid, [SLEEP, "30"], env={})
    r = result_of(f"{n}: interrupt", srv.request("process/signal", {"processId": pid, "signal": "interrupt"}))
    if check(wait_done(srv, pid, 5), f"{n}: closed after interrupt"):
        check_event_stream(srv, n, pid, exit_code=130)
    r = srv.request("process/signal", {"processId": pid, "signal": "no-such-signal"})
    expect_error(f"{n}: unknown signal name", r, -32602, prefix="unknown variant")

    n = "terminate"
    pid = "term-1"
    start(srv, n, pid, [SLEEP, "30"], env={})
    t = time.monotonic()
    r = result_of(f"{n}: terminate", srv.request("process/terminate", {"processId": pid}))
    if r is not None:
        check(r.get("running") is True, f"{n}: running true while running", short(r))
    # Codex kills at once; uexec sends TERM, then KILL after 1 s. Either way the exit is reported soon.
    check(srv.wait_event(pid, "process/exited", 4), f"{n}: exited notification", f"{time.monotonic() - t:.2f}s")
    ex = srv.event(pid, "process/exited")
    if ex is not None:
        check(ex.get("exitCode") in (128 + 9, 128 + 15), f"{n}: exitCode is 137 or 143", short(ex))
    if check(wait_done(srv, pid, 3), f"{n}: closed after terminate"):
        check_event_stream(srv, n, pid)
    r = result_of(f"{n}: terminate again", srv.request("process/terminate", {"processId": pid}))
    if r is not None:
        check(r.get("running") is False, f"{n}: running false after exit", short(r))
    r = result_of(f"{n}: terminate unknown", srv.request("process/terminate", {"processId": "no-such-proc"}))
    if r is not None:
        check(r.get("running") is False, f"{n}: running false for unknown process", short(r))


def test_env_cwd(srv):
    n = "env"
    pid = "env-1"
    env = {"FOO": "bar baz", "CONFORMANCE_X": "1=2", "EMPTY": ""}
    start(srv, n, pid, [ENV], env=env)
    if check(wait_done(srv, pid, 5), f"{n}: exited and closed arrive"):
        check_event_stream(srv, n, pid, exit_code=0)
        lines = sorted(srv.output(pid, "stdout").decode("utf-8", "replace").splitlines())
        want = sorted(f"{k}={v}" for k, v in env.items())
        check(lines == want, f"{n}: child environment is exactly env", f"got {lines}, want {want}")

    n = "cwd"
    pid = "cwd-1"
    d = tempfile.mkdtemp(prefix="codex conf ")
    try:
        real = os.path.realpath(d)
        uri = file_uri(real)
        check("%20" in uri, f"{n}: URI is percent-encoded", uri)
        start(srv, n, pid, [PWD], env={}, cwd=uri)
        if check(wait_done(srv, pid, 5), f"{n}: exited and closed arrive"):
            check_event_stream(srv, n, pid, exit_code=0)
            out = srv.output(pid, "stdout")
            check(out == real.encode() + b"\n", f"{n}: child runs in the decoded file:// cwd", f"{out!r} vs {real!r}")
    finally:
        os.rmdir(d)


def test_tty(srv):
    n = "tty"
    pid = "tty-1"
    start(srv, n, pid, [TTY], env={}, tty=True)
    if check(wait_done(srv, pid, 5), f"{n}: exited and closed arrive"):
        check_event_stream(srv, n, pid, exit_code=0)
        streams = {p.get("stream") for _, m, p in srv.evs(pid) if m == "process/output"}
        check(streams == {"pty"}, f"{n}: stream is pty", str(streams))
        out = srv.output(pid)
        check(re.fullmatch(rb"/dev/pts/\d+\r?\n", out) is not None, f"{n}: tty prints /dev/pts/N", repr(out))

    pid = "tty-2"
    start(srv, n, pid, [HEAD, "-n", "1"], env={}, tty=True)
    r = result_of(f"{n}: write", srv.request("process/write",
                                              {"processId": pid, "chunk": b64(b"hello-tty\n"), "writeId": "t1"}))
    if r is not None:
        check(r.get("status") == "accepted", f"{n}: write -> accepted", short(r))
    if check(wait_done(srv, pid, 5), f"{n}: exited and closed arrive (head)"):
        check_event_stream(srv, n, pid, exit_code=0)
        out = srv.output(pid)
        check(out.count(b"hello-tty") >= 2, f"{n}: output holds the terminal echo and the program output", repr(out))
        check(b"\r\n" in out, f"{n}: pty translates newlines", repr(out))

    # A tty child that closes its stdio before it exits (as `head` does) must keep its own exit status: the server
    # must not hang up the terminal (SIGHUP) while the child is still alive (docs/protocol.md §3.6: closed, and then the
    # closing of the fds, come after exited).
    pid = "tty-3"
    start(srv, n, pid, [SH, "-c", "echo ready; exec 0<&- 1>&- 2>&-; sleep 0.3; exit 7"], env={}, tty=True)
    if check(wait_done(srv, pid, 5), f"{n}: exited and closed arrive (closed stdio)"):
        check_event_stream(srv, n + " (closed stdio)", pid, exit_code=7)
        check(srv.output(pid) == b"ready\r\n", f"{n}: output before closing stdio", repr(srv.output(pid)))


def test_errors(srv):
    n = "errors"
    r = srv.request("process/start", start_params("enoent-1", ["/nonexistent"], env={}))
    expect_error(f"{n}: spawn /nonexistent", r, -32603, message="No such file or directory (os error 2)")
    r = srv.request("process/read", {"processId": "enoent-1"})
    expect_error(f"{n}: failed spawn leaves no process", r, -32600, message="unknown process id enoent-1")
    r = srv.request("process/start", start_params("empty-1", [], env={}))
    expect_error(f"{n}: empty argv", r, -32602, message="argv must not be empty")
    p = start_params("x", [SH, "-c", "exit 0"])
    del p["processId"]
    r = srv.request("process/start", p)
    expect_error(f"{n}: missing processId", r, -32602, contains="missing field `processId`")
    r = srv.request("process/read", {"processId": "no-such-proc"})
    expect_error(f"{n}: read unknown process", r, -32600, message="unknown process id no-such-proc")
    r = srv.request("conformance/noSuchMethod", {})
    expect_error(f"{n}: unknown method", r, -32601)

    srv.send_line('{"id": 4242, "method": "environment/status", "params": {')
    key = json.dumps(-1)
    srv.wait_until(lambda: key in srv.responses or json.dumps(None) in srv.responses, 5)
    r = srv.responses.pop(key, None) or srv.responses.pop(json.dumps(None), None)
    expect_error(f"{n}: malformed JSON", r, -32600)
    if r is not None:
        check(r.get("id") == -1, f"{n}: malformed JSON reply has id -1", short(r))
    check(json.dumps(4242) not in srv.responses, f"{n}: malformed JSON is not executed")
    srv.send_line("[1,2]")
    srv.wait_until(lambda: key in srv.responses, 5)
    r = srv.responses.pop(key, None)
    expect_error(f"{n}: non-object message", r, -32600)
    # Neither a request nor a response: answered, never left hanging (Codex: id -1; uexec: the
    # message's own id when it is usable, docs/protocol.md §2).
    srv.send_line('{"jsonrpc":"2.0","id":4343}')
    own = json.dumps(4343)
    srv.wait_until(lambda: key in srv.responses or own in srv.responses, 5)
    r = srv.responses.pop(own, None) or srv.responses.pop(key, None)
    expect_error(f"{n}: a message with an id and no method, result or error", r, -32600)
    srv.send_line("")  # blank line is ignored
    st = result_of(f"{n}: server keeps serving after bad input", srv.request("environment/status", {}))
    if st is not None:
        check(st.get("status") == "ready", f"{n}: status ready after bad input", short(st))


def test_files(srv):
    """fs/* (docs/protocol.md §3.9): shapes and error codes both servers share, in a scratch tree."""
    with scratch_dir("conformance-fs-") as top:
        _files_in(srv, "files", top)


def _files_in(srv, n, top):
    def u(rel=""):
        return file_uri(top + rel)

    def call(method, **params):
        return srv.request(method, params)

    with open(top + "/file.txt", "wb") as f:
        f.write(b"hello\n")
    os.mkdir(top + "/dir")
    with open(top + "/dir/a.txt", "wb") as f:
        f.write(b"a")
    os.symlink("file.txt", top + "/link")
    os.symlink("nowhere", top + "/dangling")
    os.symlink("dir", top + "/dirlink")

    md = result_of(f"{n}: getMetadata file", call("fs/getMetadata", path=u("/file.txt")))
    if md is not None:
        check(md.get("isFile") is True and md.get("isDirectory") is False and md.get("isSymlink") is False
              and md.get("size") == 6 and isinstance(md.get("modifiedAtMs"), int) and md.get("createdAtMs") == 0,
              f"{n}: getMetadata file shape", short(md))
    md = result_of(f"{n}: getMetadata link", call("fs/getMetadata", path=u("/link")))
    if md is not None:
        check(md.get("isFile") is True and md.get("isSymlink") is True, f"{n}: a link describes its target", short(md))
    md = result_of(f"{n}: getMetadata dir", call("fs/getMetadata", path=u("/dir")))
    if md is not None:
        check(md.get("isDirectory") is True and md.get("isFile") is False, f"{n}: getMetadata dir shape", short(md))
    expect_error(f"{n}: getMetadata missing", call("fs/getMetadata", path=u("/missing")), -32004,
                 message="No such file or directory (os error 2)")
    expect_error(f"{n}: getMetadata dangling link", call("fs/getMetadata", path=u("/dangling")), -32004)
    expect_error(f"{n}: getMetadata through a file", call("fs/getMetadata", path=u("/file.txt/x")), -32603,
                 message="Not a directory (os error 20)")
    expect_error(f"{n}: relative path", call("fs/getMetadata", path="file.txt"), -32602)

    rf = result_of(f"{n}: readFile", call("fs/readFile", path=u("/file.txt")))
    if rf is not None:
        check(unb64(rf.get("dataBase64", "")) == b"hello\n", f"{n}: readFile bytes", short(rf))
    rf = result_of(f"{n}: readFile through a link", call("fs/readFile", path=u("/link")))
    if rf is not None:
        check(unb64(rf.get("dataBase64", "")) == b"hello\n", f"{n}: readFile follows the link", short(rf))
    expect_error(f"{n}: readFile of a directory", call("fs/readFile", path=u("/dir")), -32600,
                 message=f"path `{top}/dir` is not a file")
    expect_error(f"{n}: readFile missing", call("fs/readFile", path=u("/missing")), -32004)

    data = bytes(range(256)) * 3
    result_of(f"{n}: writeFile new", call("fs/writeFile", path=u("/new.bin"), dataBase64=b64(data)))
    check(open(top + "/new.bin", "rb").read() == data, f"{n}: writeFile wrote the bytes")
    result_of(f"{n}: writeFile overwrite", call("fs/writeFile", path=u("/new.bin"), dataBase64=b64(b"x")))
    check(open(top + "/new.bin", "rb").read() == b"x", f"{n}: writeFile truncates")
    expect_error(f"{n}: writeFile missing parent", call("fs/writeFile", path=u("/nodir/x"), dataBase64="YQ=="), -32004)
    expect_error(f"{n}: writeFile onto a directory", call("fs/writeFile", path=u("/dir"), dataBase64="YQ=="), -32603,
                 message="Is a directory (os error 21)")
    expect_error(f"{n}: writeFile bad base64", call("fs/writeFile", path=u("/b"), dataBase64="Y"), -32600,
                 prefix="fs/writeFile requires valid base64 dataBase64")

    result_of(f"{n}: createDirectory recursive by default", call("fs/createDirectory", path=u("/a/b/c")))
    check(os.path.isdir(top + "/a/b/c"), f"{n}: the parents exist")
    result_of(f"{n}: createDirectory existing", call("fs/createDirectory", path=u("/a/b/c")))
    expect_error(f"{n}: createDirectory existing, not recursive",
                 call("fs/createDirectory", path=u("/a"), recursive=False), -32603, message="File exists (os error 17)")
    expect_error(f"{n}: createDirectory missing parent, not recursive",
                 call("fs/createDirectory", path=u("/x/y"), recursive=False), -32004)
    expect_error(f"{n}: createDirectory through a file", call("fs/createDirectory", path=u("/file.txt/sub")), -32603,
                 message="Not a directory (os error 20)")

    rd = result_of(f"{n}: readDirectory", call("fs/readDirectory", path=u("")))
    if rd is not None:
        got = {e.get("fileName"): (e.get("isDirectory"), e.get("isFile")) for e in rd.get("entries", [])}
        want = {"file.txt": (False, True), "dir": (True, False), "link": (False, True), "dirlink": (True, False),
                "new.bin": (False, True), "a": (True, False)}
        check(got == want, f"{n}: readDirectory entries (links by their target, dangling left out)", short(rd))
    expect_error(f"{n}: readDirectory of a file", call("fs/readDirectory", path=u("/file.txt")), -32603)

    result_of(f"{n}: copy a tree", call("fs/copy", sourcePath=u("/dir"), destinationPath=u("/dir2"), recursive=True))
    check(open(top + "/dir2/a.txt", "rb").read() == b"a", f"{n}: copy copied the tree")
    result_of(f"{n}: copy a link", call("fs/copy", sourcePath=u("/link"), destinationPath=u("/link2"), recursive=False))
    check(os.path.islink(top + "/link2") and os.readlink(top + "/link2") == "file.txt", f"{n}: a link is copied as a link")
    expect_error(f"{n}: copy a directory without recursive",
                 call("fs/copy", sourcePath=u("/dir"), destinationPath=u("/dir3"), recursive=False), -32600,
                 message="fs/copy requires recursive: true when sourcePath is a directory")
    expect_error(f"{n}: copy into itself",
                 call("fs/copy", sourcePath=u("/a"), destinationPath=u("/a/b/x"), recursive=True), -32600,
                 message="fs/copy cannot copy a directory to itself or one of its descendants")
    expect_error(f"{n}: copy without recursive", call("fs/copy", sourcePath=u("/a"), destinationPath=u("/a3")), -32602,
                 contains="recursive")

    cn = result_of(f"{n}: canonicalize", call("fs/canonicalize", path=u("/dirlink/../link")))
    if cn is not None:
        check(cn.get("path") == u("/file.txt"), f"{n}: canonicalize resolves links and dots", short(cn))
    expect_error(f"{n}: canonicalize missing", call("fs/canonicalize", path=u("/missing/x")), -32004)

    result_of(f"{n}: remove a link to a directory", call("fs/remove", path=u("/dirlink")))
    check(not os.path.lexists(top + "/dirlink") and os.path.isdir(top + "/dir"), f"{n}: only the link went")
    expect_error(f"{n}: remove a non-empty directory, not recursive",
                 call("fs/remove", path=u("/a"), recursive=False), -32603, message="Directory not empty (os error 39)")
    result_of(f"{n}: remove a tree (recursive by default)", call("fs/remove", path=u("/a")))
    check(not os.path.exists(top + "/a"), f"{n}: the tree is gone")
    result_of(f"{n}: remove missing (force by default)", call("fs/remove", path=u("/missing")))
    expect_error(f"{n}: remove missing without force", call("fs/remove", path=u("/missing"), force=False), -32004)

    # A sandboxed call meets the sandbox: root readable, one directory writable.
    sandbox = {"permissions": {"type": "managed", "network": "restricted",
                               "file_system": {"type": "restricted", "entries": [
                                   {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
                                   {"path": {"type": "path", "path": u("/dir")}, "access": "write"}]}},
               "cwd": u(), "windowsSandboxLevel": "disabled"}
    rf = result_of(f"{n}: sandboxed readFile", srv.request("fs/readFile", {"path": u("/file.txt"), "sandbox": sandbox},
                                                          timeout=15))
    if rf is not None:
        check(unb64(rf.get("dataBase64", "")) == b"hello\n", f"{n}: sandboxed readFile bytes", short(rf))
    result_of(f"{n}: sandboxed write inside the writable root",
              srv.request("fs/writeFile", {"path": u("/dir/in.txt"), "dataBase64": "aW4=", "sandbox": sandbox}, timeout=15))
    check(os.path.exists(top + "/dir/in.txt"), f"{n}: the sandboxed write landed")
    big = os.urandom(3 << 20)  # more than a process's stdin queue: the whole operation still goes in
    result_of(f"{n}: sandboxed write of 3 MiB", srv.request("fs/writeFile", {"path": u("/dir/big.bin"), "dataBase64": b64(big),
                                                                            "sandbox": sandbox}, timeout=30))
    rf = result_of(f"{n}: sandboxed read of 3 MiB", srv.request("fs/readFile", {"path": u("/dir/big.bin"), "sandbox": sandbox},
                                                                timeout=30))
    check(open(top + "/dir/big.bin", "rb").read() == big and rf is not None and unb64(rf.get("dataBase64", "")) == big,
          f"{n}: 3 MiB through the sandbox, both ways, byte-exact")
    r = srv.request("fs/writeFile", {"path": u("/out.txt"), "dataBase64": "b3V0", "sandbox": sandbox}, timeout=15)
    check(r is not None and "error" in r, f"{n}: a sandboxed write outside the roots is refused", short(r))
    check(not os.path.exists(top + "/out.txt"), f"{n}: and nothing was written")


def test_walk(srv):
    """fs/walk (docs/protocol.md §3.9): breadth first, byte order, links, cycles, the three limits."""
    n = "walk"
    with scratch_dir("conformance-walk-") as top:
        for d in ("a/b/c/d", "m", "z"):
            os.makedirs(os.path.join(top, d))
        for f, text in (("a/f.md", "x"), ("a/b/g.md", "y"), ("root.txt", "r"), ("z/q.txt", "q")):
            with open(os.path.join(top, f), "w") as fh:
                fh.write(text)
        os.symlink(top + "/z", top + "/dlink")
        os.symlink(top + "/root.txt", top + "/flink")
        os.symlink("/nonexistent-conformance", top + "/broken")
        os.symlink(top + "/a", top + "/a/b/up")
        os.mkfifo(top + "/fifo")

        def walk(path, depth, dirs=100, entries=100, follow=False):
            r = srv.request("fs/walk", {"path": file_uri(top + path), "options": {
                "maxDepth": depth, "maxDirectories": dirs, "maxEntries": entries, "followDirectorySymlinks": follow}})
            res = result_of(f"{n}: {path} depth {depth} dirs {dirs} entries {entries} follow {follow}", r)
            if res is None:
                return None
            return ([(e.get("path", "")[len(file_uri(top)):], e.get("kind")) for e in res.get("entries", [])],
                    res.get("errors"), res.get("truncated"))

        D, F = "directory", "file"
        level0 = [("/a", D), ("/m", D), ("/root.txt", F), ("/z", D)]
        check(walk("", 0) == (level0, [], False), f"{n}: depth 0: the root's files and directories, in byte order",
              short(walk("", 0)))
        everything = level0 + [("/a/b", D), ("/a/f.md", F), ("/z/q.txt", F), ("/a/b/c", D), ("/a/b/g.md", F),
                               ("/a/b/c/d", D)]
        check(walk("", 10) == (everything, [], False), f"{n}: breadth first; links, fifos and dangling links left out",
              short(walk("", 10)))
        followed = [("/a", D), ("/dlink", D), ("/m", D), ("/root.txt", F), ("/z", D), ("/a/b", D), ("/a/f.md", F),
                    ("/dlink/q.txt", F), ("/a/b/c", D), ("/a/b/g.md", F), ("/a/b/up", D), ("/a/b/c/d", D)]
        check(walk("", 10, follow=True) == (followed, [], False),
              f"{n}: followDirectorySymlinks: a link to a directory is listed and read once (a cycle ends)",
              short(walk("", 10, follow=True)))
        check(walk("", 10, dirs=2) == (level0 + [("/a/b", D), ("/a/f.md", F)], [], True),
              f"{n}: maxDirectories counts the directories read, the root included", short(walk("", 10, dirs=2)))
        check(walk("", 10, entries=3) == ([("/a", D)], [], True),
              f"{n}: maxEntries counts every entry seen, listed or not", short(walk("", 10, entries=3)))
        check(walk("/root.txt", 1) == ([], [], False), f"{n}: a file as the root: nothing", short(walk("/root.txt", 1)))
        check(walk("/dlink", 1) == ([], [], False), f"{n}: a link as the root, not followed: nothing")
        check(walk("/dlink", 1, follow=True) == ([("/dlink/q.txt", F)], [], False), f"{n}: a link as the root, followed",
              short(walk("/dlink", 1, follow=True)))
        expect_error(f"{n}: a missing root", srv.request("fs/walk", {"path": file_uri(top + "/gone"), "options": {
            "maxDepth": 1, "maxDirectories": 1, "maxEntries": 1, "followDirectorySymlinks": False}}), -32004)
        expect_error(f"{n}: options missing", srv.request("fs/walk", {"path": file_uri(top)}), -32602,
                     message="missing field `options`")
        expect_error(f"{n}: maxEntries missing", srv.request("fs/walk", {"path": file_uri(top), "options": {
            "maxDepth": 1, "maxDirectories": 1, "followDirectorySymlinks": False}}), -32602,
            message="missing field `maxEntries`")


def test_watch_missing(srv):
    """fs/watchMissing (docs/protocol.md §3.11): one one-shot watch per connection, fs/missingChanged."""
    with scratch_dir("conformance-watch-") as top:
        _watch_missing_in(srv, "watch", top)


def _watch_missing_in(srv, n, top):
    def watch(watch_id, missing, present=None):
        r = srv.request("fs/watchMissing", {"watchId": watch_id, "missing": [file_uri(top + m) for m in missing],
                                            "present": file_uri(top + present) if present else None})
        res = result_of(f"{n}: watchMissing {watch_id} {missing} {present}", r)
        return None if res is None else res.get("watching")

    def fired():
        return [p.get("watchId") for (_, m, p) in srv.events.get(None, []) if m == "fs/missingChanged"]

    def wait_fired(count, timeout=3.0):
        srv.wait_until(lambda: len(fired()) >= count, timeout)
        return fired()

    os.makedirs(top + "/p")
    check(watch(1, ["/a/b/c"]) is True, f"{n}: a missing path (and missing directories on the way): watching")
    os.makedirs(top + "/a")
    check(wait_fired(1) == [1], f"{n}: creating a missing directory on the way fires fs/missingChanged {{watchId}}",
          short(srv.events.get(None)))
    os.makedirs(top + "/a/b/c")
    srv.pump(0.5)
    check(fired() == [1], f"{n}: it fires once", short(fired()))
    check(watch(2, ["/x"], present="/p") is True, f"{n}: missing with a present directory: watching")
    open(top + "/p/inner", "w").close()
    open(top + "/unrelated", "w").close()
    srv.pump(0.7)
    check(fired() == [1], f"{n}: a new file inside the present directory, or next to the missing path, does not fire",
          short(fired()))
    shutil.rmtree(top + "/p")
    check(wait_fired(2) == [1, 2], f"{n}: removing the present path fires", short(fired()))
    check(watch(3, ["/unrelated"]) is False, f"{n}: a missing path that exists: not watching")
    check(watch(4, ["/y"], present="/gone") is False, f"{n}: a present path that does not exist: not watching")
    check(watch(5, []) is False, f"{n}: nothing missing: not watching")
    check(watch(6, ["/z"]) is True, f"{n}: watching /z")
    check(watch(6, ["/w"]) is False, f"{n}: the same watchId again: not watching")
    check(watch(5, ["/w"]) is False, f"{n}: an older watchId: not watching")
    open(top + "/z", "w").close()
    check(wait_fired(3) == [1, 2, 6], f"{n}: ...and the watch it would have replaced still fires", short(fired()))
    check(watch(7, ["/v"]) is True, f"{n}: watching /v")
    check(watch(8, ["/z"]) is False, f"{n}: a newer watchId that does not watch...")
    open(top + "/v", "w").close()
    srv.pump(0.7)
    check(fired() == [1, 2, 6], f"{n}: ...still ends the older watch", short(fired()))
    expect_error(f"{n}: a watchId that is not a number", srv.request("fs/watchMissing", {
        "watchId": "w1", "missing": [file_uri(top + "/q")], "present": None}), -32602)
    expect_error(f"{n}: a relative missing path", srv.request("fs/watchMissing", {
        "watchId": 9, "missing": ["relative/q"], "present": None}), -32602)


# environmentConfig/read reads the server's Codex home: a scratch one, set before the server
# starts (main), with a trusted project (a git root, a layer at the root and one below it) and an
# untrusted one whose file is not even TOML.
CONFIG_TOP = tempfile.mkdtemp(prefix="conformance-config-")
CODEX_HOME = os.path.join(CONFIG_TOP, "codex")
PROJ = os.path.join(CONFIG_TOP, "proj")
UNTRUSTED = os.path.join(CONFIG_TOP, "untrusted")
EMPTY_GIT = os.path.join(CONFIG_TOP, "emptygit")  # trusted, but its .git is an empty directory
USER_CONFIG = (
    'model = "gpt-5"\n'
    '[mcp_servers.foo]\ncommand = "echo"\nargs = ["hi"]\n'
    '[mcp_servers.bar]\nurl = "http://x"\n'
    f'[projects."{PROJ}"]\ntrust_level = "trusted"\n'
    f'[projects."{EMPTY_GIT}"]\ntrust_level = "trusted"\n')


def make_config_tree():
    os.makedirs(PROJ, exist_ok=True)
    subprocess.run(["git", "init", "-q", PROJ], check=False)  # a real repository marks the project root
    for d in (CODEX_HOME, os.path.join(PROJ, ".git"), os.path.join(PROJ, ".codex"),
              os.path.join(PROJ, "sub", ".codex"), os.path.join(UNTRUSTED, ".codex"), os.path.join(EMPTY_GIT, ".git"),
              os.path.join(EMPTY_GIT, ".codex"), os.path.join(EMPTY_GIT, "sub")):
        os.makedirs(d, exist_ok=True)
    files = {os.path.join(CODEX_HOME, "config.toml"): USER_CONFIG,
             os.path.join(PROJ, ".codex", "config.toml"): '[mcp_servers.foo]\ncommand = "projecho"\n',
             os.path.join(PROJ, "sub", ".codex", "config.toml"): '[mcp_servers.baz]\ncommand = "z"\nenv = { A = "1" }\n',
             os.path.join(UNTRUSTED, ".codex", "config.toml"): "this is = = not toml\n",
             os.path.join(EMPTY_GIT, ".codex", "config.toml"): '[mcp_servers.e]\ncommand = "e"\n'}
    for path, text in files.items():
        with open(path, "w") as f:
            f.write(text)


def test_environment_config(argv):
    """environmentConfig/read (docs/protocol.md §3.10): Codex's config layers, only the keys asked for.
    A server of its own, whose CODEX_HOME is the scratch one (the main server keeps the default)."""
    n = "envconfig"
    saved = os.environ.get("CODEX_HOME")
    os.environ["CODEX_HOME"] = CODEX_HOME
    try:
        srv = Server(argv)
    finally:
        if saved is None:
            os.environ.pop("CODEX_HOME", None)
        else:
            os.environ["CODEX_HOME"] = saved
    try:
        init = result_of(f"{n}: initialize", srv.request("initialize", {"clientName": "codex-conformance"}))
        srv.notify("initialized", {})
        caps = ((init or {}).get("environmentInfo") or {}).get("capabilities") or {}
        check(caps.get("environmentConfigRead") is True, f"{n}: capabilities.environmentConfigRead", short(caps))
        _environment_config_in(srv, n)
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()


def _environment_config_in(srv, n):
    import tomllib

    def read(cwd, config_paths, requirements_paths=()):
        return srv.request("environmentConfig/read", {"cwd": file_uri(cwd), "configPaths": list(config_paths),
                                                        "requirementsPaths": list(requirements_paths)})

    def layers(res, stack="config"):
        out = []
        for layer in (res.get(stack) or {}).get("layers", []):
            try:
                parsed = tomllib.loads(layer.get("toml", ""))
            except Exception as e:  # noqa: BLE001
                parsed = f"not TOML: {e}"
            out.append((layer.get("source"), layer.get("baseDir"), parsed))
        return out

    res = result_of(f"{n}: read mcp_servers from a trusted project's subdirectory",
                    read(os.path.join(PROJ, "sub"), [["mcp_servers"]], [["mcp_servers"]]))
    if res is not None:
        check(res.get("codexHomeDir") == file_uri(CODEX_HOME), f"{n}: codexHomeDir is CODEX_HOME", short(res))
        check(res.get("userHomeDir") == file_uri(os.environ.get("HOME", "")), f"{n}: userHomeDir is HOME", short(res))
        check(isinstance(res.get("hostname"), str), f"{n}: hostname", short(res))
        want = [
            (f"user ({CODEX_HOME}/config.toml)", file_uri(CODEX_HOME),
             {"mcp_servers": {"foo": {"command": "echo", "args": ["hi"]}, "bar": {"url": "http://x"}}}),
            (f"project ({PROJ}/.codex/config.toml)", file_uri(PROJ + "/.codex"),
             {"mcp_servers": {"foo": {"command": "projecho"}}}),
            (f"project ({PROJ}/sub/.codex/config.toml)", file_uri(PROJ + "/sub/.codex"),
             {"mcp_servers": {"baz": {"command": "z", "env": {"A": "1"}}}}),
        ]
        check(layers(res) == want, f"{n}: the user layer, then the project's from its root down, only mcp_servers",
              short(layers(res), 900))
        check((res.get("config") or {}).get("cloudInsertionIndex") == 0, f"{n}: cloudInsertionIndex 0", short(res))
        check((res.get("requirements") or {}).get("layers") == [], f"{n}: no requirements layers", short(res))
    res = result_of(f"{n}: a key path through a value", read(PROJ, [["model", "sub"]]))
    if res is not None:
        check(layers(res) == [(f"user ({CODEX_HOME}/config.toml)", file_uri(CODEX_HOME), {"model": "gpt-5"})],
              f"{n}: a path that runs into a value selects that value", short(layers(res)))
    res = result_of(f"{n}: a key no layer has", read(PROJ, [["nothing", "here"]]))
    if res is not None:
        check(layers(res) == [], f"{n}: no key, no layer", short(res))
    res = result_of(f"{n}: an untrusted project", read(UNTRUSTED, [["mcp_servers"]]))
    if res is not None:
        check([l[0] for l in layers(res)] == [f"user ({CODEX_HOME}/config.toml)"],
              f"{n}: an untrusted project's file is not read (not even parsed)", short(layers(res)))
    res = result_of(f"{n}: below a trusted directory whose .git is empty", read(os.path.join(EMPTY_GIT, "sub"), [["mcp_servers"]]))
    if res is not None:
        check(len(layers(res)) == 1, f"{n}: an empty .git directory makes no project root (the cwd is the project)",
              short(layers(res)))
    res = result_of(f"{n}: a cwd that does not exist", read(os.path.join(CONFIG_TOP, "gone"), [["mcp_servers"]]))
    if res is not None:
        check(len(layers(res)) == 1, f"{n}: a missing cwd: the user layer only", short(layers(res)))
    expect_error(f"{n}: no key paths", read(PROJ, [], []), -32602,
                 message="at least one config or requirements path is required")
    expect_error(f"{n}: an empty key path", read(PROJ, [[]]), -32602,
                 contains="TOML paths must contain at least one key segment")
    expect_error(f"{n}: a relative cwd", srv.request("environmentConfig/read", {
        "cwd": "relative/dir", "configPaths": [["mcp_servers"]], "requirementsPaths": []}), -32602)
    # A user file that is not TOML: -32603, naming the file.
    user_file = os.path.join(CODEX_HOME, "config.toml")
    with open(user_file, "w") as f:
        f.write("model = = 1\n")
    try:
        expect_error(f"{n}: a user file that is not TOML", read(PROJ, [["mcp_servers"]]), -32603,
                     prefix=f"failed to load executor-local config: {user_file}:1:")
    finally:
        with open(user_file, "w") as f:
            f.write(USER_CONFIG)


def test_resume(argv):
    """Resume after a disconnect (openai/codex PR 28512; docs/protocol.md §2.1), on a server of its
    own listening on ws://127.0.0.1:0: a closed connection's session keeps its processes; a new
    connection that resumes it reads what they printed meanwhile, in seq order, with their exit,
    and writes to one still running; a second resume while attached is refused (-32010), an
    unknown id too (-32600)."""
    n = "resume"
    ws_argv = list(argv[:-1]) + ["ws://127.0.0.1:0"] if argv[-2:] == ["--listen", "stdio"] else None
    if not check(ws_argv is not None, f"{n}: server argv ends with --listen stdio", short(argv)):
        return
    errlog = tempfile.TemporaryFile()
    # Its own process group: Codex's ws server leaves a child of its own running (seen: one
    # more `codex exec-server` reparented to init), so the whole group goes at the end.
    proc = subprocess.Popen(ws_argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errlog,
                            start_new_session=True)
    conns = []
    try:
        r, _, _ = select.select([proc.stdout], [], [], 10)
        url = proc.stdout.readline().decode().strip() if r else ""
        if not check(url.startswith("ws://"), f"{n}: the server prints its ws:// address", repr(url)):
            return

        def connect(params, name):
            c = WsConn(url)
            conns.append(c)
            return c, c.request("initialize", dict({"clientName": "codex-conformance"}, **params))

        a, resp = connect({}, "a")
        init = result_of(f"{n}: initialize", resp)
        sid = (init or {}).get("sessionId")
        if not check(isinstance(sid, str) and sid, f"{n}: initialize gives a sessionId", short(init)):
            return
        a.notify("initialized", {})
        start(a, n, "gone-1", ["/bin/sh", "-c", "echo one; sleep 0.4; echo two; exit 3"], env={"PATH": "/usr/bin:/bin"})
        start(a, n, "cat-1", [CAT], env={}, pipe_stdin=True)
        a.wait_until(lambda: b"one" in a.output("gone-1"), 5)
        a.close()
        time.sleep(1.0)  # gone-1 prints "two" and exits while no connection is attached

        b, resp = connect({"resumeSessionId": sid}, "b")
        res = result_of(f"{n}: initialize with resumeSessionId", resp)
        check((res or {}).get("sessionId") == sid, f"{n}: the resumed session keeps its id", short(res))
        b.notify("initialized", {})
        rd = result_of(f"{n}: process/read of a process that ended while detached",
                       b.request("process/read", {"processId": "gone-1", "afterSeq": 0, "waitMs": 3000}))
        if rd is not None:
            chunks = read_shape(f"{n}: read", rd)
            text = b"".join(unb64(c.get("chunk", "")) or b"" for c in chunks)
            check(text == b"one\ntwo\n", f"{n}: everything it printed, once, in order", repr(text))
            check(rd.get("exited") is True and rd.get("exitCode") == 3, f"{n}: its exit code", short(rd))
        w = result_of(f"{n}: process/write to a process started before the disconnect",
                      b.request("process/write", {"processId": "cat-1", "chunk": b64(b"again\n"), "writeId": "w-resume"}))
        if w is not None:
            check(w.get("status") == "accepted", f"{n}: the handle is still valid", short(w))
        got = b""
        deadline = time.monotonic() + 5
        while b"again" not in got and time.monotonic() < deadline:
            rd = b.request("process/read", {"processId": "cat-1", "afterSeq": 0, "waitMs": 500})
            got = b"".join(unb64(c.get("chunk", "")) or b"" for c in ((rd or {}).get("result") or {}).get("chunks", []))
        check(b"again" in got, f"{n}: and its output comes back", repr(got))

        _, resp = connect({"resumeSessionId": sid}, "c")
        expect_error(f"{n}: resuming a session another connection holds", resp, -32010,
                     message=f"session {sid} is already attached to another connection")
        _, resp = connect({"resumeSessionId": "no-such-session"}, "d")
        expect_error(f"{n}: resuming an unknown session", resp, -32600, message="unknown session id no-such-session")
        b.request("process/terminate", {"processId": "cat-1"})
    except OSError as e:
        check(False, f"{n}: WebSocket", f"{e}; server stderr: {errlog.seek(0) or errlog.read()[-600:]!r}")
    finally:
        for c in conns:
            c.close()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()



def test_stdin_eof(srv):
    n = "eof"
    pid = "eof-sleep"
    start(srv, n, pid, [SH, "-c", "echo $$; exec sleep 60"], env={"PATH": CHILD_PATH})
    srv.wait_until(lambda: b"\n" in srv.output(pid), 5)
    out = srv.output(pid).strip()
    child = int(out) if out.isdigit() else None
    check(child is not None, f"{n}: child reported its pid", repr(out))
    try:
        srv.proc.stdin.close()
    except OSError:
        pass
    try:
        rc = srv.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 0, f"{n}: server exits 0 on stdin EOF", f"rc={rc}")
    if child is not None:
        def gone():
            try:
                with open(f"/proc/{child}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                return state in ("Z", "X")
            except (FileNotFoundError, ProcessLookupError, IndexError):
                return True

        deadline = time.monotonic() + 3
        while not gone() and time.monotonic() < deadline:
            time.sleep(0.05)
        check(gone(), f"{n}: running child (pid {child}) is gone after server exit")
        if not gone():
            try:
                os.kill(child, 9)
            except OSError:
                pass


def main(argv):
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    make_config_tree()
    try:
        srv = Server(argv)
    except OSError as e:
        check(False, "server starts", f"{argv[0]}: {e}")
        print(f"conformance: {passed} passed, {failed} failed", flush=True)
        return 1
    sections = [test_handshake, test_environment, test_pipes_and_read, test_max_bytes, test_long_poll, test_write,
                test_signal_terminate, test_env_cwd, test_tty, test_errors, test_files, test_walk, test_watch_missing, test_environment_config,
                test_resume]
    init_info = None
    try:
        for fn in sections:
            if time.monotonic() - T0 > OVERALL_BUDGET_S:
                check(False, f"{fn.__name__}: skipped, overall time budget exceeded")
                continue
            if srv.eof:
                check(False, f"{fn.__name__}: skipped, server closed its stdout", srv.stderr_tail())
                continue
            if fn is test_handshake:
                init_info = fn(srv)
            elif fn is test_environment:
                fn(srv, init_info)
            elif fn in (test_environment_config, test_resume):
                fn(argv)
            else:
                fn(srv)
        srv.pump(0.1)
        check(not srv.junk, "stdout carries only JSON-RPC messages", short([j.decode("utf-8", "replace")
                                                                           for j in srv.junk]))
        leftover = [k for k in srv.responses]
        check(not leftover, "no unexpected responses", str(leftover))
        if not srv.eof:
            test_stdin_eof(srv)
        else:
            check(False, "eof: skipped, server closed its stdout", srv.stderr_tail())
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()
        shutil.rmtree(CONFIG_TOP, ignore_errors=True)
    print(f"conformance: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
