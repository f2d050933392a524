#!/usr/bin/env python3
"""The real Claude Code CLI and the real Gemini CLI with `uexec mcp` as their MCP server.

usage: mcp_agents_test.py UEXEC [--only claude,gemini] [--keep]

The CLIs are the npm packages pinned in package.json here (@anthropic-ai/claude-code and
@google/gemini-cli), installed with
    npm ci --prefix tests/e2e/agents --no-audit --no-fund --ignore-scripts
Claude Code's npm package is a stub whose postinstall copies the native binary of an optional
platform package (@anthropic-ai/claude-code-linux-x64, ...) over bin/claude.exe; with
--ignore-scripts that binary is run where npm put it. Gemini's bundle/gemini.js runs on node.

Each CLI is pointed at a scripted stand-in for its model API on 127.0.0.1 (mock_models.py: the
Anthropic Messages API, the Gemini API; both stream SSE and record every request), with `uexec
mcp` registered as its only MCP server in an isolated HOME. One non-interactive turn calls
uexec's tools under the names the CLI gives them: a small command, a large one whose result is
cut, read_output at the offset the cut names, an interactive bash with a tty driven by
write_stdin, a `sleep 300` left running, list_sessions, kill_session on the sleep, then the
answer "done". The checks are on what the CLI sent back to the model (Claude's tool_result
blocks, Gemini's functionResponse parts) and on processes: once the CLI has exited, nothing
started through uexec (the tty bash was left running on purpose) and no `uexec mcp` is left.

Runs: claude (Claude Code's default: MCP tools are deferred and loaded with ToolSearch),
claude-eager (ENABLE_TOOL_SEARCH=false: the tools in every request) and gemini. --only takes run
names or CLI names. Each run works in a fresh directory under /var/tmp, removed when it passes
(kept with --keep, or on failure, for its logs: requests.jsonl, cli.stdout, cli.stderr,
mock.stderr). Exit 0 when every check passes, 1 when one fails, 77 (meson's skip) when none of
the chosen CLIs is installed.
"""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

BASE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BASE)
import mock_models  # noqa: E402  (the script the checks compare with)

NODE_MODULES = os.path.join(BASE, "node_modules")
PROMPT = "Run the scripted uexec e2e steps."
CLI_TIMEOUT_S = 60.0  # a hard limit on one CLI run; the CLI's process group is killed past it
CLEANUP_WAIT_S = 15.0  # how long processes started through uexec may take to go after the CLI exits
TOOLS = mock_models.TOOLS
STEPS = ("small", "large", "reread", "tty", "type", "server", "list", "kill")

# name -> (cli, extra environment)
RUNS = [
    ("claude", "claude", {}),
    ("claude-eager", "claude", {"ENABLE_TOOL_SEARCH": "false"}),
    ("gemini", "gemini", {}),
]


# ------------------------------------------------------------------------------------ the CLIs
def find_claude():
    """Claude Code's native binary: the platform package's (npm ci --ignore-scripts), or
    bin/claude.exe once the postinstall has put the binary there. None when not installed."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    cands = []
    if arch:
        libc = "-musl" if not platform.libc_ver()[0] else ""
        for suffix in (libc, "-musl" if not libc else ""):
            cands.append(os.path.join(NODE_MODULES, "@anthropic-ai", "claude-code-linux-%s%s" % (arch, suffix), "claude"))
    stub = os.path.join(NODE_MODULES, "@anthropic-ai", "claude-code", "bin", "claude.exe")
    if os.path.isfile(stub) and os.path.getsize(stub) > 100000:  # the postinstall replaced the stub
        cands.append(stub)
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return [c]
    return None


def find_gemini():
    js = os.path.join(NODE_MODULES, "@google", "gemini-cli", "bundle", "gemini.js")
    node = shutil.which("node")
    if os.path.isfile(js) and node:
        return [node, js]
    return None


def cli_version(argv):
    try:
        out = subprocess.run(argv + ["--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, env=dict(os.environ, NO_COLOR="1"))
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "?"
    except Exception as e:  # the version is information only
        return "? (%s)" % e


# ------------------------------------------------------------------------------------ processes
def marked_processes(markers, exclude=()):
    """pid -> cmdline of the processes whose environment or command line holds one of `markers`."""
    found = {}
    skip = {os.getpid(), *exclude}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in skip:
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if not cmd:  # a zombie
            continue
        if any(m.encode() in env or m.encode() in cmd for m in markers):
            found[int(d)] = cmd.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def stop_group(p):
    """SIGTERM to the process group of `p` (started with start_new_session), SIGKILL after 5 s."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        return p.wait()
    try:
        return p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return p.wait()


# ------------------------------------------------------------------------------------ one run
def clean_env(home):
    """The test's environment without any model client's variables, with HOME and XDG in `home`."""
    env = {k: v for k, v in os.environ.items()
           if not re.match(r"^(ANTHROPIC_|CLAUDE|GEMINI_|GOOGLE_|VERTEX|OTEL_|UEXEC_)", k)}
    env.update({"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                "XDG_CACHE_HOME": os.path.join(home, ".cache"), "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
                "XDG_STATE_HOME": os.path.join(home, ".local", "state"), "NO_COLOR": "1", "TERM": "dumb",
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    return env


def setup_claude(ws, home, work, port, uexec, marker, extra_env):
    mcp_json = os.path.join(ws, "mcp.json")
    with open(mcp_json, "w") as f:
        json.dump({"mcpServers": {"uexec": {"type": "stdio", "command": uexec, "args": ["mcp"],
                                            "env": {"UEXEC_E2E_RUN": marker}}}}, f, indent=1)
    env = clean_env(home)
    env.update({"ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % port, "ANTHROPIC_API_KEY": "dummy",
                "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"), "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1"})
    env.update(extra_env)
    args = ["-p", PROMPT, "--mcp-config", mcp_json, "--strict-mcp-config",
            "--allowedTools", ",".join("mcp__uexec__" + t for t in TOOLS), "--output-format", "json"]
    return env, args


def setup_gemini(ws, home, work, port, uexec, marker, extra_env):
    gdir = os.path.join(home, ".gemini")
    os.makedirs(gdir)
    with open(os.path.join(gdir, "settings.json"), "w") as f:
        json.dump({"mcpServers": {"uexec": {"command": uexec, "args": ["mcp"], "env": {"UEXEC_E2E_RUN": marker},
                                            "trust": True}},
                   "security": {"auth": {"selectedType": "gemini-api-key"}},
                   "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                   "privacy": {"usageStatisticsEnabled": False},
                   "telemetry": {"enabled": False}}, f, indent=1)
    # Gemini CLI runs headless only in a trusted folder
    with open(os.path.join(gdir, "trustedFolders.json"), "w") as f:
        json.dump({work: "TRUST_FOLDER"}, f)
    env = clean_env(home)
    env.update({"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:%d" % port, "GEMINI_API_KEY": "dummy"})
    env.update(extra_env)
    return env, ["-p", PROMPT, "--output-format", "json"]


def start_mock(ws, api, marker):
    port_file = os.path.join(ws, "mock.port")
    err = open(os.path.join(ws, "mock.stderr"), "w")
    mock = subprocess.Popen([sys.executable, os.path.join(BASE, "mock_models.py"), "--api", api,
                             "--log", os.path.join(ws, "requests.jsonl"), "--marker", marker,
                             "--port-file", port_file], stdout=err, stderr=err, stdin=subprocess.DEVNULL)
    err.close()
    for _ in range(600):
        if os.path.exists(port_file):
            return mock, int(open(port_file).read())
        if mock.poll() is not None:
            break
        time.sleep(0.05)
    mock.kill()
    mock.wait()
    raise RuntimeError("the mock %s server did not start (see %s/mock.stderr)" % (api, ws))


def run_one(name, cli, argv0, extra_env, uexec, ws):
    home, work = os.path.join(ws, "home"), os.path.join(ws, "work")
    os.makedirs(home)
    os.makedirs(work)
    marker = "mcpe2e" + uuid.uuid4().hex[:12]
    api = "anthropic" if cli == "claude" else "gemini"
    mock, port = start_mock(ws, api, marker)
    setup = setup_claude if cli == "claude" else setup_gemini
    env, args = setup(ws, home, work, port, uexec, marker, extra_env)
    cmd = argv0 + args
    with open(os.path.join(ws, "cmd.json"), "w") as f:
        json.dump({"cmd": cmd, "cwd": work, "env": {k: v for k, v in env.items() if k not in os.environ
                                                    or os.environ[k] != v}}, f, indent=1)
    t0 = time.time()
    timed_out = False
    p = None
    try:
        with open(os.path.join(ws, "cli.stdout"), "w") as so, open(os.path.join(ws, "cli.stderr"), "w") as se:
            p = subprocess.Popen(cmd, cwd=work, env=env, stdout=so, stderr=se, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
            try:
                rc = p.wait(timeout=CLI_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                timed_out = True
                rc = stop_group(p)
        elapsed = time.time() - t0
        # What the CLI started through uexec must go when the CLI does: uexec mcp (its env has
        # UEXEC_E2E_RUN=marker) and the commands (UEXEC_E2E_MARK=marker). Killing is not
        # instant: wait for them a while (this bounds the wait; it is not a measure).
        t1 = time.time()
        left = marked_processes([marker], exclude=[mock.pid])
        while left and time.time() - t1 < CLEANUP_WAIT_S:
            time.sleep(0.2)
            left = marked_processes([marker], exclude=[mock.pid])
        cleanup_s = time.time() - t1
    finally:
        if p is not None and p.poll() is None:  # broken off: the CLI must not outlive the test
            stop_group(p)
        mock.terminate()
        mock.wait()
    # Leave nothing running: what is left of the CLI's process group, and what survived.
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    report = analyze(name, cli, ws, marker, rc, timed_out, elapsed, left, cleanup_s)
    with open(os.path.join(ws, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    return report


# ------------------------------------------------------------------------------------ checks
def load_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        out.append({"unparsable": line[:500]})
    return out


def tool_defs(api, body):
    """name -> (input schema) of the tools in one request."""
    out = {}
    if api == "anthropic":
        for t in body.get("tools") or []:
            if isinstance(t, dict) and t.get("name"):
                out[t["name"]] = t.get("input_schema") or {}
    else:
        for t in body.get("tools") or []:
            for d in (t or {}).get("functionDeclarations") or []:
                out[d.get("name")] = d.get("parametersJsonSchema") or d.get("parameters") or {}
    return out


def tool_errors(api, body):
    """Tool results that the CLI marked as errors (Claude's is_error; Gemini's response.error)."""
    errs = []
    if api == "anthropic":
        for msg in body.get("messages") or []:
            for blk in msg.get("content") if isinstance(msg.get("content"), list) else []:
                if isinstance(blk, dict) and blk.get("type") == "tool_result" and blk.get("is_error"):
                    errs.append(json.dumps(blk)[:400])
    else:
        for c in body.get("contents") or []:
            for part in c.get("parts") or []:
                r = (part.get("functionResponse") or {}).get("response")
                if isinstance(r, dict) and "error" in r:
                    errs.append(json.dumps(part)[:400])
    return errs


def final_answer(cli, ws):
    try:
        out = json.load(open(os.path.join(ws, "cli.stdout")))
    except (OSError, ValueError):
        return None
    return out.get("result") if cli == "claude" else out.get("response")


def analyze(name, cli, ws, marker, rc, timed_out, elapsed, left, cleanup_s):
    api = "anthropic" if cli == "claude" else "gemini"
    reqs = load_jsonl(os.path.join(ws, "requests.jsonl"))
    steps = [r.get("step") for r in reqs]
    bodies = [r["body"] for r in reqs if isinstance(r.get("body"), dict)]
    results_of = mock_models.anthropic_results if api == "anthropic" else mock_models.gemini_results
    main = [b for b in bodies if mock_models.exposed_name(list(tool_defs(api, b)), "exec_command")]
    results = results_of(main[-1]) if main else {}
    defs = tool_defs(api, main[0]) if main else {}
    names = {t: mock_models.exposed_name(list(defs), t) for t in TOOLS}
    exec_schema = (defs.get(names["exec_command"]) or {}).get("properties") or {}
    small, large, reread, tty, typed, server, listed, killed = (results.get(s, "") for s in STEPS)

    m = mock_models.OMITTED.search(large)
    whole = mock_models.LARGE_OUT
    want = whole[int(m.group(4)):int(m.group(4)) + min(int(m.group(5)), mock_models.REREAD_BYTES)] if m else None
    shown_head = whole[:int(m.group(1))] if m else None
    shown_tail = whole[int(m.group(2)):] if m else None
    tty_id = mock_models.RUNNING.search(tty)
    srv = mock_models.RUNNING.search(server)
    srv_id = srv.group(1) if srv else None
    list_line = next((ln for ln in listed.splitlines() if srv_id and ln.split()[:1] == [srv_id]), "")
    errs = [e for b in main[-1:] for e in tool_errors(api, b)]
    bad_steps = [s for s in steps if s in ("unhandled", "mock-error") or str(s).startswith("missing-")]
    answer = final_answer(cli, ws)

    checks = [
        ("the CLI exited 0 within %d s" % CLI_TIMEOUT_S, rc == 0 and not timed_out, "rc=%s timed_out=%s" % (rc, timed_out)),
        ("its answer is the model's final text \"done\"", answer == mock_models.FINAL_TEXT, repr(answer)),
        ("uexec's five tools were shown to the model", all(names.values()), names),
        ("exec_command's schema has tty and yield_time_ms", "tty" in exec_schema and "yield_time_ms" in exec_schema,
         sorted(exec_schema)),
        ("the script ran to its end", all(s in results for s in STEPS) and "final" in steps, steps),
        ("every request got a scripted answer", not bad_steps, bad_steps),
        ("no tool result was marked an error", not errs, errs),
        ("small: the output as plain text", mock_models.SMALL_OUT in small, small),
        ("small: the exit code", "Process exited with code 0" in small, small),
        ("small: the session id", re.search(r"Session ID: \d+ \(exited", small) is not None, small),
        ("small: no JSON of structuredContent", small and '"output":' not in small and "structuredContent" not in small
         and "\\n" not in small, small),
        ("large: the cut named in the header, with the read_output call", m is not None, large[:600]),
        ("large: the CLI passed uexec's head and tail whole", bool(m) and shown_head in large and shown_tail in large,
         "%d chars" % len(large)),
        ("reread: read_output at that offset returns exactly those bytes", want is not None and want in reread,
         reread[:400]),
        ("tty: bash runs in a session", tty_id is not None, tty),
        ("write_stdin: the shell's answer typed-77", mock_models.TYPED_OUT.search(typed) is not None, typed),
        ("server: sleep 300 keeps running in a session", srv_id is not None, server),
        ("list_sessions: lists it, running", "running" in list_line.split() and "sleep 300" in list_line,
         listed),
        ("kill_session: says it was stopped", bool(srv_id) and "Session ID: %s (exited" % srv_id in killed
         and re.search(r"Signal: SIG[A-Z]+ \(sent by kill_session\)", killed) is not None, killed),
        ("after the CLI: nothing it started through uexec is running", not left,
         ["%d: %s" % kv for kv in left.items()]),
    ]
    return {"name": name, "cli": cli, "ws": ws, "rc": rc, "timed_out": timed_out, "elapsed_s": round(elapsed, 2),
            "cleanup_s": round(cleanup_s, 2), "steps": steps, "tool_names": names, "answer": answer,
            "results": results, "left": left,
            "checks": [{"name": n, "ok": bool(ok), "detail": d} for n, ok, d in checks],
            "all_ok": all(ok for _, ok, _ in checks)}


def short(x, n=500):
    s = x if isinstance(x, str) else json.dumps(x)
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)


def main():
    ap = argparse.ArgumentParser(description="Claude Code and Gemini CLI with `uexec mcp` as their MCP server")
    ap.add_argument("uexec")
    ap.add_argument("--only", default="", help="comma-separated run or CLI names: claude, claude-eager, gemini")
    ap.add_argument("--keep", action="store_true", help="keep every run's directory")
    a = ap.parse_args()
    uexec = os.path.abspath(a.uexec)
    only = {n for n in a.only.split(",") if n}
    found = {"claude": find_claude(), "gemini": find_gemini()}
    passed = failed = ran = 0
    for name, cli, extra in RUNS:
        if only and name not in only and cli not in only:
            continue
        if not found[cli]:
            print("SKIP %s: %s is not installed (npm ci --prefix tests/e2e/agents --no-audit --no-fund "
                  "--ignore-scripts)" % (name, cli), flush=True)
            continue
        ran += 1
        ws = tempfile.mkdtemp(prefix="uexec-mcp-agents-%s-" % name, dir="/var/tmp")
        print("=== %s: %s, in %s" % (name, cli_version(found[cli]), ws), flush=True)
        try:
            r = run_one(name, cli, found[cli], extra, uexec, ws)
        except Exception as e:
            print("FAIL %s: the run broke: %r (logs in %s)" % (name, e, ws), flush=True)
            failed += 1
            continue
        print("%s: rc=%s %.1f s; tools %s; steps %s" % (name, r["rc"], r["elapsed_s"],
                                                       ", ".join(str(v) for v in r["tool_names"].values()),
                                                       " ".join(str(s) for s in r["steps"])), flush=True)
        for c in r["checks"]:
            if c["ok"]:
                passed += 1
                print("PASS %s: %s" % (name, c["name"]), flush=True)
            else:
                failed += 1
                print("FAIL %s: %s -- %s" % (name, c["name"], short(c["detail"])), flush=True)
        if r["all_ok"] and not a.keep:
            shutil.rmtree(ws, ignore_errors=True)
        elif not r["all_ok"]:
            print("%s: logs kept in %s" % (name, ws), flush=True)
    if not ran:
        print("mcp-agents: SKIP: no CLI to run")
        return 77
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
