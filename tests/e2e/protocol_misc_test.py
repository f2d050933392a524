#!/usr/bin/env python3
"""Request validation and output accounting through the real front doors.

  - a NUL byte in argv, the environment or a path is refused, never cut at the NUL:
    process/start and exec/command answer -32602, MCP exec_command an error result;
  - a WebSocket upgrade that offers only `uexec.auth.<token>` (no `uexec.v1`) gets an HTTP
    status that says what to offer, not a dropped connection;
  - after more output than the ring retains, MCP read_output of the retained head returns its
    bytes, and process/read's `omitted.bytes` counts what that reader missed, not everything
    evicted so far;
  - on stdio, a last line without a newline before EOF is still answered.

    python3 tests/e2e/protocol_misc_test.py build/src/uexec
"""
import base64
import json
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from e2e_util import Checks, Peer  # noqa: E402

uexec = sys.argv[1]
check = Checks()


NUL_CASES = [
    ("argv", {"argv": ["/bin/echo\u0000x"]}),
    ("argv (a later one)", {"argv": ["/bin/echo", "a\u0000b"]}),
    ("env value", {"argv": ["/bin/true"], "env": {"A": "x\u0000y"}}),
    ("env key", {"argv": ["/bin/true"], "env": {"A\u0000B": "x"}}),
    ("envPolicy.set", {"argv": ["/bin/true"], "envPolicy": {"inherit": "core", "set": {"A": "x\u0000y"}}}),
    ("cwd", {"argv": ["/bin/true"], "cwd": "file:///tmp\u0000/x"}),
    ("arg0", {"argv": ["/bin/true"], "arg0": "tr\u0000ue"}),
]

# ---- 1. process/start and exec/command over `uexec exec-server --listen stdio` -----------------
es = Peer([uexec, "exec-server", "--listen", "stdio"])
r = es.request("initialize", {"clientName": "protocol-misc"})
check("exec-server initialize", "result" in r, r)
es.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
for i, (what, params) in enumerate(NUL_CASES):
    r = es.request("process/start", {"processId": f"nul-{i}", **params})
    err = r.get("error") or {}
    check(f"process/start with a NUL in {what}: -32602", err.get("code") == -32602 and "NUL" in err.get("message", ""), r)
r = es.request("process/list", {})
check("no process was started by the refused requests", "processes" in r.get("result", {}) and
      not [p for p in r["result"]["processes"] if p.get("processId", "").startswith("nul-")], r)
for what, args in [("cmd", {"cmd": "echo ok\u0000; echo injected", "login": False}),
                   ("workdir", {"cmd": "pwd", "workdir": "/tmp\u0000/x", "login": False}),
                   ("shell", {"cmd": "true", "shell": "/bin/sh\u0000x", "login": False})]:
    r = es.request("exec/command", args)
    err = r.get("error") or {}
    check(f"exec/command with a NUL in {what}: -32602", err.get("code") == -32602 and "NUL" in err.get("message", ""), r)
r = es.request("process/start", {"processId": "fine", "argv": ["/bin/echo", "still-serving"]})
check("a clean process/start still works", r.get("result", {}).get("processId") == "fine", r)

# process/read's omitted.bytes: a reader that read part of the output, then missed some.
# retain 64 KiB: head 32 KiB, tail 32 KiB. The child writes 16 KiB blocks, each after a line
# on its stdin, so the reader knows exactly where it stopped.
script = ("import sys\n"
          "for i in range(64):\n"
          "    sys.stdin.readline()\n"
          "    sys.stdout.write(chr(65 + i % 26) * 16384); sys.stdout.flush()\n")
r = es.request("process/start", {"processId": "flood", "argv": ["python3", "-u", "-c", script], "pipeStdin": True,
                                 "limits": {"retainedBytes": 65536}})
check("flood started", "result" in r, r)


def write_line(pid):
    return es.request("process/write", {"processId": pid, "chunk": base64.b64encode(b"\n").decode()})


def read_all(pid, after, until_bytes):
    """process/read from `after` until `until_bytes` more bytes came; (bytes, last seq, omitted)."""
    got, last, omitted = 0, after, None
    while got < until_bytes:
        r = es.request("process/read", {"processId": pid, "afterSeq": last, "waitMs": 5000})
        res = r.get("result", {})
        if res.get("omitted"):
            omitted = res["omitted"]
        for c in res.get("chunks", []):
            got += len(base64.b64decode(c["chunk"]))
            last = c["seq"]
        if not res.get("chunks") and res.get("exited"):
            break
    return got, last, omitted


# Blocks 0-5 (96 KiB): the reader reads each before the next is written (a block may come in
# more than one chunk), past the head into the tail.
got, last = 0, 0
for _ in range(6):
    write_line("flood")
    n, last, om = read_all("flood", last, 16384)
    got += n
check("the reader got the first 96 KiB", got == 6 * 16384, (got, om))
# Blocks 6-21 (256 KiB) while the reader does not read: it misses all but the last 32 KiB.
for _ in range(16):
    write_line("flood")
# Wait until the ring holds all of it (outputBytes in process/list).
for _ in range(200):
    rows = es.request("process/list", {}).get("result", {}).get("processes", [])
    row = next((p for p in rows if p.get("processId") == "flood"), {})
    if row.get("outputBytes", 0) >= 22 * 16384:
        break
    es.request("process/read", {"processId": "flood", "afterSeq": 10**9, "waitMs": 50})
evicted_total = row.get("omitted", {}).get("bytes") if row.get("omitted") else None
r = es.request("process/read", {"processId": "flood", "afterSeq": last})
res = r.get("result", {})
missed = 22 * 16384 - 6 * 16384 - 32768  # written after the reader stopped, minus the retained tail
back = sum(len(base64.b64decode(c["chunk"])) for c in res.get("chunks", []))
check("process/read after a miss: omitted.bytes is what this reader missed",
      (res.get("omitted") or {}).get("bytes") == missed and back == 32768,
      f"omitted {res.get('omitted')}, {back} bytes back; missed {missed}, evicted in all {evicted_total}")
check("and the ring's own count is larger (everything evicted)", evicted_total == 22 * 16384 - 65536, evicted_total)
es.request("process/terminate", {"processId": "flood"})
es.close()

# ---- 2. MCP exec_command and read_output over `uexec mcp` ---------------------------------------
mcp = Peer([uexec, "mcp", "--structured-content"])
r = mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
check("mcp initialize", "result" in r, r)
mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def tool(name, args, timeout=60):
    r = mcp.request("tools/call", {"name": name, "arguments": args}, timeout)
    return r.get("result", {}), r


for what, args in [("cmd", {"cmd": "echo ok\u0000; echo injected", "login": False}),
                   ("workdir", {"cmd": "pwd", "workdir": "/tmp\u0000/x", "login": False}),
                   ("shell", {"cmd": "true", "shell": "/bin/sh\u0000x", "login": False})]:
    res, raw = tool("exec_command", args)
    text = "".join(c.get("text", "") for c in res.get("content", []))
    check(f"MCP exec_command with a NUL in {what}: an error result", res.get("isError") is True and "NUL" in text, raw)

# More than the ring retains (1 MiB by default: a 512 KiB head); a line number every 64 bytes.
res, raw = tool("exec_command", {"cmd": "python3 -c \"import sys\nfor i in range(40000): sys.stdout.write('%063d\\n' % i)\"",
                                 "login": False, "yield_time_ms": 20000, "max_output_tokens": 2000})
sc = res.get("structuredContent", {})
check("exec_command of 2.5 MB exits", sc.get("exit_code") == 0, json.dumps(raw)[:400])
check("exec_command showed the head", ("0" * 63 + "\n") in sc.get("output", "")[:200], sc.get("output", "")[:100])
sid = sc.get("session_id") or sc.get("session")
expected_head = "".join("%063d\n" % i for i in range(524288 // 64))
res, raw = tool("read_output", {"session_id": sid, "offset": 0, "length": 524288})
sc = res.get("structuredContent", {})
out = sc.get("output", "")
om = sc.get("omitted") or []
check("read_output of the retained head (0-524287): its bytes, cut only by the token budget, nothing evicted",
      res.get("isError") is False and expected_head[:1000] in out and sc.get("range", {}).get("length") == 524288 and
      not [o for o in om if o.get("kind") == "evicted"],
      f"{len(out)} chars, range {sc.get('range')}, omitted {om}, {out[:80]!r}")
got = ""
for off in range(0, 524288, 32768):
    res, raw = tool("read_output", {"session_id": sid, "offset": off, "length": 32768})
    got += res.get("structuredContent", {}).get("output", "")
check("the retained head read back in 32 KiB pieces is byte-exact", got == expected_head,
      f"{len(got)} of {len(expected_head)} chars")
res, raw = tool("read_output", {"session_id": sid, "offset": 524000, "length": 1000})
sc = res.get("structuredContent", {})
out = sc.get("output", "")
om = sc.get("omitted") or []
check("read_output across the head's end: the head's last bytes, then the evicted part of the range",
      out.startswith(expected_head[524000:]) and "712 bytes omitted" in out and
      [o for o in om if o.get("kind") == "evicted"] == [{"offset": 524288, "length": 712, "kind": "evicted"}],
      f"{out[:400]!r} omitted {om} range {sc.get('range')}")
res, raw = tool("read_output", {"session_id": sid, "offset": 600000, "length": 1000, "max_output_tokens": 200000})
sc = res.get("structuredContent", {})
om = sc.get("omitted") or []
check("read_output inside the evicted middle: no bytes, and an omitted marker saying so",
      any(o.get("kind") == "evicted" for o in om), f"{sc.get('output', '')[:120]!r} omitted {om} range {sc.get('range')}")
mcp.close()

# ---- 2b. `uexec mcp` by default: text only, everything a model needs in it ---------------------
# (Codex and Claude Code show the model JSON.stringify(structuredContent) whenever it is there;
# Gemini CLI shows the text. Codex also cuts long results in the middle.)
mcp = Peer([uexec, "mcp"])
mcp.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
tools = mcp.request("tools/list", {}).get("result", {}).get("tools", [])
check("by default no tool declares an outputSchema", tools and not [t for t in tools if "outputSchema" in t],
      [t.get("name") for t in tools if "outputSchema" in t])
res, raw = tool("exec_command", {"cmd": "printf 'hi-42\\n'; seq 1 8000; exit 3", "login": False, "yield_time_ms": 20000,
                                 "max_output_tokens": 500})
text = "".join(c.get("text", "") for c in res.get("content", []))
header = text.split("\nOutput:\n", 1)[0]
m = re.search(r"Session ID: (\d+) \(exited", header)
om = re.search(r"Omitted: bytes (\d+)-(\d+) \(truncated\); read_output session_id=(\d+) offset=(\d+) length=(\d+)", header)
check("by default a result has no structuredContent", "structuredContent" not in res, json.dumps(raw)[:300])
check("the text names the exited session, its exit code and the truncated range in its header",
      m is not None and "Process exited with code 3" in header and om is not None and om.group(3) == m.group(1),
      header)
check("the output itself is plain text (no JSON escaping)", "hi-42\n1\n2\n" in text, text[:200])
if m and om:
    res, raw = tool("read_output", {"session_id": int(m.group(1)), "offset": int(om.group(4)), "length": int(om.group(5)),
                                    "max_output_tokens": 10000})
    back = "".join(c.get("text", "") for c in res.get("content", [])).split("\nOutput:\n", 1)[-1]
    whole = "hi-42\n" + "".join(f"{i}\n" for i in range(1, 8001))
    start, length = int(om.group(4)), int(om.group(5))
    check("read_output at the header's offset returns exactly the truncated bytes",
          back == whole[start:start + length], f"{len(back)} chars, want {length}; {back[:80]!r}")
res, raw = tool("exec_command", {"cmd": "seq 1 200000", "login": False, "yield_time_ms": 20000})
text = "".join(c.get("text", "") for c in res.get("content", []))
check("a default result fits Gemini CLI's 40 000-character cut (wrapped in 41 characters of its own)",
      38000 < len(text) <= 40000 - 41 and "Omitted: bytes" in text, len(text))
mcp.close()

# ---- 3. a WebSocket upgrade offering only the auth subprotocol ---------------------------------
token = "t0k-" + os.urandom(8).hex()
ws = subprocess.Popen([uexec, "exec-server", "--listen", "ws://127.0.0.1:0"], stdout=subprocess.PIPE,
                      stderr=subprocess.DEVNULL, env=dict(os.environ, UEXEC_WS_TOKEN=token))
url = ws.stdout.readline().decode().strip()
port = int(url.rsplit(":", 1)[1].strip("/"))


def upgrade(protocols):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    req = (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
           f"Sec-WebSocket-Protocol: {protocols}\r\n\r\n")
    s.sendall(req.encode())
    data = b""
    try:
        while True:
            c = s.recv(65536)
            if not c:
                break
            data += c
            if data.startswith(b"HTTP/1.1 101") and b"\r\n\r\n" in data:
                break
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    return data.decode(errors="replace")


resp = upgrade(f"uexec.auth.{token}")
check("an upgrade with only uexec.auth.<token>: an HTTP status that names uexec.v1",
      re.match(r"HTTP/1\.[01] 400", resp) is not None and "uexec.v1" in resp, repr(resp[:300]))
resp = upgrade("uexec.auth.wrong")
check("only a wrong uexec.auth.<token>: 401 first", re.match(r"HTTP/1\.[01] 401", resp) is not None, repr(resp[:200]))
resp = upgrade(f"uexec.v1, uexec.auth.{token}")
check("uexec.v1 and the token: 101", resp.startswith("HTTP/1.1 101"), repr(resp[:200]))
resp = upgrade(f"uexec.v1, uexec.auth.{token}, " + ", ".join(f"filler-{i}" for i in range(20)))
check("a subprotocol list too long for the server: an HTTP status, not a drop",
      re.match(r"HTTP/1\.[01] 4", resp) is not None, repr(resp[:300]))
ws.terminate()
ws.wait(timeout=20)

# ---- 4. stdio framing: a last line without a newline before EOF --------------------------------
# It is still a line, and answered before the server exits (it used to be dropped; Codex drops
# it too at EOF, so this is uexec's own rule, docs/protocol.md §1).
p = subprocess.run([uexec, "exec-server", "--listen", "stdio"], capture_output=True, timeout=30,
                   input=b'{"id":"first","method":"initialize","params":{"clientName":"t"}}\n'
                         b'{"method":"initialized","params":{}}\n'
                         b'{"id":"last-line","method":"environment/status","params":{}}')
replies = {}
for line in p.stdout.splitlines():
    try:
        m = json.loads(line)
        replies[json.dumps(m.get("id"))] = m
    except ValueError:
        pass
check("stdio: a last line without a newline is answered at EOF",
      "result" in replies.get(json.dumps("last-line"), {}), p.stdout[-400:])
check("stdio: and the server then exits 0", p.returncode == 0, p.returncode)

print("protocol-misc: ", end="")
sys.exit(check.exit_code())
