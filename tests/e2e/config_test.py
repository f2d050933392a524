#!/usr/bin/env python3
"""The config file (~/.config/uexec/config.toml) through the real commands.

  - `uexec config` lists every key with its effective value and origin (default, FILE:LINE, the
    environment); --sample prints a file of the defaults; --path the file's path;
  - `uexec serve` takes its WebSocket address and page from the file, and a flag overrides it;
  - `uexec exec-server` keeps [sessions] ring_size bytes per session;
  - `uexec mcp` takes [agent] (output budget, env preset, structuredContent) and [sandbox] from
    the file, a flag overrides the sandbox, and `--connect` is not refused for the file's sandbox;
  - a bad file stops every command that reads it (exit 2, FILE:LINE:COL and what is wrong);
  - no sandbox can write the config: the directory is created before the first sandbox and is
    read-only inside it, even when the workspace covers it.

    python3 tests/e2e/config_test.py build/src/uexec
"""
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from e2e_util import Checks, McpClient, Peer  # noqa: E402

uexec = os.path.abspath(sys.argv[1])
check = Checks()
tmp = tempfile.mkdtemp(prefix="uexec-config-")
cfg_home = os.path.join(tmp, "cfg")
cfg_file = os.path.join(cfg_home, "uexec", "config.toml")
env = {k: v for k, v in os.environ.items() if k not in ("UEXEC_CONFIG", "UEXEC_WEB_ROOT", "NO_COLOR", "UEXEC_AGENT")}
env.update(XDG_CONFIG_HOME=cfg_home, XDG_RUNTIME_DIR=os.path.join(tmp, "run"), UEXEC_LOG="warn")
os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)


def write_config(text):
    os.makedirs(os.path.dirname(cfg_file), exist_ok=True)
    with open(cfg_file, "w") as f:
        f.write(text)


def run(*args, **kw):
    return subprocess.run([uexec, *args], env=env, capture_output=True, text=True, timeout=30, **kw)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- 1. uexec config ---------------------------------------------------------------------------
r = run("config", "--path")
check("config --path: $XDG_CONFIG_HOME/uexec/config.toml", r.returncode == 0 and r.stdout.strip() == cfg_file, r)
r = run("config")
lines = [l for l in r.stdout.splitlines() if " = " in l]
check("config without a file: exit 0, 17 keys, every one the default",
      r.returncode == 0 and len(lines) == 17 and all(l.endswith("# default") for l in lines), r.stdout)
sample = run("config", "--sample").stdout
write_config(sample)
r = run("config")
check("the sample file changes nothing", r.returncode == 0 and all(l.endswith("# default") for l in r.stdout.splitlines()
                                                                  if " = " in l), r.stdout)
write_config("[daemon]\nretain_exited = \"2h\"\n\n[agent]\nmax_output_tokens = 1234\n")
r = run("config")
check("config: a key from the file names its line", re.search(r'^max_output_tokens = 1234 +# ' + re.escape(cfg_file) +
                                                             r':5$', r.stdout, re.M) is not None, r.stdout)
check("config: the others stay defaults", re.search(r'^ring_size = "1MiB" +# default$', r.stdout, re.M) is not None,
      r.stdout)
r2 = subprocess.run([uexec, "config"], env={**env, "UEXEC_WEB_ROOT": "/srv/page"}, capture_output=True, text=True)
check("config: UEXEC_WEB_ROOT is an origin too", re.search(r'^web_root = "/srv/page" +# environment \(UEXEC_WEB_ROOT\)$',
                                                           r2.stdout, re.M) is not None, r2.stdout)
# `uexec config`'s listing is itself a config file: every key now comes from it.
listing = r.stdout
write_config(listing)
r = run("config")
check("config's own listing, saved as the file, reads back with every key from the file",
      r.returncode == 0 and all(cfg_file + ":" in l for l in r.stdout.splitlines() if " = " in l) and
      "max_output_tokens = 1234" in r.stdout, r.stdout + r.stderr)
r = run("config", "--bogus")
check("config --bogus: exit 2, unknown option", r.returncode == 2 and "unknown option --bogus" in r.stderr, r)

# ---- 2. a bad file stops every command that reads it -------------------------------------------
write_config("[daemon]\nws = \"127.0.0.1:8022\"\nretain_exitd = \"1h\"\n")
for cmd in (["config"], ["serve", "--socket", os.path.join(tmp, "bad.sock")], ["mcp"], ["exec-server"]):
    r = subprocess.run([uexec, *cmd], env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    check(f"{cmd[0]} with an unknown key: exit 2 and FILE:3:1",
          r.returncode == 2 and f"config {cfg_file}:3:1: unknown key daemon.retain_exitd" in r.stderr, r)
r = subprocess.run([uexec, "serve", "--help"], env=env, capture_output=True, text=True, timeout=30)
check("serve --help still answers with a bad file, and names the config", r.returncode == 0 and "uexec config" in r.stdout, r)


# ---- 3. serve: the WebSocket address and the page from the file; a flag overrides ---------------
def serve_lines(extra, until):
    """Starts serve, returns its stderr lines up to one matching `until` (or its end), then stops it."""
    sock = os.path.join(tmp, "d.sock")
    p = subprocess.Popen([uexec, "serve", "--socket", sock, *extra], env=env, stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True)
    got, deadline = [], time.time() + 20
    while time.time() < deadline:
        r, _, _ = select.select([p.stderr], [], [], 1)
        if not r:
            continue
        line = p.stderr.readline()
        if not line:
            break
        got.append(line.rstrip("\n"))
        if re.search(until, line):
            break
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
    return got, p.returncode


p1, p2 = free_port(), free_port()
write_config(f"[daemon]\nws = \"127.0.0.1:{p1}\"\nweb = false\n")
got, rc = serve_lines([], r"listening on ws://")
check("serve: the WebSocket port from the file", any(f"listening on ws://127.0.0.1:{p1}/" in l for l in got), got)
check("serve: web = false serves no page", not any("web terminal at" in l for l in got), got)
got, rc = serve_lines(["--ws", f"127.0.0.1:{p2}"], r"listening on ws://")
check("serve: --ws overrides the file", any(f"listening on ws://127.0.0.1:{p2}/" in l for l in got), got)
write_config("[daemon]\nws = \"off\"\n")
got, rc = serve_lines([], r"listening on unix:")
time.sleep(0.5)
check("serve: ws = \"off\" listens on the socket only", any("listening on unix:" in l for l in got) and
      not any("ws://" in l for l in got), got)

# ---- 4. exec-server: [sessions] ring_size ------------------------------------------------------
write_config("[sessions]\nring_size = \"64KiB\"\n")
es = Peer([uexec, "exec-server", "--listen", "stdio"], env=env)
es.request("initialize", {"clientName": "config-test"})
es.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
r = es.request("process/start", {"processId": "big", "argv": ["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' a"]})
row = {}
for _ in range(200):
    rows = es.request("process/list", {}).get("result", {}).get("processes", [])
    row = next((p for p in rows if p.get("processId") == "big"), {})
    if row.get("outputBytes", 0) >= 200000 and row.get("exited"):
        break
    time.sleep(0.05)
check("exec-server: a session keeps ring_size (64 KiB) of 200000 bytes",
      (row.get("omitted") or {}).get("bytes") == 200000 - 65536, row)
es.close()

# ---- 5. mcp: [agent] and [sandbox] -------------------------------------------------------------
work = os.path.join(tmp, "work")
os.makedirs(work)
write_config("[agent]\nmax_output_tokens = 300\nenv_preset = false\nstructured_content = true\n")
mcp = McpClient([uexec, "mcp"], env=env, cwd=work)
tools = mcp.request("tools/list", {}).get("result", {}).get("tools", [])
ex = next((t for t in tools if t["name"] == "exec_command"), {})
check("mcp: max_output_tokens' default in the schema is the file's",
      ex.get("inputSchema", {}).get("properties", {}).get("max_output_tokens", {}).get("default") == 300, ex)
res, text = mcp.tool("exec_command", {"cmd": "echo \"[$NO_COLOR][$UEXEC_AGENT][$PAGER]\"", "login": False})
check("mcp: env_preset = false leaves the preset out", "structuredContent" in res and
      res["structuredContent"].get("output", "").startswith("[][]["), res)
res, text = mcp.tool("exec_command", {"cmd": "seq 1 100000", "login": False})
out = res.get("structuredContent", {}).get("output", "")
check("mcp: the output budget is the file's (300 tokens: 1200 bytes, and the line that says what was cut)", 0 < len(out) <= 1500, len(out))
mcp.close()

write_config("[sandbox]\nmode = \"read-only\"\n")
mcp = McpClient([uexec, "mcp"], env=env, cwd=work)
res, text = mcp.tool("exec_command", {"cmd": "touch made-by-agent", "login": False})
check("mcp: the file's sandbox (read-only) applies", not os.path.exists(os.path.join(work, "made-by-agent")), text)
mcp.close()
mcp = McpClient([uexec, "mcp", "--sandbox", "workspace-write"], env=env, cwd=work)
res, text = mcp.tool("exec_command", {"cmd": "touch made-by-agent", "login": False})
check("mcp: --sandbox overrides the file's", os.path.exists(os.path.join(work, "made-by-agent")), text)
mcp.close()

# The daemon's sessions take the daemon's sandbox: the file's [sandbox] does not refuse --connect.
sock = os.path.join(tmp, "c.sock")
d = subprocess.Popen([uexec, "serve", "--socket", sock, "--no-ws"], env=env, stderr=subprocess.DEVNULL)
for _ in range(200):
    if os.path.exists(sock):
        break
    time.sleep(0.05)
mcp = McpClient([uexec, "mcp", "--connect", sock], env=env, cwd=work)
check("mcp --connect with the file's [sandbox]: initialized", "result" in mcp.init, mcp.init)
mcp.close()
d.send_signal(signal.SIGTERM)
d.wait(timeout=20)

# ---- 6. no sandbox writes the config -----------------------------------------------------------
# The workspace holds the config home, so workspace-write would cover it but for the carve-out.
ws_home = os.path.join(tmp, "ws")
ws_cfg = os.path.join(ws_home, "cfg")
os.makedirs(ws_cfg)
env2 = {**env, "XDG_CONFIG_HOME": ws_cfg}
mcp = McpClient([uexec, "mcp", "--sandbox", "workspace-write"], env=env2, cwd=ws_home)
check("the config directory exists before the first sandbox, mode 0700", os.path.isdir(os.path.join(ws_cfg, "uexec")) and
      os.stat(os.path.join(ws_cfg, "uexec")).st_mode & 0o777 == 0o700)
res, text = mcp.tool("exec_command", {"cmd": "touch in-workspace; printf '[sandbox]\\nmode = \"none\"\\n' > cfg/uexec/config.toml; "
                                             "echo rc=$?", "login": False})
check("sandbox: the workspace is writable", os.path.exists(os.path.join(ws_home, "in-workspace")), text)
check("sandbox: the config file cannot be created in it", not os.path.exists(os.path.join(ws_cfg, "uexec", "config.toml")),
      text)
res, text = mcp.tool("exec_command", {"cmd": "mv cfg/uexec cfg/moved; mkdir -p cfg/x && mv cfg/x cfg/uexec; echo rc=$?",
                                      "login": False})
check("sandbox: the config directory cannot be moved away and replaced",
      not os.path.exists(os.path.join(ws_cfg, "moved")) and not os.path.exists(os.path.join(ws_cfg, "uexec", "x")), text)
mcp.close()

sys.exit(check.exit_code())
