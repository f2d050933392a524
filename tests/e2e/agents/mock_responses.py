#!/usr/bin/env python3
"""Scripted stand-in for the OpenAI Responses API (streaming SSE), stdlib only.

Usage: mock_responses.py --log REQUESTS.jsonl [--port 0] [--port-file FILE] [--scenario basic|rich]

For tests/e2e/agents/codex_env_test.py.

Each POST .../responses gets a reply chosen from what is already in the
request's `input` (so retries are harmless):
  step 1: no tool output yet          -> call the shell tool: echo hello-from-uexec
  step 2: shell output present        -> apply_patch creating made.txt
  step 3: apply_patch output present  -> assistant message "done"
The "rich" scenario adds steps between 2 and 3 (rich_steps): a patch that updates, adds a
nested file and deletes, a patch that escapes the workspace, a command reading back what the
patches wrote, a tty session driven by
write_stdin, a command naming its parent process, a write outside the workspace, and a
command that writes to stderr and exits 3. The "mcp" scenario calls uexec's MCP tools instead
(mcp_steps), the script mock_models.py plays for Claude Code and Gemini CLI: a small command,
a large one, read_output at the offset its header names, a tty bash driven by write_stdin, a
`sleep 300` left running, list_sessions, kill_session.
Every request (method, path, headers, parsed JSON body) is appended to the log.
"""
import argparse
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mock_models  # noqa: E402  (the MCP scenario's script, shared with Claude Code's and Gemini's)

ECHO_CMD = "echo hello-from-uexec"
MADE_CONTENT = "made by apply_patch via codex e2e\nsecond line\n"
PATCH = (
    "*** Begin Patch\n"
    "*** Add File: made.txt\n"
    + "".join("+" + line + "\n" for line in MADE_CONTENT.splitlines())
    + "*** End Patch\n"
)

LOCK = threading.Lock()
COUNTER = {"n": 0}


def tool_index(body):
    """name -> tool definition from the request's `tools`."""
    out = {}
    for t in body.get("tools") or []:
        name = t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
        out[name] = t
    return out


def call_outputs(body):
    """List of (call_id, output-item) for all tool outputs in `input`."""
    res = []
    for item in body.get("input") or []:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            res.append((item.get("call_id"), item))
    return res


def shell_call_item(tools):
    if "exec_command" in tools:
        return {"type": "function_call", "name": "exec_command", "call_id": "call_echo",
                "arguments": json.dumps({"cmd": ECHO_CMD, "yield_time_ms": 5000})}
    if "shell_command" in tools:
        return {"type": "function_call", "name": "shell_command", "call_id": "call_echo",
                "arguments": json.dumps({"command": ECHO_CMD})}
    if "shell" in tools:
        return {"type": "function_call", "name": "shell", "call_id": "call_echo",
                "arguments": json.dumps({"command": ["bash", "-lc", ECHO_CMD]})}
    return None


def patch_call_item(tools):
    t = tools.get("apply_patch")
    if t is not None and t.get("type") == "custom":
        return {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_patch",
                "input": PATCH}
    if t is not None:
        return {"type": "function_call", "name": "apply_patch", "call_id": "call_patch",
                "arguments": json.dumps({"input": PATCH})}
    # No apply_patch tool advertised: fall back to the shell tool, which Codex
    # intercepts when the command is `apply_patch <patch>`.
    if "exec_command" in tools:
        return {"type": "function_call", "name": "exec_command", "call_id": "call_patch",
                "arguments": json.dumps({"cmd": "apply_patch <<'EOF'\n" + PATCH + "EOF\n"})}
    if "shell" in tools:
        return {"type": "function_call", "name": "shell", "call_id": "call_patch",
                "arguments": json.dumps({"command": ["apply_patch", PATCH]})}
    return None


# --- "rich" scenario extras (exercise more of the exec-server protocol) ---
MADE_CONTENT_V2 = "made by apply_patch via codex e2e\nsecond line UPDATED\n"
PATCH2 = (
    "*** Begin Patch\n"
    "*** Update File: made.txt\n"
    "@@\n"
    " made by apply_patch via codex e2e\n"
    "-second line\n"
    "+second line UPDATED\n"
    "*** Add File: sub/dir/nested.txt\n"
    "+nested file\n"
    "*** Delete File: victim.txt\n"
    "*** End Patch\n"
)
INTERACTIVE_CMD = "read -r x; echo got-$x"
SCENARIO = {"name": "basic"}


def find_output(body, call_id):
    for cid, item in call_outputs(body):
        if cid == call_id:
            out = item.get("output")
            return out if isinstance(out, str) else json.dumps(out)
    return None


def rich_steps(tools, body):
    """Extra steps after the basic echo + add-file patch."""
    steps = []
    t = tools.get("apply_patch")
    if t is not None and t.get("type") == "custom":
        steps.append(("step-patch2", {"type": "custom_tool_call", "name": "apply_patch",
                                      "call_id": "call_patch2", "input": PATCH2}))
    elif t is not None:
        steps.append(("step-patch2", {"type": "function_call", "name": "apply_patch",
                                      "call_id": "call_patch2",
                                      "arguments": json.dumps({"input": PATCH2})}))
    esc_patch = "*** Begin Patch\n*** Add File: ../outside_patch.txt\n+escaped\n*** End Patch\n"
    if t is not None and t.get("type") == "custom":
        steps.append(("step-patch-escape", {"type": "custom_tool_call", "name": "apply_patch",
                                            "call_id": "call_patch_escape", "input": esc_patch}))
    if "exec_command" in tools:  # what apply_patch wrote, read back by a command
        steps.append(("step-readback", {
            "type": "function_call", "name": "exec_command", "call_id": "call_readback",
            "arguments": json.dumps({"cmd": "cat made.txt sub/dir/nested.txt", "yield_time_ms": 5000})}))
    if "exec_command" in tools and "write_stdin" in tools:
        steps.append(("step-interactive-start", {
            "type": "function_call", "name": "exec_command", "call_id": "call_stdin",
            "arguments": json.dumps({"cmd": INTERACTIVE_CMD, "tty": True, "yield_time_ms": 500})}))
        out = find_output(body, "call_stdin") or ""
        m = re.search(r"session ID (\d+)", out)
        if m:
            steps.append(("step-interactive-write", {
                "type": "function_call", "name": "write_stdin", "call_id": "call_write",
                "arguments": json.dumps({"session_id": int(m.group(1)), "chars": "ping\n",
                                         "yield_time_ms": 2000})}))
        steps.append(("step-whoami", {
            "type": "function_call", "name": "exec_command", "call_id": "call_whoami",
            "arguments": json.dumps({"cmd": "echo PARENT=$(tr '\\0' ' ' < /proc/$PPID/cmdline)",
                                     "yield_time_ms": 5000})}))
        steps.append(("step-escape", {
            "type": "function_call", "name": "exec_command", "call_id": "call_escape",
            "arguments": json.dumps({"cmd": "echo escape > ../outside.txt; echo ESCAPE_RC=$?",
                                     "yield_time_ms": 5000})}))
        steps.append(("step-stderr-exit", {
            "type": "function_call", "name": "exec_command", "call_id": "call_fail",
            "arguments": json.dumps({"cmd": "echo to-stderr 1>&2; exit 3", "yield_time_ms": 5000})}))
    return steps


# --- "mcp" scenario: uexec's MCP tools (`uexec mcp`, Codex's namespace mcp__uexec), the script
# mock_models.py plays for Claude Code and Gemini CLI ---
MCP_OMITTED = mock_models.OMITTED
MCP_REREAD_BYTES = mock_models.REREAD_BYTES


def output_text(item):
    """A tool output's text: Codex passes an MCP result's text items as a list of input_text."""
    out = item.get("output")
    if isinstance(out, list):
        return "".join(part.get("text", "") for part in out if isinstance(part, dict))
    return out if isinstance(out, str) else json.dumps(out)


def mcp_results(body):
    """step -> the text of its tool output (our call ids are call_mcp_<step>)."""
    return {cid[len("call_mcp_"):]: output_text(item) for cid, item in call_outputs(body)
            if (cid or "").startswith("call_mcp_")}


def mcp_steps(tools, body):
    """The next step of mock_models.script(), as a call to Codex's mcp__uexec namespace."""
    if "mcp__uexec" not in tools:
        return []
    nxt = mock_models.script(mcp_results(body))
    if nxt is None:
        return []
    step, tool, args = nxt
    return [("mcp-" + step, {"type": "function_call", "namespace": "mcp__uexec", "name": tool,
                             "call_id": "call_mcp_" + step, "arguments": json.dumps(args)})]


def choose_items(body):
    tools = tool_index(body)
    seen = {cid for cid, _ in call_outputs(body)}
    if not tools:
        return "no-tools", [message_item("done")]
    if SCENARIO["name"] == "mcp":
        steps = mcp_steps(tools, body)
    else:
        steps = [("step1-shell", shell_call_item(tools)), ("step2-patch", patch_call_item(tools))]
    if SCENARIO["name"] == "rich":
        steps += rich_steps(tools, body)
    for name, item in steps:
        if item and item["call_id"] not in seen:
            return name, [item]
    return "step-final", [message_item("done")]


def message_item(text):
    return {"type": "message", "role": "assistant", "id": "msg_final",
            "content": [{"type": "output_text", "text": text}]}


def sse(events):
    out = []
    for ev in events:
        out.append("event: %s\ndata: %s\n\n" % (ev["type"], json.dumps(ev)))
    return "".join(out).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path = None

    def log_message(self, fmt, *args):  # quiet
        sys.stderr.write("mock: " + (fmt % args) + "\n")

    def _record(self, body_raw, parsed, step):
        rec = {"method": self.command, "path": self.path,
               "headers": {k: v for k, v in self.headers.items() if k.lower() != "authorization"},
               "step": step, "body": parsed}
        if parsed is None and body_raw:
            rec["body_raw"] = body_raw[:2000].decode("utf-8", "replace")
        with LOCK:
            with open(self.log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")

    def _send(self, code, ctype, payload):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        self._record(b"", None, "get")
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, "application/json", json.dumps({"models": [], "data": []}).encode())
        else:
            self._send(404, "application/json", b'{"error":"not found"}')

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        parsed = None
        try:
            parsed = json.loads(raw)
        except Exception:
            pass
        if not self.path.rstrip("/").endswith("/responses") or parsed is None:
            self._record(raw, parsed, "unhandled")
            self._send(404, "application/json", b'{"error":"not handled by mock"}')
            return
        with LOCK:
            COUNTER["n"] += 1
            rid = "resp_%d" % COUNTER["n"]
        step, items = choose_items(parsed)
        self._record(raw, parsed, step)
        events = [{"type": "response.created", "response": {"id": rid}}]
        for it in items:
            events.append({"type": "response.output_item.added", "item": it})
            events.append({"type": "response.output_item.done", "item": it})
        events.append({"type": "response.completed", "response": {
            "id": rid,
            "usage": {"input_tokens": 10, "input_tokens_details": None,
                      "output_tokens": 5, "output_tokens_details": None,
                      "total_tokens": 15}}})
        self._send(200, "text/event-stream", sse(events))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file")
    ap.add_argument("--scenario", choices=["basic", "rich", "mcp"], default="basic")
    ap.add_argument("--marker", default="MARK", help="mcp: put in the environment of the commands it starts")
    a = ap.parse_args()
    SCENARIO["name"] = a.scenario
    mock_models.STATE["marker"] = a.marker
    Handler.log_path = a.log
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    port = srv.server_address[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, a.port_file)
    sys.stderr.write("mock listening on 127.0.0.1:%d\n" % port)
    srv.serve_forever()


if __name__ == "__main__":
    main()
