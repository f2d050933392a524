// front_doors.mjs UEXEC: the daemon's front doors, from outside, with real connections:
//   - WebSocket refusals answer HTTP: 401 without (or with a wrong) token, saying how to send
//     it and where it is; 403 from a foreign Origin, naming it (`uexec serve` and
//     `uexec exec-server --listen ws://`);
//   - --allow-origin (exact origins; `*` refused) and --allow-remote (a non-loopback listen
//     address, only with a token; a warning at start);
//   - the Host check against DNS rebinding: 403 unless Host names a loopback address, the
//     listen address, an --allow-origin host or an --allow-host entry;
//   - --token-file (serve and exec-server --listen ws://): the token from a file, refused when
//     missing, empty or readable by others;
//   - `uexec mcp --connect SOCKET`, driven by the official MCP SDK client: its sessions live in
//     the daemon and outlive it; a daemon that is not there is a start-up error; a daemon that
//     goes away makes calls fail with "uexec daemon unavailable" until it is back.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { check, checkCancelled, sleep, text, finish } from "./harness.mjs";

const uexec = process.argv[2];
const tmp = fs.mkdtempSync("/var/tmp/uexec-doors-")  // not under /tmp: a token there refuses other suites' Landlock+network sandboxes;
fs.chmodSync(tmp, 0o700);
const children = [];

// One WebSocket upgrade: {status: 101 | the HTTP status | 0, body, ws (when open)}.
function upgrade(url, { token, protocols = [], origin, host } = {}) {
  return new Promise((resolve) => {
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    if (host !== undefined) headers.Host = host;
    const ws = new WebSocket(url, protocols, { headers, ...(origin ? { origin } : {}) });
    const timer = setTimeout(() => { ws.terminate(); resolve({ status: 0, body: "timeout" }); }, 5000);
    ws.on("open", () => { clearTimeout(timer); resolve({ status: 101, ws }); });
    ws.on("unexpected-response", (req, res) => {
      let body = "";
      res.on("data", (d) => { body += d; });
      res.on("end", () => { clearTimeout(timer); req.destroy(); resolve({ status: res.statusCode, body, headers: res.headers }); });
    });
    ws.on("error", (e) => { clearTimeout(timer); resolve({ status: 0, body: String(e) }); });
  });
}

// A request on an open WebSocket: the reply to it.
function wsRequest(ws, method, params = {}) {
  const id = Math.floor(Math.random() * 1e9);
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${method} timed out`)), 10000);
    ws.on("message", function onMessage(d) {
      const m = JSON.parse(d.toString());
      if (m.id !== id) return;
      clearTimeout(t);
      ws.off("message", onMessage);
      resolve(m);
    });
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  });
}

// `uexec serve` on a fresh socket: {proc, port, token, err(), sock}.
async function serve(args, sock = path.join(fs.mkdtempSync(path.join(tmp, "d-")), "uexec.sock")) {
  fs.chmodSync(path.dirname(sock), 0o700);
  const proc = spawn(uexec, ["serve", "--socket", sock, "--no-web", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  children.push(proc);
  let err = "";
  proc.stderr.on("data", (d) => { err += d; });
  const wantWs = !args.includes("--no-ws");
  const re = /listening on ws:\/\/[^:]+:(\d+)\//;
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) break;
    if (wantWs ? re.test(err) : err.includes("listening on unix:")) break;
    await sleep(25);
  }
  const port = Number(err.match(re)?.[1] ?? 0);
  const tokenFile = path.join(path.dirname(sock), "token");
  const token = wantWs && fs.existsSync(tokenFile) ? fs.readFileSync(tokenFile, "utf8") : "";
  return { proc, port, token, sock, tokenFile, err: () => err };
}

async function stop(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
  proc.kill("SIGTERM");
  const [code] = await Promise.race([once(proc, "exit"), sleep(10000).then(() => ["timeout"])]);
  return code;
}

// `uexec exec-server --listen URL`: {proc, url, err()}.
async function execServer(listen, args = [], env = {}) {
  const proc = spawn(uexec, ["exec-server", "--listen", listen, ...args],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  children.push(proc);
  let out = "", err = "";
  proc.stdout.on("data", (d) => { out += d; });
  proc.stderr.on("data", (d) => { err += d; });
  for (let i = 0; i < 200 && !out.includes("\n") && proc.exitCode === null; i++) await sleep(25);
  return { proc, url: out.trim(), err: () => err };
}

// A refused start: {status, stderr}.
function refused(args, env = {}) {
  const r = spawnSync(uexec, args, { env: { ...process.env, ...env }, input: "", timeout: 10000 });
  return { status: r.status, stderr: r.stderr.toString() };
}

// ---- 1. `uexec serve`: 401 and 403 ------------------------------------------------------------
{
  const d = await serve(["--ws", "127.0.0.1:0"]);
  check("serve listens on WebSocket", d.port > 0 && d.token.length > 20, d.err());
  const url = `ws://127.0.0.1:${d.port}/`;
  let r = await upgrade(url);
  check("[serve] no token: 401", r.status === 401, `${r.status} ${r.body}`);
  check("[serve] the 401 says how to send the token", r.body.includes("Authorization: Bearer <token>") &&
    r.body.includes("uexec.auth.<token>") && r.body.includes(d.tokenFile), r.body);
  check("[serve] the 401 has a Bearer challenge", /^Bearer/.test(r.headers?.["www-authenticate"] ?? ""), JSON.stringify(r.headers));
  r = await upgrade(url, { token: "not-the-token" });
  check("[serve] a wrong token: 401", r.status === 401 && r.body.includes("does not match"), `${r.status} ${r.body}`);
  r = await upgrade(url, { protocols: ["uexec.v1", "uexec.auth.not-the-token"] });
  check("[serve] a wrong token as a subprotocol: 401", r.status === 401, `${r.status} ${r.body}`);
  r = await upgrade(url, { token: d.token, origin: "http://evil.example" });
  check("[serve] a foreign Origin: 403 naming it", r.status === 403 && r.body.includes("http://evil.example") &&
    r.body.includes("--allow-origin"), `${r.status} ${r.body}`);
  r = await upgrade(url, { origin: "http://evil.example" });
  check("[serve] a foreign Origin without a token: 403 first", r.status === 403, `${r.status} ${r.body}`);
  r = await upgrade(url, { token: d.token, origin: "http://127.0.0.1:1" });
  check("[serve] a loopback Origin on another port: 403", r.status === 403, `${r.status} ${r.body}`);
  for (const o of [`http://127.0.0.1:${d.port}`, `http://localhost:${d.port}`, `http://[::1]:${d.port}`]) {
    r = await upgrade(url, { token: d.token, origin: o });
    check(`[serve] its own origin ${o} is accepted`, r.status === 101, `${r.status} ${r.body}`);
    r.ws?.close();
  }
  r = await upgrade(url, { protocols: ["uexec.v1", `uexec.auth.${d.token}`], origin: `http://127.0.0.1:${d.port}` });
  check("[serve] a browser's way (subprotocol + own origin) opens", r.status === 101 && r.ws.protocol === "uexec.v1", `${r.status} ${r.body}`);
  r.ws?.close();
  r = await upgrade(url, { token: d.token });
  check("[serve] the token, no Origin: open", r.status === 101, `${r.status} ${r.body}`);
  if (r.ws) {
    const init = await wsRequest(r.ws, "initialize", { clientName: "front-doors" });
    check("[serve] and it speaks the protocol", typeof init.result?.sessionId === "string", JSON.stringify(init));
    r.ws.close();
  }
  check("[serve] refusals are logged", /refusing a WebSocket upgrade \(401\)/.test(d.err()) && /\(403\)/.test(d.err()), d.err());
  check("[serve] exits 0", (await stop(d.proc)) === 0);
}

// ---- 2. --allow-origin ------------------------------------------------------------------------
{
  const d = await serve(["--ws", "127.0.0.1:0", "--allow-origin", "https://example.com", "--allow-origin", "http://Tools.Example:8080/"]);
  const url = `ws://127.0.0.1:${d.port}/`;
  let r = await upgrade(url, { token: d.token, origin: "https://example.com" });
  check("[allow-origin] an allowed origin opens", r.status === 101, `${r.status} ${r.body}`);
  r.ws?.close();
  r = await upgrade(url, { token: d.token, origin: "http://tools.example:8080" });
  check("[allow-origin] compared without case, trailing slash ignored", r.status === 101, `${r.status} ${r.body}`);
  r.ws?.close();
  for (const o of ["https://evil.example.com", "http://example.com", "https://example.com:8443", "https://sub.example.com"]) {
    r = await upgrade(url, { token: d.token, origin: o });
    check(`[allow-origin] ${o} is still 403`, r.status === 403 && r.body.includes(o), `${r.status} ${r.body}`);
  }
  r = await upgrade(url, { origin: "https://example.com" });
  check("[allow-origin] an allowed origin still needs the token", r.status === 401, `${r.status} ${r.body}`);
  await stop(d.proc);

  let f = refused(["serve", "--socket", path.join(tmp, "x.sock"), "--ws", "127.0.0.1:0", "--allow-origin", "*"]);
  check("[allow-origin] * is refused, saying why", f.status === 2 && f.stderr.includes("--allow-origin * is not accepted") &&
    f.stderr.includes("cross-site"), `${f.status} ${f.stderr}`);
  f = refused(["serve", "--socket", path.join(tmp, "x.sock"), "--ws", "127.0.0.1:0", "--allow-origin", "https://example.com/app"]);
  check("[allow-origin] an origin with a path is refused", f.status === 2 && f.stderr.includes("without a path"), `${f.status} ${f.stderr}`);
  f = refused(["serve", "--socket", path.join(tmp, "x.sock"), "--ws", "127.0.0.1:0", "--allow-origin", "example.com"]);
  check("[allow-origin] an origin without a scheme is refused", f.status === 2 && f.stderr.includes("http://HOST"), `${f.status} ${f.stderr}`);
  check("[allow-origin] nothing was left listening", !fs.existsSync(path.join(tmp, "x.sock")));
}

// ---- 3. --allow-remote ------------------------------------------------------------------------
{
  let f = refused(["serve", "--socket", path.join(tmp, "r.sock"), "--ws", "0.0.0.0:0"]);
  check("[allow-remote] serve on 0.0.0.0 without it is refused", f.status === 2 && f.stderr.includes("not a loopback address") &&
    f.stderr.includes("--allow-remote"), `${f.status} ${f.stderr}`);
  const d = await serve(["--ws", "0.0.0.0:0", "--allow-remote"]);
  check("[allow-remote] serve listens on 0.0.0.0", d.port > 0 && d.err().includes("ws://0.0.0.0:"), d.err());
  for (let i = 0; i < 100 && !/WARNING: listening on ws:/.test(d.err()); i++) await sleep(50);
  check("[allow-remote] with a warning", /WARNING: listening on ws:\/\/0\.0\.0\.0:\d+\/, reachable from other machines/.test(d.err()), d.err());
  const url = `ws://127.0.0.1:${d.port}/`;
  let r = await upgrade(url);
  check("[allow-remote] serve: still 401 without the token", r.status === 401, `${r.status} ${r.body}`);
  r = await upgrade(url, { token: d.token });
  check("[allow-remote] serve: open with the token", r.status === 101, `${r.status} ${r.body}`);
  if (r.ws) {
    const init = await wsRequest(r.ws, "initialize", { clientName: "front-doors" });
    check("[allow-remote] serve: it speaks the protocol", typeof init.result?.sessionId === "string", JSON.stringify(init));
    r.ws.close();
  }
  await stop(d.proc);

  f = refused(["exec-server", "--listen", "ws://0.0.0.0:0"]);
  check("[allow-remote] exec-server on 0.0.0.0 without it is refused", f.status === 2 && f.stderr.includes("--allow-remote"), `${f.status} ${f.stderr}`);
  f = refused(["exec-server", "--listen", "ws://0.0.0.0:0", "--allow-remote"], { UEXEC_WS_TOKEN: "" });
  check("[allow-remote] exec-server without a token is refused, clearly", f.status === 2 &&
    f.stderr.includes("--allow-remote needs a token") && f.stderr.includes("UEXEC_WS_TOKEN"), `${f.status} ${f.stderr}`);
  f = refused(["exec-server", "--listen", "stdio", "--allow-remote"]);
  check("[allow-remote] exec-server on stdio refuses the ws flags", f.status === 2 && f.stderr.includes("ws:// only"), `${f.status} ${f.stderr}`);
  const token = "s3cret-" + Math.random().toString(36).slice(2);
  const es = await execServer("ws://0.0.0.0:0", ["--allow-remote", "--allow-origin", "https://example.com"], { UEXEC_WS_TOKEN: token });
  const port = Number(es.url.match(/^ws:\/\/0\.0\.0\.0:(\d+)$/)?.[1] ?? 0);
  check("[allow-remote] exec-server prints its URL", port > 0, `${es.url} ${es.err()}`);
  // The URL comes on stdout; the warning on stderr may arrive a moment later.
  for (let i = 0; i < 100 && !es.err().includes("WARNING: listening on ws://0.0.0.0:"); i++) await sleep(50);
  check("[allow-remote] exec-server warns", es.err().includes("WARNING: listening on ws://0.0.0.0:"), es.err());
  const eurl = `ws://127.0.0.1:${port}/`;
  r = await upgrade(eurl);
  check("[exec-server ws] no token: 401 saying where it is", r.status === 401 && r.body.includes("UEXEC_WS_TOKEN"), `${r.status} ${r.body}`);
  r = await upgrade(eurl, { token, origin: "http://evil.example" });
  check("[exec-server ws] a foreign Origin: 403", r.status === 403 && r.body.includes("http://evil.example"), `${r.status} ${r.body}`);
  r = await upgrade(eurl, { token, origin: "https://example.com" });
  check("[exec-server ws] an --allow-origin origin opens", r.status === 101, `${r.status} ${r.body}`);
  if (r.ws) {
    const init = await wsRequest(r.ws, "initialize", { clientName: "front-doors" });
    check("[exec-server ws] it speaks the protocol", typeof init.result?.sessionId === "string", JSON.stringify(init));
    r.ws.close();
  }
  check("[exec-server ws] exits 0", (await stop(es.proc)) === 0);

  // Without a token on loopback (the default), a foreign origin is still 403.
  const open = await execServer("ws://127.0.0.1:0");
  r = await upgrade(open.url + "/", { origin: "http://evil.example" });
  check("[exec-server ws] no token, foreign Origin: 403", r.status === 403, `${r.status} ${r.body}`);
  r = await upgrade(open.url + "/");
  check("[exec-server ws] no token needed on loopback without UEXEC_WS_TOKEN", r.status === 101, `${r.status} ${r.body}`);
  r.ws?.close();
  await stop(open.proc);
}

// ---- 3b. the Host check (DNS rebinding) --------------------------------------------------------
{
  const d = await serve(["--ws", "127.0.0.1:0", "--allow-origin", "https://tools.example", "--allow-host", "DevBox.Example"]);
  const url = `ws://127.0.0.1:${d.port}/`;
  for (const h of [`127.0.0.1:${d.port}`, "127.0.0.1", `localhost:${d.port}`, "LOCALHOST", `[::1]:${d.port}`, "[::1]",
                   `devbox.example:${d.port}`, "devbox.example", "tools.example"]) {
    const r = await upgrade(url, { token: d.token, host: h });
    check(`[host] ${h} is accepted`, r.status === 101, `${r.status} ${r.body}`);
    r.ws?.close();
  }
  for (const h of [`evil.example:${d.port}`, "localhost.evil.example", `127.0.0.1.evil.example:${d.port}`, `0.0.0.0:${d.port}`,
                   "sub.devbox.example", `[::1`]) {
    const r = await upgrade(url, { token: d.token, host: h });
    check(`[host] ${h}: 403`, r.status === 403, `${r.status} ${r.body}`);
  }
  let r = await upgrade(url, { token: d.token, host: `rebound.example:${d.port}` });
  check("[host] the 403 names the Host and the flag", r.status === 403 && r.body.includes(`rebound.example:${d.port}`) &&
    r.body.includes("--allow-host") && r.body.includes("devbox.example"), r.body);
  r = await upgrade(url, { host: `rebound.example:${d.port}` });
  check("[host] a foreign Host without a token: 403 first", r.status === 403, `${r.status} ${r.body}`);
  r = await upgrade(url, { token: d.token, host: `rebound.example:${d.port}`, origin: `http://rebound.example:${d.port}` });
  check("[host] a rebinding page (its own Host and Origin): 403", r.status === 403, `${r.status} ${r.body}`);
  check("[host] refusals are logged", /refusing a WebSocket upgrade \(403\): 403 Forbidden: this uexec WebSocket does not answer to the Host/.test(d.err()), d.err());
  await stop(d.proc);

  let f = refused(["serve", "--socket", path.join(tmp, "h.sock"), "--ws", "127.0.0.1:0", "--allow-host", "*"]);
  check("[host] --allow-host * is refused", f.status === 2 && f.stderr.includes("--allow-host * is not accepted"), `${f.status} ${f.stderr}`);
  f = refused(["serve", "--socket", path.join(tmp, "h.sock"), "--ws", "127.0.0.1:0", "--allow-host", "https://x.example/"]);
  check("[host] --allow-host with a URL is refused", f.status === 2 && f.stderr.includes("not a URL"), `${f.status} ${f.stderr}`);

  const es = await execServer("ws://127.0.0.1:0", ["--allow-host", "devbox.example"]);
  r = await upgrade(es.url + "/", { host: "evil.example" });
  check("[host] exec-server: a foreign Host: 403", r.status === 403, `${r.status} ${r.body}`);
  r = await upgrade(es.url + "/", { host: "devbox.example:1" });
  check("[host] exec-server: --allow-host opens", r.status === 101, `${r.status} ${r.body}`);
  r.ws?.close();
  await stop(es.proc);
}

// ---- 3c. --token-file -------------------------------------------------------------------------
{
  const tdir = fs.mkdtempSync(path.join(tmp, "t-"));
  const tokenFile = path.join(tdir, "my-token");
  const token = "file-token-" + Math.random().toString(36).slice(2);
  fs.writeFileSync(tokenFile, token + "\n", { mode: 0o600 });
  const sockDir = fs.mkdtempSync(path.join(tmp, "d-"));
  fs.writeFileSync(path.join(sockDir, "token"), "stale-token", { mode: 0o600 });  // an earlier run's
  const d = await serve(["--ws", "127.0.0.1:0", "--token-file", tokenFile], path.join(sockDir, "uexec.sock"));
  check("[token-file] serve listens, naming the file", d.port > 0 && d.err().includes(`token in ${tokenFile}`), d.err());
  check("[token-file] no token of its own is written, and a stale one is removed", !fs.existsSync(d.tokenFile), d.tokenFile);
  const url = `ws://127.0.0.1:${d.port}/`;
  let r = await upgrade(url, { token });
  check("[token-file] the file's token (newline stripped) opens", r.status === 101, `${r.status} ${r.body}`);
  r.ws?.close();
  r = await upgrade(url, { protocols: ["uexec.v1", `uexec.auth.${token}`] });
  check("[token-file] also as a subprotocol", r.status === 101, `${r.status} ${r.body}`);
  r.ws?.close();
  r = await upgrade(url, { token: token + "x" });
  check("[token-file] another token: 401 naming the file", r.status === 401 && r.body.includes(tokenFile), `${r.status} ${r.body}`);
  await stop(d.proc);

  const sockArgs = ["serve", "--socket", path.join(tmp, "tf.sock"), "--ws", "127.0.0.1:0", "--token-file"];
  let f = refused([...sockArgs, path.join(tdir, "missing")]);
  check("[token-file] a missing file is refused", f.status === 2 && f.stderr.includes(path.join(tdir, "missing")) &&
    f.stderr.includes("No such file"), `${f.status} ${f.stderr}`);
  fs.writeFileSync(path.join(tdir, "empty"), "\n", { mode: 0o600 });
  f = refused([...sockArgs, path.join(tdir, "empty")]);
  check("[token-file] an empty file is refused", f.status === 2 && f.stderr.includes("is empty"), `${f.status} ${f.stderr}`);
  fs.writeFileSync(path.join(tdir, "open"), "tok\n", { mode: 0o600 });
  fs.chmodSync(path.join(tdir, "open"), 0o644);
  f = refused([...sockArgs, path.join(tdir, "open")]);
  check("[token-file] a file others can read is refused", f.status === 2 && f.stderr.includes("group or others") &&
    f.stderr.includes("chmod 600"), `${f.status} ${f.stderr}`);
  check("[token-file] nothing was left listening", !fs.existsSync(path.join(tmp, "tf.sock")));
  f = refused(["serve", "--socket", path.join(tmp, "tf.sock"), "--no-ws", "--token-file", tokenFile]);
  check("[token-file] serve --no-ws refuses it", f.status === 2 && f.stderr.includes("--token-file"), `${f.status} ${f.stderr}`);

  const es = await execServer("ws://127.0.0.1:0", ["--token-file", tokenFile], { UEXEC_WS_TOKEN: "" });
  r = await upgrade(es.url + "/");
  check("[token-file] exec-server: no token: 401 naming the file", r.status === 401 && r.body.includes(tokenFile), `${r.status} ${r.body}`);
  r = await upgrade(es.url + "/", { token });
  check("[token-file] exec-server: the file's token opens", r.status === 101, `${r.status} ${r.body}`);
  if (r.ws) {
    const init = await wsRequest(r.ws, "initialize", { clientName: "front-doors" });
    check("[token-file] exec-server: it speaks the protocol", typeof init.result?.sessionId === "string", JSON.stringify(init));
    r.ws.close();
  }
  await stop(es.proc);
  f = refused(["exec-server", "--listen", "ws://127.0.0.1:0", "--token-file", path.join(tdir, "open")]);
  check("[token-file] exec-server refuses a file others can read", f.status === 2 && f.stderr.includes("group or others"), `${f.status} ${f.stderr}`);
  f = refused(["exec-server", "--listen", "stdio", "--token-file", tokenFile]);
  check("[token-file] exec-server on stdio refuses it", f.status === 2 && f.stderr.includes("ws:// only"), `${f.status} ${f.stderr}`);
}

// ---- 4. `uexec mcp --connect` -----------------------------------------------------------------
{
  let f = refused(["mcp", "--connect", path.join(tmp, "no-daemon.sock")]);
  check("[mcp --connect] no daemon: a clear error, non-zero", f.status !== 0 && f.stderr.includes("cannot reach the uexec daemon") &&
    f.stderr.includes("uexec serve"), `${f.status} ${f.stderr}`);
  f = refused(["mcp", "--connect", path.join(tmp, "no-daemon.sock"), "--sandbox", "read-only"]);
  check("[mcp --connect] --sandbox is the daemon's", f.status === 2 && f.stderr.includes("uexec serve --sandbox"), `${f.status} ${f.stderr}`);

  const d = await serve(["--no-ws"]);
  const connect = async (name, sock = d.sock) => {
    const transport = new StdioClientTransport({ command: uexec, args: ["mcp", "--connect", sock, "--structured-content"], stderr: "inherit" });
    const client = new Client({ name, version: "1.0.0" });
    await client.connect(transport);
    return { client, transport };
  };
  const a = await connect("front-doors-a");
  const { tools } = await a.client.listTools();
  check("[mcp --connect] tools/list", JSON.stringify(tools.map((t) => t.name).sort()) ===
    JSON.stringify(["exec_command", "kill_session", "list_sessions", "read_output", "write_stdin"]), JSON.stringify(tools.map((t) => t.name)));
  let r = await a.client.callTool({ name: "exec_command", arguments: { cmd: "echo ready; exec sleep 30", yield_time_ms: 1000, login: false } });
  const sid = r.structuredContent?.session_id;
  check("[mcp --connect] exec_command starts a daemon session", Number.isInteger(sid) && text(r).includes("Process running with session ID") &&
    r.structuredContent?.output === "ready\n", JSON.stringify(r));
  r = await a.client.callTool({ name: "write_stdin", arguments: { session_id: 424242, chars: "x" } });
  check("[mcp --connect] tool errors pass through", r.isError === true && text(r).startsWith("write_stdin failed:"), JSON.stringify(r));
  const deltas = [];
  r = await a.client.callTool({ name: "exec_command", arguments: { cmd: "echo first; sleep 0.4; echo second; sleep 0.5", login: false, yield_time_ms: 10000 } },
    undefined, { onprogress: (p) => deltas.push(p) });
  check("[mcp --connect] progress: the whole output in the reply", r.structuredContent?.output === "first\nsecond\n", text(r));
  check("[mcp --connect] progress: the newest line, relayed as notifications/progress", deltas.length === 2 &&
    deltas[0].message === "first" && deltas[1].message === "second" && deltas.every((p, i) => p.progress === i + 1), JSON.stringify(deltas));
  await checkCancelled("mcp --connect", a.client, a.transport);
  try {
    await a.client.callTool({ name: "no_such_tool", arguments: {} });
    check("[mcp --connect] an unknown tool is a JSON-RPC error", false);
  } catch (e) {
    check("[mcp --connect] an unknown tool is a JSON-RPC error", String(e).includes("-32602"), String(e));
  }

  // Kill the MCP server outright: the session is the daemon's and keeps running.
  const mcpPid = a.transport.pid;
  process.kill(mcpPid, "SIGKILL");
  await sleep(300);
  check("[mcp --connect] the MCP process is gone", (() => { try { process.kill(mcpPid, 0); return false; } catch { return true; } })());
  const sock = net.createConnection(d.sock);
  await once(sock, "connect");
  let buf = "";
  const replies = new Map();
  sock.on("data", (x) => {
    buf += x;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) { const m = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1); if (m.id !== undefined) replies.set(m.id, m); }
  });
  const rpc = async (id, method, params) => {
    sock.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    for (let i = 0; i < 200 && !replies.has(id); i++) await sleep(25);
    return replies.get(id);
  };
  await rpc(1, "initialize", { clientName: "front-doors-check" });
  sock.write(JSON.stringify({ jsonrpc: "2.0", method: "initialized", params: {} }) + "\n");
  const listed = await rpc(2, "exec/listSessions", { all: true });
  const row = listed?.result?.structuredContent?.sessions?.find((s) => s.session_id === sid);
  check("[mcp --connect] after the MCP process died the daemon still runs the session", row?.state === "running", JSON.stringify(listed));
  // `uexec ls` lists the daemon's processes (process/list): the agent session once exec/* sessions
  // are listed there (docs/protocol.md §4.6); until then this part reports itself as skipped.
  const plist = await rpc(3, "process/list", { all: true });
  const inList = (plist?.result?.processes ?? []).some((p) => p.agentSessionId === sid || p.processId === String(sid));
  if (inList) {
    const ls = spawnSync(uexec, ["ls"], { env: { ...process.env, UEXEC_SOCKET: d.sock } }).stdout.toString();
    check("[mcp --connect] `uexec ls` shows the session", ls.includes("sleep 30"), ls);
  } else {
    console.log("SKIP: process/list does not list exec/* sessions yet, so `uexec ls` cannot show them");
  }
  sock.end();

  // A second MCP client finds it and ends it.
  const b = await connect("front-doors-b");
  r = await b.client.callTool({ name: "list_sessions", arguments: {} });
  check("[mcp --connect] a new MCP client lists it", text(r).includes(String(sid)), text(r));
  r = await b.client.callTool({ name: "kill_session", arguments: { session_id: sid, grace_ms: 0 } });
  check("[mcp --connect] and can kill it", !r.isError && text(r).includes("Process exited"), text(r));

  // The daemon goes away: calls fail with "uexec daemon unavailable"; it comes back: they work.
  check("daemon exits 0", (await stop(d.proc)) === 0);
  r = await b.client.callTool({ name: "list_sessions", arguments: {} });
  check("[mcp --connect] daemon gone: isError uexec daemon unavailable", r.isError === true && text(r).startsWith("uexec daemon unavailable"), JSON.stringify(r));
  const d2 = await serve(["--no-ws"], d.sock);
  let back = false;
  for (let i = 0; i < 60 && !back; i++) {
    await sleep(250);
    r = await b.client.callTool({ name: "exec_command", arguments: { cmd: "echo back", login: false } });
    back = !r.isError && text(r).includes("back");
  }
  check("[mcp --connect] it reconnects when the daemon is back", back, JSON.stringify(r));
  const pid = b.transport.pid;
  await b.client.close();
  for (let i = 0; i < 100; i++) { try { process.kill(pid, 0); await sleep(50); } catch { break; } }
  check("[mcp --connect] stdin EOF ends it", (() => { try { process.kill(pid, 0); return false; } catch { return true; } })());
  await stop(d2.proc);

  // An older protocol version gets no structuredContent.
  const d3 = await serve(["--no-ws"]);
  const raw = spawn(uexec, ["mcp", "--connect", `unix:${d3.sock}`, "--structured-content"], { stdio: ["pipe", "pipe", "inherit"] });
  children.push(raw);
  let out = "";
  raw.stdout.on("data", (x) => { out += x; });
  const send = (o) => raw.stdin.write(JSON.stringify(o) + "\n");
  send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2024-11-05", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "exec_command", arguments: { cmd: "echo old", login: false } } });
  for (let i = 0; i < 200 && out.split("\n").length < 3; i++) await sleep(25);
  const msgs = out.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const m2 = msgs.find((m) => m.id === 2);
  check("[mcp --connect] 2024-11-05: version echoed", msgs.find((m) => m.id === 1)?.result?.protocolVersion === "2024-11-05", out);
  check("[mcp --connect] 2024-11-05: no structuredContent", m2?.result && !("structuredContent" in m2.result) &&
    text(m2.result).includes("old"), out);
  raw.stdin.end();
  const [code] = await once(raw, "exit");
  check("[mcp --connect] exits 0 on stdin EOF", code === 0, String(code));
  await stop(d3.proc);
}

for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
fs.rmSync(tmp, { recursive: true, force: true });
finish("front-doors");
