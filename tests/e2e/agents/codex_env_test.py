#!/usr/bin/env python3
"""The real Codex CLI 0.169.0 with uexec as its whole execution environment (issue 18).

usage: codex_env_test.py UEXEC CODEX [--only NAME,...] [--keep]

Codex is pointed at a scripted stand-in for the OpenAI Responses API (mock_responses.py, on
127.0.0.1) and at an exec-server by $CODEX_HOME/environments.toml (`program` + `args` over
stdio, or `url` + `auth_bearer_token` over WebSocket) or by CODEX_EXEC_SERVER_URL. One turn
runs `exec_command` (echo), `apply_patch` (add, then update/add-nested/delete), an interactive
tty session driven by `write_stdin`, a command that tells which server started it, a write
outside the workspace and a failing command. The checks are on what Codex sends back to the
model and on the disk: the AGENTS.md marker and a workspace skill (.agents/skills, found with
fs/walk) reached the model, apply_patch wrote the files,
the outputs and exit codes came back, no request got -32601 or an error other than "not
found" (-32004), every request was answered, and under workspace-write the write outside the
workspace was refused. The same script runs against Codex's own exec-server as the peer:
whatever passes there must pass through uexec. One more run (uexec-mcp) registers `uexec mcp`
as an MCP server of Codex's own environment and plays the script Claude Code and Gemini CLI
get in mcp_agents_test.py (mock_models.script): it checks what the model reads from uexec's
tools (the output as plain text, the exit code and session id, the truncation named in the
header, read_output at that offset returning exactly those bytes, a tty bash driven by
write_stdin, a `sleep 300` found with list_sessions and ended with kill_session) and that
nothing started through uexec outlives Codex.

Each run works in a fresh directory under /var/tmp (kept with --keep or on failure, for its
logs: requests.jsonl, proto.jsonl, codex.stderr). Exit 0 when every run passes; 77 (meson's
skip) when CODEX is not an executable.
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

import tempfile

BASE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BASE)
import mcp_agents_test  # noqa: E402  (marked_processes: what outlives the CLI)
import mock_models  # noqa: E402  (the MCP scenario's script and what its checks compare with)
import mock_responses  # noqa: E402  (the scripted contents the checks compare with)

# name -> run options; the uexec runs, then Codex's own exec-server as the peer.
MATRIX = [
    ("uexec-stdio", dict(server="uexec", scenario="rich")),
    ("uexec-stdio-workspace-write", dict(server="uexec", scenario="rich", sandbox="workspace-write")),
    ("uexec-stdio-git", dict(server="uexec", scenario="rich", git=True)),
    ("uexec-ws-toml", dict(server="uexec", scenario="rich", transport="ws-toml")),
    ("uexec-ws-env", dict(server="uexec", scenario="rich", transport="ws-env")),
    ("uexec-mcp", dict(server="uexec", scenario="mcp", transport="mcp", model="gpt-5")),
    ("codex-stdio", dict(server="codex", scenario="rich")),
    ("codex-stdio-workspace-write", dict(server="codex", scenario="rich", sandbox="workspace-write")),
]


def write_environment(codex_home, **fields):
    """$CODEX_HOME/environments.toml naming one environment, "remote", the default; `fields` are TOML values."""
    lines = ['default = "remote"', "include_local = false", "", "[[environments]]", 'id = "remote"']
    lines += [f"{key} = {value}" for key, value in fields.items()]
    with open(os.path.join(codex_home, "environments.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def toml_str(s):
    return json.dumps(s)  # JSON string escaping is valid TOML basic-string escaping


class Options:
    def __init__(self, server="uexec", scenario="basic", sandbox="bypass", git=False, transport="stdio",
                 no_tee=False, timeout=120.0, model="gpt-5.5"):
        self.server, self.scenario, self.sandbox, self.git = server, scenario, sandbox, git
        self.transport, self.no_tee, self.timeout, self.model = transport, no_tee, timeout, model
        self.extra_codex_arg = []


def run_one(a, uexec, codex, ws):
    """One scripted turn in `ws`; returns the report (report["all_ok"])."""
    a.codex = codex
    UEXEC = uexec
    wsp = os.path.join(ws, "workspace")
    home = os.path.join(ws, "codex_home")
    fake_home = os.path.join(ws, "home")
    for d in (wsp, home, fake_home):
        os.makedirs(d)
    marker = "AGENTSMARKER-" + uuid.uuid4().hex[:12]
    with open(os.path.join(wsp, "AGENTS.md"), "w") as f:
        f.write("# Project instructions\n\nAlways mention the token %s when done.\n" % marker)
    # A workspace skill: Codex finds .agents/skills with fs/getMetadata and fs/walk and lists it
    # for the model (before fs/walk, uexec answered -32601 and the skill never arrived).
    skill_marker = "SKILLMARKER-" + uuid.uuid4().hex[:12]
    a.skill_marker = skill_marker
    os.makedirs(os.path.join(wsp, ".agents", "skills", "demo-skill"))
    with open(os.path.join(wsp, ".agents", "skills", "demo-skill", "SKILL.md"), "w") as f:
        f.write("---\nname: demo-skill\ndescription: Use for %s demonstrations.\n---\n\nSay hello.\n" % skill_marker)
    if a.scenario == "rich":
        with open(os.path.join(wsp, "victim.txt"), "w") as f:
            f.write("delete me\n")
    if a.git:
        subprocess.run(["git", "init", "-q", wsp], check=True)
        subprocess.run(["git", "-C", wsp, "-c", "user.email=e2e@example.invalid", "-c", "user.name=e2e",
                        "add", "-A"], check=True)
        subprocess.run(["git", "-C", wsp, "-c", "user.email=e2e@example.invalid", "-c", "user.name=e2e",
                        "commit", "-qm", "init"], check=True)

    req_log = os.path.join(ws, "requests.jsonl")
    proto_log = os.path.join(ws, "proto.jsonl")
    srv_err = os.path.join(ws, "server.stderr")
    port_file = os.path.join(ws, "mock.port")
    mock_err = open(os.path.join(ws, "mock.stderr"), "w")
    run_marker = "codexmcp" + uuid.uuid4().hex[:12]  # mcp: in the env of uexec mcp and its commands
    mock = subprocess.Popen([sys.executable, os.path.join(BASE, "mock_responses.py"),
                             "--log", req_log, "--port-file", port_file,
                             "--scenario", a.scenario, "--marker", run_marker],
                            stdout=mock_err, stderr=mock_err)
    for _ in range(100):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    port = int(open(port_file).read())

    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f"""model = {toml_str(a.model)}
model_provider = "mock"
approval_policy = "never"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

[analytics]
enabled = false
""")
        if a.transport == "mcp":  # uexec as an MCP server of Codex's local environment
            f.write(f"""
[mcp_servers.uexec]
command = {toml_str(uexec)}
args = ["mcp"]
default_tools_approval_mode = "approve"
env = {{ UEXEC_E2E_RUN = {toml_str(run_marker)} }}
""")

    server_prog = UEXEC if a.server == "uexec" else a.codex
    server_args = ["exec-server", "--listen", "stdio"]
    if a.no_tee:
        prog, args = server_prog, server_args
    else:
        prog = sys.executable
        args = [os.path.join(BASE, "tee_wrap.py"), proto_log, srv_err, "--", server_prog] + server_args
    ws_server = None
    ws_url = None
    if a.transport == "mcp":
        pass  # no environments.toml: Codex's own environment, uexec's tools over MCP
    elif a.transport == "stdio":
        write_environment(home, program=toml_str(prog), args="[" + ", ".join(toml_str(x) for x in args) + "]")
    else:
        token = uuid.uuid4().hex
        tok_file = os.path.join(ws, "ws.token")
        fd = os.open(tok_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (token + "\n").encode())
        os.close(fd)
        if a.server == "uexec":
            ws_cmd = [UEXEC, "exec-server", "--listen", "ws://127.0.0.1:0"]
            if a.transport == "ws-toml":
                ws_cmd += ["--token-file", tok_file]
        else:
            ws_cmd = [a.codex, "exec-server", "--listen", "ws://127.0.0.1:0"]
            if a.transport == "ws-toml":
                ws_cmd += ["--ws-auth", "capability-token", "--ws-token-file", tok_file]
        ws_out = open(os.path.join(ws, "ws_server.stdout"), "w")
        ws_server = subprocess.Popen(ws_cmd, stdout=ws_out, stderr=open(srv_err, "w"),
                                     stdin=subprocess.DEVNULL, cwd=wsp,
                                     env=dict(os.environ, HOME=fake_home))
        for _ in range(200):
            txt = open(os.path.join(ws, "ws_server.stdout")).read() + open(srv_err).read()
            m = re.search(r"ws://127\.0\.0\.1:\d+", txt)
            if m and not m.group(0).endswith(":0"):
                ws_url = m.group(0)
                break
            time.sleep(0.05)
        if not ws_url:
            print("could not find ws URL in exec-server output", file=sys.stderr)
        if a.transport == "ws-toml":
            write_environment(home, url=toml_str(ws_url or "ws://127.0.0.1:1"), auth_bearer_token=toml_str(token))

    env = dict(os.environ)
    for k in list(env):
        if k.startswith("CODEX_") or k.startswith("OPENAI_"):
            del env[k]
    env.update({"CODEX_HOME": home, "HOME": fake_home, "MOCK_API_KEY": "sk-mock",
                "RUST_LOG": env.get("RUST_LOG", "warn,codex_exec_server=debug,codex_core=info"),
                "NO_COLOR": "1"})
    if a.transport == "ws-env":
        env["CODEX_EXEC_SERVER_URL"] = ws_url or "ws://127.0.0.1:1"
    prompt = "Run the scripted e2e steps."
    cmd = [a.codex, "exec", "--skip-git-repo-check", "--json", "-C", wsp]
    if a.sandbox == "bypass":
        cmd.append("--dangerously-bypass-approvals-and-sandbox")
    else:
        cmd += ["-s", a.sandbox]
    cmd += a.extra_codex_arg + [prompt]
    with open(os.path.join(ws, "cmd.json"), "w") as f:
        json.dump({"cmd": cmd, "env": {k: env[k] for k in ("CODEX_HOME", "HOME", "RUST_LOG")}}, f, indent=1)

    t0 = time.time()
    timed_out = False
    with open(os.path.join(ws, "codex.stdout"), "w") as so, open(os.path.join(ws, "codex.stderr"), "w") as se:
        p = subprocess.Popen(cmd, cwd=wsp, env=env, stdout=so, stderr=se, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(p.pid, signal.SIGTERM)
            try:
                rc = p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                rc = p.wait()
    elapsed = time.time() - t0
    left = {}
    if a.transport == "mcp":
        # What Codex started through uexec must go when Codex does: `uexec mcp` and the commands
        # (the tty bash is left running by the script). Bounded wait, not a measure.
        t1 = time.time()
        left = mcp_agents_test.marked_processes([run_marker], exclude=[mock.pid])
        while left and time.time() - t1 < mcp_agents_test.CLEANUP_WAIT_S:
            time.sleep(0.2)
            left = mcp_agents_test.marked_processes([run_marker], exclude=[mock.pid])
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    time.sleep(0.3)
    mock.terminate()
    mock.wait()
    if ws_server is not None:
        ws_server.terminate()
        try:
            ws_server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            ws_server.kill()
            ws_server.wait()

    mock_err.close()
    if a.transport == "mcp":
        report = analyze_mcp(ws, req_log, rc, timed_out, elapsed, a, left)
    else:
        report = analyze(ws, wsp, marker, req_log, proto_log, rc, timed_out, elapsed, a)
    with open(os.path.join(ws, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    return report


def load_jsonl(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    out.append({"unparsable": line})
    return out


def is_not_found(e):
    err = e.get("error") or {}
    msg = str(err.get("message", "")).lower()
    return err.get("code") == -32004 or "no such file" in msg or "not found" in msg and err.get("code") != -32601


def analyze(ws, wsp, marker, req_log, proto_log, rc, timed_out, elapsed, a):
    reqs = load_jsonl(req_log)
    resp_reqs = [r for r in reqs if r.get("method") == "POST" and isinstance(r.get("body"), dict)]
    # --- what reached the model
    marker_in = []
    outputs = {}
    tools_advertised = []
    for i, r in enumerate(resp_reqs):
        s = json.dumps(r["body"])
        if marker in s:
            where = []
            if marker in json.dumps(r["body"].get("instructions", "")):
                where.append("instructions")
            if marker in json.dumps(r["body"].get("input", [])):
                where.append("input")
            marker_in.append({"request": i + 1, "where": where})
        for item in r["body"].get("input") or []:
            if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                outputs.setdefault(item.get("call_id"), item.get("output"))
        if i == 0:
            for t in r["body"].get("tools") or []:
                tools_advertised.append("%s:%s" % (t.get("type"), t.get("name")))
    steps = [r.get("step") for r in reqs]
    echo_out, patch_out = outputs.get("call_echo"), outputs.get("call_patch")
    echo_txt = json.dumps(echo_out) if echo_out is not None else ""
    # --- protocol traffic
    proto = load_jsonl(proto_log)
    pending = {}
    calls = collections.Counter()
    notifs_c2s = collections.Counter()
    notifs_s2c = collections.Counter()
    errors = []
    unanswered = []
    meta = []
    for rec in proto:
        d = rec.get("dir")
        if d == "meta":
            meta.append(rec["line"])
            continue
        try:
            msg = json.loads(rec["line"])
        except ValueError:
            errors.append({"bad_line": rec["line"][:500], "dir": d})
            continue
        if d == "c2s":
            if "method" in msg and "id" in msg:
                calls[msg["method"]] += 1
                pending[(msg["id"])] = msg
            elif "method" in msg:
                notifs_c2s[msg["method"]] += 1
        elif d == "s2c":
            if "id" in msg and ("result" in msg or "error" in msg):
                req = pending.pop(msg["id"], None)
                if "error" in msg:
                    errors.append({"method": req and req.get("method"),
                                   "request": req, "error": msg["error"]})
            elif "method" in msg:
                notifs_s2c[msg["method"]] += 1
    for req in pending.values():
        unanswered.append(req)
    # --- file on disk
    made = os.path.join(wsp, "made.txt")
    made_content = open(made).read() if os.path.exists(made) else None
    # --- codex output
    events = load_jsonl(os.path.join(ws, "codex.stdout"))
    ev_types = collections.Counter(e.get("type") for e in events if isinstance(e, dict))
    final_msgs = [e["item"].get("text") for e in events
                  if isinstance(e, dict) and e.get("type") == "item.completed"
                  and isinstance(e.get("item"), dict) and e["item"].get("type") == "agent_message"]
    turn_completed = ev_types.get("turn.completed", 0) > 0
    checks = {
        "codex_exit_0": rc == 0 and not timed_out,
        "turn_completed": turn_completed and "step-final" in steps,
        "final_message_done": "done" in final_msgs,
        "agents_md_marker_reached_model": bool(marker_in),
        "workspace_skill_reached_model": any(a.skill_marker in json.dumps(r["body"]) for r in resp_reqs),
        "echo_output_reached_model": "hello-from-uexec" in echo_txt,
        "made_txt_correct": made_content == (mock_responses.MADE_CONTENT_V2 if a.scenario == "rich"
                                             else mock_responses.MADE_CONTENT),
        "no_method_not_found_errors": not [e for e in errors if (e.get("error") or {}).get("code") == -32601],
        "no_errors_besides_not_found": not [e for e in errors if not is_not_found(e)],
        "no_unanswered_requests": not unanswered,
    }
    if a.scenario == "rich":
        nested = os.path.join(wsp, "sub", "dir", "nested.txt")
        checks["patch2_nested_created"] = os.path.exists(nested) and open(nested).read() == "nested file\n"
        checks["patch2_victim_deleted"] = not os.path.exists(os.path.join(wsp, "victim.txt"))
        checks["interactive_write_stdin_got_ping"] = "got-ping" in json.dumps(outputs.get("call_write") or "")
        checks["readback_shows_what_apply_patch_wrote"] = (
            "second line UPDATED" in json.dumps(outputs.get("call_readback") or "")
            and "nested file" in json.dumps(outputs.get("call_readback") or ""))
        fo = json.dumps(outputs.get("call_fail") or "")
        m = re.search(r"PARENT=([^\n\\]*)", json.dumps(outputs.get("call_whoami") or ""))
        parent = m.group(1) if m else None
        checks["command_ran_under_chosen_server"] = bool(parent) and (
            ("uexec" in parent) if a.server == "uexec" else ("exec-server" in parent or "codex-linux-sandbox" in parent))
        if not a.no_tee and a.transport == "stdio":
            n_exec = sum(1 for st in steps if st in ("step1-shell", "step-readback", "step-interactive-start", "step-whoami",
                                                    "step-escape", "step-stderr-exit"))
            checks["every_exec_command_was_a_process_start"] = calls.get("process/start", 0) == n_exec
        outside = os.path.join(ws, "outside.txt")
        # ../outside.txt is outside the workspace: a workspace-write/read-only sandbox must stop it
        if a.sandbox in ("workspace-write", "read-only"):
            checks["sandbox_blocked_write_outside_workspace"] = not os.path.exists(outside)
            checks["apply_patch_outside_workspace_blocked"] = not os.path.exists(
                os.path.join(ws, "outside_patch.txt"))
        else:
            checks["unsandboxed_write_outside_workspace_ok"] = os.path.exists(outside)
        checks["stderr_and_exit3_reported"] = "to-stderr" in fo and "code 3" in fo
    return {
        "ws": ws, "transport": a.transport, "scenario": a.scenario, "git": a.git, "tool_outputs": outputs, "server": a.server, "tee": not a.no_tee, "model": a.model,
        "codex_rc": rc, "timed_out": timed_out, "elapsed_s": round(elapsed, 2),
        "mock_steps": steps, "tools_advertised_req1": tools_advertised,
        "marker": marker, "marker_in_requests": marker_in,
        "echo_output": echo_out, "patch_output": patch_out,
        "made_txt": made_content,
        "codex_event_types": dict(ev_types), "final_messages": final_msgs,
        "protocol_requests": dict(calls.most_common()),
        "protocol_notifications_c2s": dict(notifs_c2s),
        "protocol_notifications_s2c": dict(notifs_s2c),
        "protocol_errors": errors, "protocol_unanswered": unanswered,
        "proto_meta": meta,
        "checks": checks, "all_ok": all(checks.values()),
    }


def analyze_mcp(ws, req_log, rc, timed_out, elapsed, a, left):
    """What the model received from uexec's MCP tools (mock_models.script, as for Claude Code and
    Gemini CLI): readable text with everything in it, and nothing left running after Codex."""
    reqs = load_jsonl(req_log)
    steps = [r.get("step") for r in reqs]
    results = {}
    for r in reqs:
        body = r.get("body") if isinstance(r.get("body"), dict) else {}
        for step, text in mock_responses.mcp_results(body).items():
            results.setdefault(step, text)
    outputs = {"call_mcp_" + k: v for k, v in results.items()}
    small, large, reread, tty, typed, server, listed, killed = (
        results.get(k, "") for k in ("small", "large", "reread", "tty", "type", "server", "list", "kill"))
    m = mock_models.OMITTED.search(large)
    whole = mock_models.LARGE_OUT
    want = whole[int(m.group(4)):int(m.group(4)) + mock_models.REREAD_BYTES] if m else None
    srv = mock_models.RUNNING.search(server)
    srv_id = srv.group(1) if srv else None
    list_line = next((ln for ln in listed.splitlines() if srv_id and ln.split()[:1] == [srv_id]), "")
    checks = {
        "codex_exit_0": rc == 0 and not timed_out,
        "turn_completed": "step-final" in steps,
        "small: the output as plain text": mock_models.SMALL_OUT in small,
        "small: the exit code": "Process exited with code 0" in small,
        "small: the session id": re.search(r"Session ID: \d+ \(exited", small) is not None,
        "small: no JSON of structuredContent": '"output":' not in small and "structuredContent" not in small,
        "large: the truncation said in the header, with the read_output call": m is not None,
        "reread: read_output at that offset returns those bytes": want is not None and want in reread,
        "tty: bash runs in a session": mock_models.RUNNING.search(tty) is not None,
        "write_stdin: the shell's answer typed-77": mock_models.TYPED_OUT.search(typed) is not None,
        "server: sleep 300 keeps running in a session": srv_id is not None,
        "list_sessions: lists it, running": "running" in list_line.split() and "sleep 300" in list_line,
        "kill_session: says it was stopped": bool(srv_id) and "Session ID: %s (exited" % srv_id in killed,
        "after codex: nothing it started through uexec is running": not left,
    }
    return {"ws": ws, "transport": a.transport, "scenario": a.scenario, "git": a.git, "server": a.server,
            "tee": False, "model": a.model, "codex_rc": rc, "timed_out": timed_out, "elapsed_s": round(elapsed, 2),
            "mock_steps": steps, "tools_advertised_req1": [], "marker": "", "marker_in_requests": [],
            "echo_output": small, "patch_output": None, "made_txt": None, "tool_outputs": outputs,
            "codex_event_types": {}, "final_messages": [], "protocol_requests": {},
            "protocol_notifications_c2s": {}, "protocol_notifications_s2c": {}, "protocol_errors": [],
            "protocol_unanswered": [], "proto_meta": [], "checks": checks, "all_ok": all(checks.values())}


def print_report(r):
    def short(x, n=400):
        s = json.dumps(x) if not isinstance(x, str) else x
        return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)
    print("=== codex e2e: server=%s transport=%s scenario=%s git=%s tee=%s ws=%s" % (
        r["server"], r["transport"], r["scenario"], r["git"], r["tee"] and r["transport"] == "stdio", r["ws"]))
    print("codex rc=%s timed_out=%s elapsed=%ss" % (r["codex_rc"], r["timed_out"], r["elapsed_s"]))
    print("mock steps:", r["mock_steps"])
    print("tools (req 1):", ", ".join(r["tools_advertised_req1"]))
    print("AGENTS.md marker in requests:", r["marker_in_requests"])
    print("echo output to model:", short(r["echo_output"]))
    print("patch output to model:", short(r["patch_output"]))
    print("made.txt:", short(r["made_txt"]))
    for cid, out in r["tool_outputs"].items():
        if cid not in ("call_echo", "call_patch"):
            print("output %s:" % cid, short(out))
    print("codex events:", r["codex_event_types"], "final:", r["final_messages"])
    print("exec-server requests:", r["protocol_requests"])
    print("c2s notifications:", r["protocol_notifications_c2s"], "s2c notifications:", r["protocol_notifications_s2c"])
    print("exec-server errors (%d):" % len(r["protocol_errors"]))
    for e in r["protocol_errors"]:
        print("  ", short(e, 1200))
    if r["protocol_unanswered"]:
        print("unanswered requests:", short(r["protocol_unanswered"], 1200))
    print("proto meta:", r["proto_meta"])
    m = re.search(r"PARENT=([^\n]*)", str(r["tool_outputs"].get("call_whoami") or ""))
    if m:
        print("parent of the tool's shell:", m.group(1))
    for k, v in r["checks"].items():
        print("  [%s] %s" % ("PASS" if v else "FAIL", k))
    print("ALL OK" if r["all_ok"] else "SOME CHECKS FAILED")


def main():
    ap = argparse.ArgumentParser(description="Codex CLI with uexec as its execution environment")
    ap.add_argument("uexec")
    ap.add_argument("codex")
    ap.add_argument("--only", default="", help="comma-separated run names (default: all)")
    ap.add_argument("--keep", action="store_true", help="keep every run's directory")
    args = ap.parse_args()
    if not (os.path.isfile(args.codex) and os.access(args.codex, os.X_OK)):
        print(f"codex-env: SKIP: no Codex binary at {args.codex} (tools/dev installs @openai/codex@0.169.0 "
              "in tests/e2e/conformance)")
        return 77
    uexec = os.path.abspath(args.uexec)
    only = {n for n in args.only.split(",") if n}
    failed = []
    for name, opts in MATRIX:
        if only and name not in only:
            continue
        ws = tempfile.mkdtemp(prefix=f"uexec-codex-env-{name}-", dir="/var/tmp")
        report = run_one(Options(**opts, timeout=90.0), uexec, os.path.abspath(args.codex), ws)
        if report["all_ok"]:
            print(f"ok   {name} ({report['elapsed_s']} s): {len(report['checks'])} checks; requests "
                  + ", ".join(f"{m} {n}" for m, n in report["protocol_requests"].items()))
            if not args.keep:
                shutil.rmtree(ws, ignore_errors=True)
        else:
            print_report(report)
            failed.append(name)
            print(f"FAIL {name}: logs kept in {ws}")
    print(f"codex-env: {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
