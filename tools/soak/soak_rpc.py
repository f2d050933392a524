"""soak_rpc.py: a small non-blocking client of uexec's native protocol (docs/protocol.md), for the soak suite.

Hub        one select() loop over every Conn of the run; run_until(pred, timeout) pumps them all,
           so a streaming client keeps reading while another is busy. A Conn with `paused` set is
           not read (the deliberately slow client), but its writes still go out.
Conn       one Unix-socket connection: NDJSON framing, request ids, callbacks, notifications
           routed to its listeners, and everything the daemon sent with id -1 kept aside.
Expected   deterministic child output (Lines64: fixed-width numbered lines; Exact: given bytes),
           with the tty line discipline's \\n -> \\r\\n applied when the child runs on a PTY.
StreamState  one (connection, process) stream: checks seq order, that every hole was announced by
           process/gap, and every received byte against Expected at its absolute offset.
replay_check  the same over process/read afterSeq pages (omitted ranges included).
"""
import base64
import json
import os
import select
import socket
import time

# ---- child programs with a deterministic output ---------------------------------------------

# Line i (0-based) is b"%010d %052x\n" % (i, (i * 2654435761) mod 2**208): 64 bytes, each one
# unique, so a misplaced byte range can never match. argv: N [bytes_per_sec [start_delay_s]].
LINES64_PY = r"""
import sys, time
n = int(sys.argv[1]); rate = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
if len(sys.argv) > 3: time.sleep(float(sys.argv[3]))
w = sys.stdout.buffer.write; M = (1 << 208) - 1; B = 256 if rate else 1024
t0 = time.monotonic(); done = 0
for b in range(0, n, B):
    blk = b"".join(b"%010d %052x\n" % (i, (i * 2654435761) & M) for i in range(b, min(n, b + B)))
    w(blk); done += len(blk)
    if rate:
        sys.stdout.flush()
        ahead = done / rate - (time.monotonic() - t0)
        if ahead > 0: time.sleep(ahead)
sys.stdout.flush()
"""


def lines64_argv(n, rate=0, delay=0):
    argv = ["python3", "-c", LINES64_PY, str(n)]
    if rate or delay:
        argv.append(str(rate))
    if delay:
        argv.append(str(delay))
    return argv


def _line64(i):
    return b"%010d %052x\n" % (i, (i * 2654435761) & ((1 << 208) - 1))


class Expected:
    """Abstract: total (bytes) and slice(pos, n)."""
    total = 0

    def slice(self, pos, n):
        raise NotImplementedError

    def matches(self, pos, data):
        return pos + len(data) <= self.total and self.slice(pos, len(data)) == data


class Exact(Expected):
    def __init__(self, data, tty=False):
        self.data = data.replace(b"\n", b"\r\n") if tty else data
        self.total = len(self.data)

    def slice(self, pos, n):
        return self.data[pos:pos + n]


class Lines64(Expected):
    def __init__(self, n, tty=False):
        self.n = n
        self.eol = b"\r\n" if tty else b"\n"
        self.width = 63 + len(self.eol)
        self.total = n * self.width

    def line(self, i):
        return _line64(i)[:-1] + self.eol

    def slice(self, pos, n):
        if n <= 0:
            return b""
        first, last = pos // self.width, (pos + n - 1) // self.width
        if last >= self.n:
            last = self.n - 1
        if first > last:
            return b""
        blob = b"".join(self.line(i) for i in range(first, last + 1))
        off = pos - first * self.width
        return blob[off:off + n]


def seq_bytes(k):
    """What `seq 1 k` prints."""
    return "".join(f"{i}\n" for i in range(1, k + 1)).encode()


# ---- the event loop and connections ---------------------------------------------------------

class RpcError(Exception):
    def __init__(self, method, msg):
        self.method = method
        self.msg = msg
        err = (msg or {}).get("error") or {}
        self.code = err.get("code")
        self.message = err.get("message")
        self.data = err.get("data") or {}
        super().__init__(f"{method}: {json.dumps(msg)[:400] if msg else 'no reply (timeout)'}")


class Hub:
    def __init__(self):
        self.conns = []
        self.hooks = []   # called on every turn of run_until (timers of a case: probes, watchdogs)

    def pump(self, timeout):
        live = [c for c in self.conns if not c.dead]
        rl = [c.sock for c in live if not c.paused]
        wl = [c.sock for c in live if c.out]
        if not rl and not wl:
            time.sleep(timeout)
            return
        by_sock = {c.sock: c for c in live}
        try:
            r, w, _ = select.select(rl, wl, [], timeout)
        except (OSError, ValueError):
            return
        for s in w:
            by_sock[s]._flush()
        for s in r:
            by_sock[s]._read()

    def run_until(self, pred, timeout):
        end = time.monotonic() + timeout
        while True:
            for h in list(self.hooks):
                h()
            if pred():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return pred()
            self.pump(min(0.05, left))

    def sleep(self, seconds):
        """Waits while every connection keeps being served."""
        self.run_until(lambda: False, seconds)

    def close_all(self):
        for c in list(self.conns):
            c.close()


class Call:
    __slots__ = ("method", "msg", "t0", "t1", "cb")

    def __init__(self, method, cb):
        self.method = method
        self.msg = None
        self.t0 = time.monotonic()
        self.t1 = None
        self.cb = cb

    @property
    def done(self):
        return self.msg is not None

    @property
    def ok(self):
        return self.msg is not None and "result" in self.msg

    @property
    def result(self):
        return (self.msg or {}).get("result")

    @property
    def error(self):
        return (self.msg or {}).get("error")


class Conn:
    def __init__(self, hub, path, name="soak", connect=True):
        self.hub = hub
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if connect:
            self.sock.connect(path)
        self.sock.setblocking(False)
        self.out = bytearray()
        self.inbuf = bytearray()
        self.next_id = 1
        self.calls = {}
        self.listeners = []
        self.orphans = []       # responses to no request of ours (id -1 parse errors and the like)
        self.paused = False
        self.dead = False       # closed by us or by the peer
        self.eof = False        # the peer closed it
        self.bytes_in = 0
        self.session_id = None
        self.init_result = None
        hub.conns.append(self)

    # -- sending
    def send_obj(self, obj):
        self.out += (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        self._flush()

    def send_bytes(self, data):
        self.out += data
        self._flush()

    def request(self, method, params=None, cb=None):
        rid = self.next_id
        self.next_id += 1
        call = Call(method, cb)
        self.calls[rid] = call
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_obj(msg)
        return call

    def call(self, method, params=None, timeout=15):
        c = self.request(method, params)
        self.hub.run_until(lambda: c.done or self.dead, timeout)
        return c

    def result(self, method, params=None, timeout=15):
        c = self.call(method, params, timeout)
        if not c.ok:
            raise RpcError(method, c.msg)
        return c.result

    def initialize(self, client_name=None, extensions=True, ttl_ms=None, timeout=15):
        p = {"clientName": client_name or self.name, "capabilities": {"extensions": extensions}}
        if ttl_ms is not None:
            p["detachedTtlMs"] = ttl_ms
        r = self.result("initialize", p, timeout)
        self.init_result = r
        self.session_id = r["sessionId"]
        self.send_obj({"jsonrpc": "2.0", "method": "initialized"})
        return r

    # -- io
    def _flush(self):
        if not self.out or self.dead:
            return
        try:
            n = self.sock.send(self.out[:1 << 20])
            del self.out[:n]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._gone()

    def _recv_once(self):
        """One non-blocking recv into inbuf: its size, 0 when nothing is there, None when gone."""
        try:
            data = self.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            self._gone()
            return None
        if not data:
            self._gone()
            return None
        self.bytes_in += len(data)
        self.inbuf += data
        return len(data)

    def _read(self, limit=8):
        for _ in range(limit):
            n = self._recv_once()
            if n is None:
                return
            if n < (1 << 20):
                break
        self._dispatch()

    def drain_now(self, max_bytes=None):
        """Reads what is buffered right now (used on paused connections)."""
        got = 0
        while not self.dead:
            n = self._recv_once()
            if not n:
                break
            got += n
            self._dispatch()
            if max_bytes is not None and got >= max_bytes:
                break
        return got

    def _gone(self):
        if not self.dead:
            self.eof = True
            self.dead = True
            try:
                self.sock.close()
            except OSError:
                pass

    def _dispatch(self):
        buf = self.inbuf
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            line = bytes(buf[start:nl])
            start = nl + 1
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.orphans.append({"unparsable": line[:200].decode(errors="replace")})
                continue
            if "method" in msg and "id" not in msg:
                m, p = msg["method"], msg.get("params") or {}
                for fn in self.listeners:
                    fn(self, m, p)
            elif "id" in msg:
                rid = msg["id"]
                call = self.calls.pop(rid, None) if isinstance(rid, (int, str)) and rid != -1 else None
                if call is None:
                    self.orphans.append(msg)
                else:
                    call.msg = msg
                    call.t1 = time.monotonic()
                    if call.cb:
                        call.cb(call)
            else:
                self.orphans.append(msg)
        del buf[:start]

    def close(self):
        if not self.dead:
            self.dead = True
            try:
                self.sock.close()
            except OSError:
                pass
        if self in self.hub.conns:
            self.hub.conns.remove(self)


# ---- stream checking --------------------------------------------------------------------------

class StreamState:
    """What one connection received of one process, checked as it arrives."""

    def __init__(self, key, expect=None, first_seq=1, pos=0):
        self.key = key
        self.expect = expect
        self.next_seq = first_seq   # the seq the next event must carry (unless a gap came first)
        self.pos = pos              # absolute byte offset of the next byte
        self.errors = []
        self.gaps = []
        self.gap_bytes = 0
        self.bytes = 0
        self.chunks = 0
        self.exited = None
        self.closed = None
        self.t_exited = None
        self.t_closed = None
        self.last_output_t = None
        self.tail = bytearray()     # the last few KiB, for messages and small checks
        self.keep_all = False
        self.all = bytearray()
        self.bad_gap_shape = 0

    def err(self, msg):
        if len(self.errors) < 5:
            self.errors.append(msg)

    def _seq(self, seq, what):
        if seq != self.next_seq:
            if seq < self.next_seq:
                self.err(f"{what} seq {seq} repeats or goes back (expected {self.next_seq})")
            else:
                self.err(f"silent hole: {what} seq {seq}, expected {self.next_seq}, no process/gap")
        self.next_seq = max(self.next_seq, seq + 1)

    def on_output(self, seq, data):
        self._seq(seq, "output")
        if self.closed is not None:
            self.err(f"output seq {seq} after closed")
        self.chunks += 1
        self.bytes += len(data)
        self.last_output_t = time.monotonic()
        if self.expect is not None and not self.expect.matches(self.pos, data):
            exp = self.expect.slice(self.pos, min(len(data), 80))
            self.err(f"bytes differ at offset {self.pos} (seq {seq}, {len(data)} bytes): got {bytes(data[:80])!r}, "
                     f"expected {exp!r}")
        self.pos += len(data)
        self.tail += data
        if len(self.tail) > 8192:
            del self.tail[:-4096]
        if self.keep_all:
            self.all += data

    def on_gap(self, p):
        self.gaps.append(p)
        b = p.get("bytes") or 0
        frm, to = p.get("fromSeq"), p.get("toSeq")
        if not isinstance(to, int):
            self.err(f"process/gap without toSeq: {p}")
            return
        if frm is None:
            self.bad_gap_shape += 1
        elif frm != self.next_seq:
            self.err(f"process/gap fromSeq {frm} but the next unseen seq is {self.next_seq}: {p}")
        if to + 1 < self.next_seq:
            self.err(f"process/gap toSeq {to} is behind what was already received (next {self.next_seq})")
        self.next_seq = max(self.next_seq, to + 1)
        self.pos += b
        self.gap_bytes += b

    def on_exited(self, p):
        self._seq(p.get("seq"), "exited")
        if self.exited is not None:
            self.err("exited twice")
        self.exited = p
        self.t_exited = time.monotonic()

    def on_closed(self, p):
        self._seq(p.get("seq"), "closed")
        if self.exited is None:
            self.err("closed before exited")
        self.closed = p
        self.t_closed = time.monotonic()

    def verdict(self):
        """[] when the stream is closed and complete or every missing byte was announced."""
        errs = list(self.errors)
        if self.closed is None:
            errs.append(f"no process/closed (exited={self.exited is not None}, {self.bytes} bytes)")
        elif self.expect is not None and self.pos != self.expect.total:
            errs.append(f"{self.pos} bytes accounted for ({self.bytes} received + {self.gap_bytes} in gaps), "
                        f"expected {self.expect.total}; tail {bytes(self.tail[-80:])!r}")
        return errs


class Tracker:
    """A Conn listener: one StreamState per (owner session, processId) it was told to watch."""

    def __init__(self, conn, stats=None):
        self.conn = conn
        self.streams = {}
        self.unknown = 0
        self.gap_notes = 0
        self.stats = stats if stats is not None else {}
        conn.listeners.append(self.on_note)

    def watch(self, key, expect=None, first_seq=1):
        st = StreamState(key, expect, first_seq)
        self.streams[key] = st
        return st

    def on_note(self, conn, method, p):
        key = (p.get("sessionId") or conn.session_id, p.get("processId"))
        st = self.streams.get(key)
        data = base64.b64decode(p["chunk"]) if method == "process/output" else None
        if data is not None:
            self.stats["bytes"] = self.stats.get("bytes", 0) + len(data)
        if st is None:
            self.unknown += 1
            return
        if method == "process/output":
            st.on_output(p["seq"], data)
        elif method == "process/gap":
            self.gap_notes += 1
            st.on_gap(p)
        elif method == "process/exited":
            st.on_exited(p)
        elif method == "process/closed":
            st.on_closed(p)


def replay_check(conn, process_id, expect, session_id=None, max_bytes=256 * 1024, timeout=30):
    """process/read from afterSeq 0, page by page: every byte at its offset, omitted ranges
    counted. Returns (errors, info)."""
    errs = []
    info = {"pages": 0, "bytes": 0, "omitted": 0}
    after = 0
    pos = 0
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        params = {"processId": process_id, "afterSeq": after, "maxBytes": max_bytes}
        if session_id:
            params["sessionId"] = session_id
        c = conn.call("process/read", params, 15)
        if not c.ok:
            errs.append(f"process/read afterSeq {after}: {json.dumps(c.msg)[:300] if c.msg else 'timeout'}")
            break
        r = c.result
        info["pages"] += 1
        om = r.get("omitted")
        om_left = om.get("bytes", 0) if om else 0
        if om:
            info["omitted"] += om_left
            if not (isinstance(om.get("fromSeq"), int) and isinstance(om.get("toSeq"), int)
                    and after < om["fromSeq"] <= om["toSeq"] + 1):
                errs.append(f"omitted range malformed for afterSeq {after}: {om}")
        last_seq = after
        for ch in r.get("chunks", []):
            data = base64.b64decode(ch["chunk"])
            if ch["seq"] <= last_seq:
                errs.append(f"chunk seq {ch['seq']} not increasing after {last_seq}")
            if expect is not None and not expect.matches(pos, data):
                if om_left and expect.matches(pos + om_left, data):
                    pos += om_left
                    om_left = 0
                else:
                    errs.append(f"replay bytes differ at offset {pos} (seq {ch['seq']}): got {data[:60]!r}, "
                                f"expected {expect.slice(pos, 60)!r}")
                    break
            last_seq = ch["seq"]
            pos += len(data)
            info["bytes"] += len(data)
        if om_left:
            pos += om_left  # the evicted range is at the end of this page
        nxt = r.get("nextSeq")
        if not isinstance(nxt, int) or nxt <= after:
            errs.append(f"nextSeq {nxt} does not advance past afterSeq {after}")
            break
        if r.get("closed") and not r.get("chunks") and not om:
            break
        after = nxt - 1
        if errs:
            break
    else:
        errs.append("replay did not finish in time")
    info["pos"] = pos
    if not errs and expect is not None and pos != expect.total:
        errs.append(f"replay accounts for {pos} bytes ({info['bytes']} read + {info['omitted']} omitted), "
                    f"expected {expect.total}")
    return errs, info
