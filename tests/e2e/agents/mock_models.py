#!/usr/bin/env python3
"""Scripted stand-ins for the Anthropic Messages API and the Gemini API (streaming SSE), stdlib only.

usage: mock_models.py --api anthropic|gemini --log REQUESTS.jsonl --marker MARK [--port-file FILE]

For tests/e2e/agents/mcp_agents_test.py, which runs the real Claude Code CLI and the real Gemini
CLI with `uexec mcp` as their MCP server. Each model request gets a reply chosen from what is
already in the request's history (so a retry is harmless): the next step of script() whose
tool result is not there yet, a call to one of uexec's MCP tools under the name the CLI gives it
(found in the request's tool list: Claude Code's mcp__uexec__NAME, Gemini CLI's mcp_uexec_NAME),
or at the end the text "done". Our call ids name the step (toolu_STEP_HEX, call_STEP_HEX), which
is how a result is matched to its step. Claude Code defers MCP tools by default (the system text
names them; none is in `tools`): the first step is then ToolSearch "select:..." (step
toolsearch), after which the schemas are in `tools`. A request without uexec's tools (Gemini's
routing classifier, a title, a token count) gets a short answer of the kind it asks for (JSON
that fits a response schema), so that nothing waits. Every request (method, path, headers but
the key, parsed JSON body, the step chosen) is appended to the log.

The script (steps name the tool results the checks read):
  small   exec_command `echo hi-42; seq 1 5`
  large   exec_command `seq 1 200000` (cut; its header names the omitted range)
  reread  read_output at the offset that header names
  tty     exec_command with tty: an interactive bash (MARK in its environment)
  type    write_stdin `echo typed-$((70+7))` into it
  server  exec_command `sleep 300` (MARK in its environment), a short yield: it keeps running
  list    list_sessions
  kill    kill_session on the sleep
then the text "done". The tty bash is left running: the CLI's exit must end it.
"""
import argparse
import json
import os
import re
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SMALL_CMD = "echo hi-42; seq 1 5"
SMALL_OUT = "hi-42\n1\n2\n3\n4\n5\n"
LARGE_CMD = "seq 1 200000"
LARGE_OUT = "".join("%d\n" % i for i in range(1, 200001))
OMITTED = re.compile(r"Omitted: bytes (\d+)-(\d+) \(truncated\); read_output session_id=(\d+) offset=(\d+) length=(\d+)")
REREAD_BYTES = 2000
TYPED = "echo typed-$((70+7))\n"  # the terminal echoes this line; only the shell's answer says typed-77
TYPED_OUT = re.compile(r"^typed-77\r?$", re.M)
RUNNING = re.compile(r"session ID (\d+)")
FINAL_TEXT = "done"
TOOLS = ("exec_command", "write_stdin", "read_output", "list_sessions", "kill_session")

LOCK = threading.Lock()
STATE = {"api": "anthropic", "marker": "MARK", "log": None, "n": 0}


def script(results):
    """The next (step, tool, args) given the results so far (step -> text), or None when done."""
    marker = STATE["marker"]
    steps = [("small", "exec_command", {"cmd": SMALL_CMD}),
             ("large", "exec_command", {"cmd": LARGE_CMD})]
    m = OMITTED.search(results.get("large", ""))
    if m:
        steps.append(("reread", "read_output", {"session_id": int(m.group(3)), "offset": int(m.group(4)),
                                                "length": min(int(m.group(5)), REREAD_BYTES)}))
    steps.append(("tty", "exec_command", {"cmd": "UEXEC_E2E_MARK=%s bash --norc -i" % marker, "tty": True,
                                          "yield_time_ms": 1000}))
    m = RUNNING.search(results.get("tty", ""))
    if m:
        steps.append(("type", "write_stdin", {"session_id": int(m.group(1)), "chars": TYPED,
                                              "yield_time_ms": 10000, "until": {"regex": "^typed-77"}}))
    steps.append(("server", "exec_command", {"cmd": "UEXEC_E2E_MARK=%s sleep 300" % marker,
                                             "yield_time_ms": 500}))
    m = RUNNING.search(results.get("server", ""))
    if m:
        steps.append(("list", "list_sessions", {}))
        steps.append(("kill", "kill_session", {"session_id": int(m.group(1))}))
    for step in steps:
        if step[0] not in results:
            return step
    return None


def exposed_name(names, base):
    """The name under which the CLI shows uexec's tool `base` to the model (None: not shown)."""
    for n in names:  # Claude Code: mcp__uexec__BASE; Gemini CLI: mcp_uexec_BASE
        if n and "uexec" in n and n.endswith("_" + base):
            return n
    return base if base in names else None


def step_of_call_id(call_id):
    """Our call ids are "<prefix>_<step>_<hex>"; the step, or None for an id we did not make."""
    m = re.match(r"^(?:toolu|call)_([a-z]+)_[0-9a-f]{8}$", call_id or "")
    return m.group(1) if m else None


# ---------------------------------------------------------------- Anthropic Messages API
def anthropic_text(content):
    if isinstance(content, str):
        return content
    out = []
    for c in content or []:
        if isinstance(c, dict) and c.get("type") == "text":
            out.append(c.get("text", ""))
        elif isinstance(c, dict):
            out.append(json.dumps(c))
    return "".join(out)


def anthropic_results(body):
    """step -> the text of its tool_result, from the request's messages."""
    res = {}
    for msg in body.get("messages") or []:
        if msg.get("role") != "user" or not isinstance(msg.get("content"), list):
            continue
        for blk in msg["content"]:
            if isinstance(blk, dict) and blk.get("type") == "tool_result":
                step = step_of_call_id(blk.get("tool_use_id"))
                if step:
                    res.setdefault(step, anthropic_text(blk.get("content")))
    return res


def anthropic_reply(body):
    """(step, content blocks, stop_reason)."""
    names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    if not exposed_name(names, "exec_command"):
        # Claude Code defers MCP tools: the system text names them, and ToolSearch loads their schemas.
        deferred = sorted(set(re.findall(r"mcp__uexec__[a-z_]+", json.dumps(body.get("messages")))))
        if deferred and "ToolSearch" in names and "toolsearch" not in anthropic_results(body):
            return "toolsearch", [{"type": "tool_use", "id": "toolu_toolsearch_%s" % uuid.uuid4().hex[:8],
                                   "name": "ToolSearch", "input": {"query": "select:" + ",".join(deferred),
                                                                   "max_results": len(deferred)}}], "tool_use"
        return "side", [{"type": "text", "text": "ok"}], "end_turn"
    nxt = script(anthropic_results(body))
    if nxt is None:
        return "final", [{"type": "text", "text": FINAL_TEXT}], "end_turn"
    step, tool, args = nxt
    name = exposed_name(names, tool)
    if name is None:
        return "missing-" + tool, [{"type": "text", "text": "no tool " + tool}], "end_turn"
    return step, [{"type": "tool_use", "id": "toolu_%s_%s" % (step, uuid.uuid4().hex[:8]), "name": name,
                   "input": args}], "tool_use"


def anthropic_sse(model, blocks, stop_reason):
    mid = "msg_" + uuid.uuid4().hex[:16]
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    evs = [("message_start", {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            evs.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": {"type": "text", "text": ""}}))
            evs.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "text_delta", "text": b["text"]}}))
        else:
            evs.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
            js = json.dumps(b["input"])
            half = len(js) // 2  # two deltas: the CLI must join partial JSON
            for part in (js[:half], js[half:]):
                evs.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "input_json_delta", "partial_json": part}}))
        evs.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    evs.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                  "usage": {"output_tokens": 5}}))
    evs.append(("message_stop", {"type": "message_stop"}))
    return "".join("event: %s\ndata: %s\n\n" % (e, json.dumps(d)) for e, d in evs).encode()


def anthropic_post(path, body):
    path = path.split("?", 1)[0]
    if path.endswith("/count_tokens"):
        return "count_tokens", 200, "application/json", json.dumps({"input_tokens": 100}).encode()
    if not path.endswith("/v1/messages"):
        return "unhandled", 404, "application/json", json.dumps({
            "type": "error", "error": {"type": "not_found_error", "message": "not handled by mock"}}).encode()
    step, blocks, stop = anthropic_reply(body)
    model = body.get("model") or "claude-mock"
    if body.get("stream"):
        return step, 200, "text/event-stream", anthropic_sse(model, blocks, stop)
    msg = {"id": "msg_" + uuid.uuid4().hex[:16], "type": "message", "role": "assistant", "model": model,
           "content": blocks, "stop_reason": stop, "stop_sequence": None,
           "usage": {"input_tokens": 10, "output_tokens": 5}}
    return step, 200, "application/json", json.dumps(msg).encode()


# ---------------------------------------------------------------- Gemini API
def gemini_tool_names(body):
    names = []
    for t in body.get("tools") or []:
        for d in (t or {}).get("functionDeclarations") or []:
            names.append(d.get("name"))
    return names


def gemini_results(body):
    """step -> the text of its functionResponse. A response is matched to our call by its id when
    the CLI keeps it, else by position (the i-th response answers the i-th call)."""
    calls, responses = [], []
    for c in body.get("contents") or []:
        for p in c.get("parts") or []:
            if "functionCall" in p:
                calls.append(p["functionCall"])
            elif "functionResponse" in p:
                responses.append(p["functionResponse"])
    res = {}
    for i, r in enumerate(responses):
        step = step_of_call_id(r.get("id"))
        if step is None and i < len(calls):
            step = step_of_call_id(calls[i].get("id"))
        if step:
            res.setdefault(step, gemini_response_text(r.get("response")))
    return res


def gemini_response_text(resp):
    """The text a functionResponse carries: its `output` (or `content`) string, or its text parts;
    anything else as JSON (so a check sees what the model saw)."""
    if isinstance(resp, dict):
        for k in ("output", "content", "llmContent"):
            v = resp.get(k)
            if isinstance(v, str):
                return v
            if isinstance(v, list) and all(isinstance(x, dict) and "text" in x for x in v):
                return "".join(x["text"] for x in v)
    return json.dumps(resp)


def schema_default(schema, hint=""):
    """A value that fits a JSON schema (for structured side requests such as a next-speaker check)."""
    if not isinstance(schema, dict):
        return "ok"
    t = str(schema.get("type", "")).lower()
    if schema.get("enum"):
        enum = schema["enum"]
        return "user" if "user" in enum else enum[0]
    if t == "object" or "properties" in schema:
        return {k: schema_default(v, k) for k, v in (schema.get("properties") or {}).items()}
    if t == "array":
        return []
    if t in ("integer", "number"):
        return schema.get("minimum", 1)
    if t == "boolean":
        return False
    if hint == "next_speaker":
        return "user"
    return "ok"


def gemini_reply(body):
    """(step, parts)."""
    names = gemini_tool_names(body)
    if not exposed_name(names, "exec_command"):
        gc = body.get("generationConfig") or {}
        schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
        if gc.get("responseMimeType") == "application/json" or schema:
            return "side-json", [{"text": json.dumps(schema_default(schema))}]
        return "side", [{"text": "ok"}]
    nxt = script(gemini_results(body))
    if nxt is None:
        return "final", [{"text": FINAL_TEXT}]
    step, tool, args = nxt
    name = exposed_name(names, tool)
    if name is None:
        return "missing-" + tool, [{"text": "no tool " + tool}]
    return step, [{"functionCall": {"id": "call_%s_%s" % (step, uuid.uuid4().hex[:8]), "name": name, "args": args}}]


def gemini_chunk(parts, model):
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": model}


def gemini_post(path, body):
    m = re.search(r"/models/([^/:]+):(\w+)", path)
    if not m:
        return "unhandled", 404, "application/json", json.dumps({
            "error": {"code": 404, "message": "not handled by mock", "status": "NOT_FOUND"}}).encode()
    model, method = m.group(1), m.group(2)
    if method == "countTokens":
        return "countTokens", 200, "application/json", json.dumps({"totalTokens": 100}).encode()
    if method == "embedContent":
        return "embed", 200, "application/json", json.dumps({"embedding": {"values": [0.0] * 8}}).encode()
    if method not in ("generateContent", "streamGenerateContent"):
        return "unhandled", 404, "application/json", json.dumps({
            "error": {"code": 404, "message": "not handled by mock", "status": "NOT_FOUND"}}).encode()
    step, parts = gemini_reply(body)
    chunk = gemini_chunk(parts, model)
    if method == "streamGenerateContent":
        if "alt=sse" in path:
            return step, 200, "text/event-stream", ("data: %s\r\n\r\n" % json.dumps(chunk)).encode()
        return step, 200, "application/json", json.dumps([chunk]).encode()
    return step, 200, "application/json", json.dumps(chunk).encode()


# ---------------------------------------------------------------- HTTP
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("mock: " + (fmt % args) + "\n")

    def _record(self, raw, parsed, step):
        rec = {"method": self.command, "path": self.path, "step": step,
               "headers": {k: v for k, v in self.headers.items()
                           if k.lower() not in ("authorization", "x-api-key", "x-goog-api-key")},
               "body": parsed}
        if parsed is None and raw:
            rec["body_raw"] = raw[:2000].decode("utf-8", "replace")
        with LOCK:
            STATE["n"] += 1
            rec["n"] = STATE["n"]
            with open(STATE["log"], "a") as f:
                f.write(json.dumps(rec) + "\n")

    def _send(self, code, ctype, payload):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_HEAD(self):
        self._record(b"", None, "head")
        self._send(200, "text/plain", b"")

    def do_GET(self):
        self._record(b"", None, "get")
        self._send(404, "application/json", b'{"error":{"code":404,"message":"not handled by mock"}}')

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        post = anthropic_post if STATE["api"] == "anthropic" else gemini_post
        try:
            step, code, ctype, payload = post(self.path, parsed if isinstance(parsed, dict) else {})
        except Exception as e:  # a bug in the script must not hang the CLI
            step, code, ctype, payload = "mock-error", 500, "application/json", json.dumps(
                {"error": {"code": 500, "message": "mock error: %r" % e}}).encode()
        self._record(raw, parsed, step)
        self._send(code, ctype, payload)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", choices=["anthropic", "gemini"], required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--marker", default="MARK")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    a = ap.parse_args()
    STATE.update(api=a.api, log=a.log, marker=a.marker)
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(a.port_file + ".tmp", a.port_file)
    sys.stderr.write("mock %s listening on 127.0.0.1:%d\n" % (a.api, port))
    srv.serve_forever()


if __name__ == "__main__":
    main()
