// protocol.mjs UEXEC: the native JSON-RPC protocol over its three real transports: a stdio
// pipe (`uexec exec-server --listen stdio`), the daemon's Unix socket and its WebSocket
// (`uexec serve`), and WebSocket on `uexec exec-server --listen ws://`. The same checks run
// on each; the daemon-only ones (two clients, slow clients, disconnect and resume) run on
// the socket and on WebSocket.
import { spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { check, sleep, finish } from "./harness.mjs";

const uexec = process.argv[2];
const b64 = (s) => Buffer.from(s).toString("base64");
const unb64 = (s) => Buffer.from(s, "base64").toString();

// One JSON-RPC peer over any transport: send(obj|string), request(method, params), and a
// record of every notification.
class Peer {
  constructor(name) { this.name = name; this.nextId = 1; this.pending = new Map(); this.notes = []; this.waiters = []; }
  onMessage(text) {
    let m;
    try { m = JSON.parse(text); } catch { return; }
    if (m.method) {
      this.notes.push(m);
      for (const w of this.waiters.splice(0)) w();
    } else if (this.pending.has(m.id)) {
      this.pending.get(m.id)(m);
      this.pending.delete(m.id);
    } else {
      this.orphans = (this.orphans ?? []).concat([m]);
      for (const w of this.waiters.splice(0)) w();
    }
  }
  request(method, params = {}, timeout = 10000) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => { this.pending.delete(id); reject(new Error(`${this.name}: ${method} timed out`)); }, timeout);
      this.pending.set(id, (m) => { clearTimeout(t); resolve(m); });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }
  async until(pred, timeout = 10000) {
    const end = Date.now() + timeout;
    while (!pred()) {
      if (Date.now() > end) return false;
      await new Promise((r) => { this.waiters.push(r); setTimeout(r, 50); });
    }
    return true;
  }
  outputOf(pid) {
    return this.notes.filter((n) => n.method === "process/output" && n.params.processId === pid)
      .map((n) => unb64(n.params.chunk)).join("");
  }
  eventsOf(pid) { return this.notes.filter((n) => n.params?.processId === pid); }
  async init(extra = {}) {
    const r = await this.request("initialize", { clientName: "protocol-test", ...extra });
    this.send({ jsonrpc: "2.0", method: "initialized", params: {} });
    return r;
  }
}

class StdioPeer extends Peer {
  constructor() {
    super("stdio");
    this.child = spawn(uexec, ["exec-server", "--listen", "stdio"], { stdio: ["pipe", "pipe", "inherit"] });
    let buf = "";
    this.child.stdout.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) { this.onMessage(buf.slice(0, i)); buf = buf.slice(i + 1); }
    });
  }
  send(o) { this.child.stdin.write((typeof o === "string" ? o : JSON.stringify(o)) + "\n"); }
  async close() { this.child.stdin.end(); await once(this.child, "exit"); }
}

class UnixPeer extends Peer {
  constructor(sock) {
    super("unix");
    this.sock = net.createConnection(sock);
    let buf = "";
    this.sock.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) { this.onMessage(buf.slice(0, i)); buf = buf.slice(i + 1); }
    });
    this.sock.on("error", () => {});
  }
  async open() { if (this.sock.connecting) await once(this.sock, "connect"); }
  send(o) { this.sock.write((typeof o === "string" ? o : JSON.stringify(o)) + "\n"); }
  async close() { this.sock.end(); }
}

class WsPeer extends Peer {
  constructor(url, token, opts = {}) {
    super("ws");
    this.ws = new WebSocket(url, opts.protocols ?? [], { headers: token ? { Authorization: `Bearer ${token}` } : {}, ...opts.ws });
    this.ws.on("message", (d, isBinary) => this.onMessage(d.toString()));
    this.ws.on("error", () => {});
  }
  async open() {
    if (this.ws.readyState === WebSocket.OPEN) return true;
    try {
      await Promise.race([once(this.ws, "open"), once(this.ws, "unexpected-response").then(([req, res]) => {
                            this.status = res.statusCode;  // the HTTP answer to a refused upgrade
                            req.destroy();
                            throw new Error("refused");
                          }),
                          once(this.ws, "close").then(() => { throw new Error("closed"); })]);
      return true;
    } catch { return false; }
  }
  send(o) { this.ws.send(typeof o === "string" ? o : JSON.stringify(o)); }
  async close() { this.ws.close(); }
}

// ---- the checks every transport must pass --------------------------------------------------
async function common(label, p) {
  const c = (n, ok, d) => check(`[${label}] ${n}`, ok, d);
  const early = await p.request("process/list", {});
  c("gate: requests before initialize", early.error?.code === -32600, JSON.stringify(early));
  const init = await p.init();
  c("initialize", typeof init.result?.sessionId === "string", JSON.stringify(init).slice(0, 200));
  const again = await p.request("initialize", { clientName: "x" });
  c("second initialize", again.error?.code === -32600, JSON.stringify(again));

  // seq order, exited before trailing output, closed last
  let r = await p.request("process/start", { processId: "late", argv: ["/bin/sh", "-c", "echo first; (sleep 0.3; echo late) & exit 3"], cwd: "file:///tmp", env: { PATH: "/usr/bin:/bin" }, tty: false });
  c("start", r.result?.processId === "late", JSON.stringify(r));
  await p.until(() => p.eventsOf("late").some((n) => n.method === "process/closed"), 8000);
  const ev = p.eventsOf("late");
  const seqs = ev.map((n) => n.params.seq);
  c("seq strictly increasing from 1", seqs[0] === 1 && seqs.every((s, i) => i === 0 || s === seqs[i - 1] + 1), JSON.stringify(seqs));
  const kinds = ev.map((n) => n.method.split("/")[1]);
  c("closed is last", kinds[kinds.length - 1] === "closed", kinds.join(","));
  const exIdx = kinds.indexOf("exited"), lateIdx = ev.findIndex((n) => n.method === "process/output" && unb64(n.params.chunk).includes("late"));
  c("exited comes before trailing output", exIdx >= 0 && lateIdx > exIdx, kinds.join(","));
  c("exit code", ev[exIdx]?.params.exitCode === 3, JSON.stringify(ev[exIdx]));

  // read replay with afterSeq and maxBytes
  r = await p.request("process/start", { processId: "many", argv: ["/bin/sh", "-c", "for i in 1 2 3 4 5; do echo line$i; sleep 0.02; done"], cwd: "file:///tmp", env: { PATH: "/usr/bin:/bin" } });
  await p.until(() => p.eventsOf("many").some((n) => n.method === "process/closed"), 8000);
  r = await p.request("process/read", { processId: "many", afterSeq: 0 });
  const all = r.result.chunks.map((x) => unb64(x.chunk)).join("");
  c("read replays everything", all === "line1\nline2\nline3\nline4\nline5\n", JSON.stringify(all));
  const first = r.result.chunks[0].seq;
  r = await p.request("process/read", { processId: "many", afterSeq: first, maxBytes: 1 });
  c("maxBytes 1 returns one whole chunk", r.result.chunks.length === 1 && r.result.chunks[0].seq > first, JSON.stringify(r.result));
  c("nextSeq after a cut", r.result.nextSeq === r.result.chunks[0].seq + 1, JSON.stringify(r.result));
  r = await p.request("process/read", { processId: "many", afterSeq: r.result.nextSeq - 1 });
  const rest = r.result.chunks.map((x) => unb64(x.chunk)).join("");
  c("reading from nextSeq-1 returns exactly the rest", all.endsWith(rest) && rest.length > 0 && r.result.closed === true, JSON.stringify(rest));

  // writeId dedupe
  r = await p.request("process/start", { processId: "cat", argv: ["/bin/cat"], cwd: "file:///tmp", env: {}, pipeStdin: true });
  const w1 = await p.request("process/write", { processId: "cat", chunk: b64("once\n"), writeId: "w-1" });
  const w2 = await p.request("process/write", { processId: "cat", chunk: b64("once\n"), writeId: "w-1" });
  c("write accepted, repeat deduped", w1.result?.status === "accepted" && w2.result?.status === "accepted", JSON.stringify([w1, w2]));
  await p.until(() => p.outputOf("cat").includes("once"), 5000);
  await sleep(200);
  c("a repeated writeId writes nothing", p.outputOf("cat") === "once\n", JSON.stringify(p.outputOf("cat")));

  // a long-poll read while another request returns at once
  const t0 = Date.now();
  const longPoll = p.request("process/read", { processId: "cat", afterSeq: 1000, waitMs: 1500 }, 5000);
  const quick = await p.request("environment/status", {});
  const quickMs = Date.now() - t0;
  c("another request returns during a long poll", quick.result?.status === "ready" && quickMs < 1000, `${quickMs} ms`);
  const lp = await longPoll;
  c("the long poll returns at its deadline", Date.now() - t0 >= 1400 && Array.isArray(lp.result?.chunks), `${Date.now() - t0} ms`);

  // bad input keeps the connection working
  p.send("{not json");
  await p.until(() => (p.orphans ?? []).some((m) => m.error?.code === -32600), 3000);
  c("malformed JSON: an error reply", (p.orphans ?? []).some((m) => m.error?.code === -32600 && m.id === -1), JSON.stringify(p.orphans));
  r = await p.request("no/such/method", {});
  c("unknown method: -32601", r.error?.code === -32601, JSON.stringify(r));
  r = await p.request("process/start", { processId: 7, argv: "nope" });
  c("wrong param types: -32602", r.error?.code === -32602, JSON.stringify(r));
  r = await p.request("process/read", { processId: "ghost" });
  c("unknown processId: -32600 with reason", r.error?.code === -32600 && r.error?.data?.reason === "neverExisted", JSON.stringify(r));
  await p.request("process/closeStdin", { processId: "cat" });
  await p.until(() => p.eventsOf("cat").some((n) => n.method === "process/exited"), 5000);
  r = await p.request("process/write", { processId: "cat", chunk: b64("x"), writeId: "w-2" });
  c("write to a closed stdin: stdinClosed", r.result?.status === "stdinClosed", JSON.stringify(r));
  r = await p.request("process/write", { processId: "cat", chunk: "%%%" });
  c("bad base64: -32602", r.error?.code === -32602, JSON.stringify(r));
  r = await p.request("process/resize", { processId: "many", rows: 10, cols: 10 });
  c("resize of a pipe process: notTty", r.error?.data?.kind === "notTty", JSON.stringify(r));
  r = await p.request("environment/status", {});
  c("still serving", r.result?.status === "ready", JSON.stringify(r));

  // The rest of the method table: info, signal, terminate, resize, list, wait, unsubscribe, exec/*.
  r = await p.request("environment/info", {});
  c("environment/info", r.result?.platformOs === "linux" && r.result?.cwd?.startsWith("file://"), JSON.stringify(r).slice(0, 200));
  r = await p.request("process/start", { processId: "sh", argv: ["/bin/sh", "-c", "trap 'echo got-int' INT; echo ready; while :; do sleep 0.05; done"], cwd: "file:///tmp", env: { PATH: "/usr/bin:/bin" } });
  await p.until(() => p.outputOf("sh").includes("ready"), 5000);
  const waitP = p.request("process/wait", { processId: "sh", until: { regex: "got-int" }, timeoutMs: 5000 }, 8000);
  await sleep(100);
  const sig = await p.request("process/signal", { processId: "sh", signal: "interrupt" });
  c("process/signal interrupt", sig.result?.delivered === true, JSON.stringify(sig));
  const waited = await waitP;
  c("process/wait until regex", waited.result?.fired === "regex" && waited.result?.match?.text === "got-int", JSON.stringify(waited));
  r = await p.request("process/list", {});
  c("process/list", r.result?.processes?.some((x) => x.processId === "sh" && x.state === "running"), JSON.stringify(r).slice(0, 200));
  r = await p.request("process/unsubscribe", { processId: "sh" });
  c("process/unsubscribe", r.result?.subscribed === false, JSON.stringify(r));
  r = await p.request("process/subscribe", { processId: "sh" });
  c("process/subscribe (live from now)", r.result?.subscribed === true && r.result?.nextSeq > 1, JSON.stringify(r));
  r = await p.request("process/terminate", { processId: "sh", graceMs: 200 });
  c("process/terminate of a running process", r.result?.running === true, JSON.stringify(r));
  r = await p.request("process/wait", { processId: "sh", timeoutMs: 5000 }, 8000);
  c("process/wait until exit", r.result?.fired === "exit" && r.result?.exited === true, JSON.stringify(r));
  r = await p.request("process/terminate", { processId: "sh" });
  c("process/terminate after the exit", r.result?.running === false, JSON.stringify(r));
  r = await p.request("process/start", { processId: "tty", argv: ["/bin/sh", "-c", "read x; stty size"], cwd: "file:///tmp", env: { PATH: "/usr/bin:/bin" }, tty: true, size: { rows: 30, cols: 90 } });
  r = await p.request("process/resize", { processId: "tty", rows: 40, cols: 100 });
  c("process/resize", r.result !== undefined, JSON.stringify(r));
  await p.request("process/write", { processId: "tty", chunk: b64("\n"), writeId: "t1" });
  await p.until(() => p.outputOf("tty").includes("40 100"), 5000);
  c("the resize reaches the child", p.outputOf("tty").includes("40 100"), JSON.stringify(p.outputOf("tty")));
  r = await p.request("process/snapshot", { processId: "tty" });
  c("process/snapshot: the screen at the new size", r.result?.rows === 40 && r.result?.cols === 100 &&
    r.result?.lines?.includes("40 100") && r.result?.seq > 0, JSON.stringify(r).slice(0, 300));
  r = await p.request("exec/command", { cmd: "echo via-exec", login: false });
  c("exec/command", r.result?.structuredContent?.output === "via-exec\n" && r.result?.isError === false, JSON.stringify(r).slice(0, 300));
  r = await p.request("exec/command", { cmd: "printf 'a\\303'; sleep 0.3; printf '\\251b'", login: false, _meta: { progressToken: "tok-1" } });
  const deltas = p.notes.filter((n) => n.method === "exec/outputDelta" && n.params.progressToken === "tok-1");
  c("exec/command with _meta.progressToken streams exec/outputDelta, a character split across reads whole",
    r.result?.structuredContent?.output === "a\u00e9b" && deltas.map((d) => d.params.delta).join("") === "a\u00e9b" &&
    deltas.length >= 2 && deltas.every((d, i) => d.params.index === i), JSON.stringify(deltas).slice(0, 400));
  r = await p.request("exec/writeStdin", { session_id: 99999, chars: "x" });
  c("exec/writeStdin: a tool error is an isError result", r.result?.isError === true, JSON.stringify(r).slice(0, 300));
  r = await p.request("exec/listSessions", {});
  c("exec/listSessions", typeof r.result?.content?.[0]?.text === "string", JSON.stringify(r).slice(0, 200));
}

// process/start's sandbox member: uexec's short form and Codex's shape, denials, refusals.
async function sandbox(label, p) {
  const c = (n, ok, d) => check(`[${label}] sandbox: ${n}`, ok, d);
  const ws = fs.mkdtempSync("/var/tmp/uexec-proto-sbx-");
  const cwd = "file://" + ws, env = { PATH: "/usr/bin:/bin" };
  const exitedOf = async (id) => {
    await p.until(() => p.eventsOf(id).some((n) => n.method === "process/exited"), 8000);
    return p.eventsOf(id).find((n) => n.method === "process/exited")?.params;
  };
  let r = await p.request("environment/info", {});
  const init = p.initResult ?? {};
  // Short form: a write outside the workspace is denied and classified.
  r = await p.request("process/start", { processId: "sbx1", argv: ["/bin/sh", "-c", "echo kind=$UEXEC_SANDBOX; touch /etc/uexec-proto-x"], cwd, env, sandbox: { mode: "workspace-write" } });
  c("short form starts sandboxed", r.result?.sandboxType === "linuxSeccomp" && r.result?.uexecSandbox === "linux-ns", JSON.stringify(r));
  let ex = await exitedOf("sbx1");
  c("a denied write: sandboxDenied with the predicate's denial", ex?.sandboxDenied === true && ex?.denial?.mechanism === "keyword", JSON.stringify(ex));
  c("the env marker", p.outputOf("sbx1").includes("kind=linux-ns"), JSON.stringify(p.outputOf("sbx1")));
  c("nothing was written", !fs.existsSync("/etc/uexec-proto-x"));
  // Codex's shape: :root read, :cwd write, network restricted; seccomp records come back.
  const managed = { permissions: { type: "managed", network: "restricted", file_system: { type: "restricted", entries: [
    { path: { type: "special", value: { kind: "root" } }, access: "read" },
    { path: { type: "special", value: { kind: "current_working_directory" } }, access: "write" }] } } };
  r = await p.request("process/start", { processId: "sbx2", argv: ["/bin/sh", "-c", "echo ok > inside; unshare -U true"], cwd, env, sandbox: managed });
  c("Codex shape starts sandboxed", r.result?.sandboxType === "linuxSeccomp", JSON.stringify(r));
  ex = await exitedOf("sbx2");
  c("seccomp records as sandboxDenials, the executor's denial wins", ex?.sandboxDenied === true && ex?.denial?.source === "executor" &&
    ex?.sandboxDenials?.some((d) => d.source === "seccomp" && d.kind === "namespace"), JSON.stringify(ex));
  c("the cwd was writable", fs.readFileSync(path.join(ws, "inside"), "utf8") === "ok\n");
  r = await p.request("process/read", { processId: "sbx2" });
  c("process/read carries the records too", Array.isArray(r.result?.sandboxDenials) && r.result.sandboxDenials.length === 1, JSON.stringify(r.result?.sandboxDenials));
  r = await p.request("process/list", {});
  c("process/list shows the backend", r.result?.processes?.some((x) => x.processId === "sbx2" && x.sandbox?.backend === "linux-ns"), JSON.stringify(r).slice(0, 300));
  // disabled: runs as asked, and says so.
  r = await p.request("process/start", { processId: "sbx3", argv: ["/bin/true"], cwd, env, sandbox: { permissions: { type: "disabled" } } });
  c("disabled: sandboxType none", r.result?.sandboxType === "none", JSON.stringify(r));
  // Refusals: never weakened, never a crash.
  r = await p.request("process/start", { processId: "sbx4", argv: ["/bin/true"], cwd, env, sandbox: { mode: "read-only", permissions: { type: "managed" } } });
  c("mode and permissions together: -32602", r.error?.code === -32602, JSON.stringify(r));
  r = await p.request("process/start", { processId: "sbx4b", argv: ["/bin/true"], cwd, env, sandbox: { permissions: { type: "managed" }, denyRead: ["secrets/*.pem"] } });
  c("denyRead beside permissions: -32602, never dropped", r.error?.code === -32602 && /denyRead/.test(r.error?.message), JSON.stringify(r));
  r = await p.request("process/start", { processId: "sbx5", argv: ["/bin/true"], cwd, env, sandbox: { mode: "workspace-write", backend: "seatbelt" } });
  c("seatbelt on Linux: sandboxUnavailable", r.error?.code === -32603 && r.error?.data?.kind === "sandboxUnavailable" && r.error?.data?.reason === "SeatbeltUnavailable", JSON.stringify(r));
  r = await p.request("process/start", { processId: "sbx6", argv: ["/bin/true"], cwd, env, sandbox: { permissions: { type: "managed", file_system: { type: "restricted", entries: [] } } } });
  c("a restricted read set: refused, not weakened", r.error?.data?.kind === "sandboxUnavailable", JSON.stringify(r));
  r = await p.request("process/start", { processId: "sbx7", argv: ["/bin/true"], cwd, env, sandbox: { mode: "sideways" } });
  c("an unknown mode: -32602", r.error?.code === -32602, JSON.stringify(r));
  r = await p.request("environment/status", {});
  c("still serving", r.result?.status === "ready", JSON.stringify(r));
  fs.rmSync(ws, { recursive: true, force: true });
}

async function oversize(label, p) {
  p.send("x".repeat(17 * 1024 * 1024));
  const ok = await p.until(() => (p.orphans ?? []).some((m) => m.error?.data?.kind === "messageTooLarge"), 15000);
  check(`[${label}] oversize message: messageTooLarge`, ok, JSON.stringify(p.orphans ?? []).slice(0, 300));
  const r = await p.request("environment/status", {});
  check(`[${label}] still serving after an oversize message`, r.result?.status === "ready");
}

// ---- daemon checks: two clients, a slow one, disconnect and resume ----------------------------
async function daemon(label, open) {
  const c = (n, ok, d) => check(`[${label}] ${n}`, ok, d);
  const a = await open();
  const initA = await a.init({ detachedTtlMs: 60000 });
  const sid = initA.result.sessionId;
  await a.request("process/start", { processId: "flood", argv: ["/bin/sh", "-c", "i=0; while [ $i -lt 3000 ]; do echo line-$i; i=$((i+1)); done; sleep 0.5"], cwd: "file:///tmp", env: { PATH: "/usr/bin:/bin" }, tty: false });
  const b = await open();
  await b.init();
  const sub = await b.request("process/subscribe", { processId: "flood", sessionId: sid, afterSeq: 0 });
  c("a second client subscribes to another session's process", sub.result?.subscribed === true, JSON.stringify(sub));
  // A third client subscribes and never reads: it must not block the others or the child.
  const slow = await open();
  await slow.init();
  if (slow.sock) slow.sock.pause();
  if (slow.ws) slow.ws._socket?.pause();
  await slow.request("process/subscribe", { processId: "flood", sessionId: sid, afterSeq: 0 }).catch(() => {});
  const done = (p) => p.eventsOf("flood").some((n) => n.method === "process/closed");
  await a.until(() => done(a), 15000);
  await b.until(() => done(b), 15000);
  const want = Array.from({ length: 3000 }, (_, i) => `line-${i}\n`).join("");
  c("the owner gets every byte", a.outputOf("flood") === want, `${a.outputOf("flood").length} vs ${want.length}`);
  const gap = b.notes.some((n) => n.method === "process/gap");
  c("the second client gets every byte or an explicit gap", b.outputOf("flood") === want || gap, `${b.outputOf("flood").length}`);
  c("a slow client blocks neither the others nor the child", done(a) && done(b));
  await slow.close();
  // A viewer that falls far behind (past the 4 MiB high watermark) and then reads again
  // catches up to the end, gaps allowed, `closed` included, although the process belongs to
  // another session.
  const lag = await open();
  await lag.init({ capabilities: { extensions: true } });
  await a.request("process/start", { processId: "big", argv: ["/bin/sh", "-c", "read x; yes 0123456789012345678901234567890123456789012345678901234567890123456789 | head -n 150000"], cwd: "file:///tmp", env: { PATH: "/usr/bin:/bin" }, tty: false, pipeStdin: true });
  await lag.request("process/subscribe", { processId: "big", sessionId: sid, afterSeq: 0 });
  if (lag.sock) lag.sock.pause();
  if (lag.ws) lag.ws._socket?.pause();
  await a.request("process/write", { processId: "big", chunk: b64("go\n") });
  await a.until(() => a.eventsOf("big").some((n) => n.method === "process/closed"), 30000);
  await sleep(300);
  if (lag.sock) lag.sock.resume();
  if (lag.ws) lag.ws._socket?.resume();
  const caught = await lag.until(() => lag.eventsOf("big").some((n) => n.method === "process/closed"), 20000);
  c("a viewer far behind that reads again gets the rest and closed", caught,
    `${lag.eventsOf("big").length} events, last seq ${lag.eventsOf("big").at(-1)?.params?.seq}`);
  await lag.close();

  // Disconnect mid-stream: the process keeps running; resume the session and read.
  await a.request("process/start", { processId: "ticker", argv: ["/bin/sh", "-c", "while :; do echo tick; sleep 0.05; done"], cwd: "file:///tmp", env: { PATH: "/usr/bin:/bin" } });
  await sleep(200);
  await a.close();
  await sleep(300);
  const list = await b.request("process/list", { all: true });
  const t = list.result.processes.find((x) => x.sessionId === sid && x.processId === "ticker");
  c("a disconnected client's process keeps running", t?.state === "running", JSON.stringify(t));
  const a2 = await open();
  const res = await a2.request("initialize", { clientName: "protocol-test", resumeSessionId: sid });
  a2.send({ jsonrpc: "2.0", method: "initialized" });
  c("resume within the TTL", res.result?.resumed === true, JSON.stringify(res).slice(0, 200));
  const rd = await a2.request("process/read", { processId: "ticker", afterSeq: 0 });
  c("output retained across the disconnect", rd.result.chunks.map((x) => unb64(x.chunk)).join("").includes("tick"));
  await a2.request("process/terminate", { processId: "ticker", graceMs: 0 });
  await a2.close();
  await b.close();
}

// ---- the screen model and roles: snapshot + live tail, viewers, grants, view "screen" --------
async function screenAndRoles(label, open) {
  const c = (n, ok, d) => check(`[${label}] ${n}`, ok, d);
  const a = await open();
  const sid = (await a.init({ detachedTtlMs: 60000 })).result.sessionId;
  await a.request("process/start", { processId: "tui", argv: ["/bin/sh", "-c", "printf 'first\\n\\033]2;the-title\\007\\033[?1049h\\033[Hin-alt\\033[3;5Hxy'; exec cat"], cwd: "file:///tmp", env: { PATH: "/usr/bin:/bin" }, tty: true, size: { rows: 10, cols: 40 } });
  await a.until(() => a.outputOf("tui").includes("xy"));
  const b = await open();
  const sidB = (await b.init({ clientName: "viewer-test" })).result.sessionId;
  const snap = await b.request("process/snapshot", { processId: "tui", sessionId: sid, format: "ansi" });
  const r = snap.result ?? {};
  c("snapshot: the screen, cursor, alternate screen and title", r.rows === 10 && r.cols === 40 && r.lines?.[0] === "in-alt" &&
    r.lines?.[2] === "    xy" && r.cursor?.row === 2 && r.cursor?.col === 6 && r.altScreen === true && r.title === "the-title" &&
    r.exact === true && r.lines.length === 10, JSON.stringify(snap).slice(0, 400));
  c("snapshot: ansi repaints the alternate screen", typeof r.ansi === "string" && r.ansi.includes("\u001b[?1049h") && r.ansi.includes("in-alt"));
  const sub = await b.request("process/subscribe", { processId: "tui", sessionId: sid, afterSeq: r.seq, role: "viewer" });
  c("a viewer subscribes from the snapshot's seq", sub.result?.subscribed === true, JSON.stringify(sub));
  await a.request("process/write", { processId: "tui", chunk: b64("typed\r") });
  await b.until(() => b.outputOf("tui").includes("typed\r\ntyped\r\n"));
  c("snapshot + live tail: no gap, no duplicate", b.outputOf("tui") === "typed\r\ntyped\r\n", JSON.stringify(b.outputOf("tui")));
  const w = await b.request("process/write", { processId: "tui", sessionId: sid, chunk: b64("nope\r") });
  c("a viewer may not write", w.error?.data?.kind === "readOnly", JSON.stringify(w));
  const rz = await b.request("process/resize", { processId: "tui", sessionId: sid, rows: 5, cols: 5 });
  c("a viewer may not resize", rz.error?.data?.kind === "readOnly", JSON.stringify(rz));
  const kill = await b.request("process/terminate", { processId: "tui", sessionId: sid });
  c("a viewer may not terminate", kill.error?.data?.kind === "readOnly", JSON.stringify(kill));
  const own = await b.request("process/subscribe", { processId: "tui", sessionId: sid, role: "owner" });
  c("a viewer cannot claim to be the owner", own.error?.data?.kind === "readOnly", JSON.stringify(own));
  const list = await a.request("process/list", {});
  const e = list.result.processes.find((x) => x.processId === "tui");
  c("list: the viewers and the caller's role", e?.role === "owner" && e?.viewers?.length === 1 && e.viewers[0].sessionId === sidB &&
    e.viewers[0].input === false && e.outputBytes > 0, JSON.stringify(e));
  const g1 = await b.request("process/grant", { processId: "tui", sessionId: sid, grantee: sidB, input: true });
  c("only the owner grants input", g1.error?.data?.kind === "readOnly", JSON.stringify(g1));
  const g2 = await a.request("process/grant", { processId: "tui", grantee: sidB, input: true });
  c("the owner grants a viewer input", g2.result && !g2.error, JSON.stringify(g2));
  const w2 = await b.request("process/write", { processId: "tui", sessionId: sid, chunk: b64("granted\r") });
  c("a viewer with input writes", w2.result?.status === "accepted", JSON.stringify(w2));
  await a.until(() => a.outputOf("tui").includes("granted\r\n"));
  const g3 = await a.request("process/grant", { processId: "tui", grantee: "no-such-session", input: true });
  c("granting to a non-viewer is an error", g3.error?.data?.kind === "notViewer", JSON.stringify(g3));
  await a.request("process/resize", { processId: "tui", rows: 6, cols: 30 });
  const snap2 = await a.request("process/snapshot", { processId: "tui" });
  c("the model follows a resize", snap2.result?.rows === 6 && snap2.result?.cols === 30 && snap2.result?.ansi === undefined, JSON.stringify(snap2).slice(0, 200));
  const bad = await a.request("process/snapshot", { processId: "tui", format: "png" });
  c("snapshot: a bad format", bad.error?.code === -32602, JSON.stringify(bad));
  await a.request("process/start", { processId: "pipe", argv: ["/bin/true"], cwd: "file:///tmp", env: {} });
  const np = await a.request("process/snapshot", { processId: "pipe" });
  c("snapshot of a pipe process: notTty", np.error?.data?.kind === "notTty", JSON.stringify(np));
  // The agent view: exec/command and exec/readOutput with view "screen".
  // login: false: a login shell reads the profiles, 0.7 s on this machine kind (pyenv), more under MALLOC_PERTURB_.
  const ex = await a.request("exec/command", { cmd: "printf '\\033[?1049h\\033[HSCREEN-VIEW\\033[2;1Hrow-two'; sleep 3", tty: true, view: "screen", yield_time_ms: 800, login: false });
  const sc = ex.result?.structuredContent;
  c("exec/command view screen: the screen as text", sc?.output === "SCREEN-VIEW\nrow-two" && sc?.screen?.alt_screen === true &&
    ex.result.content[0].text.includes("Screen: 24x80"), JSON.stringify(ex).slice(0, 500));
  const ro = await a.request("exec/readOutput", { session_id: sc?.session_id, view: "screen" });
  c("exec/readOutput view screen", ro.result?.structuredContent?.output === "SCREEN-VIEW\nrow-two", JSON.stringify(ro).slice(0, 300));
  const ex2 = await a.request("exec/command", { cmd: "echo hi", view: "screen" });
  c("view screen without a tty is a tool error", ex2.result?.isError === true && /tty/.test(ex2.result.content[0].text), JSON.stringify(ex2));
  await a.request("exec/killSession", { session_id: sc?.session_id, grace_ms: 0 });
  await a.request("process/terminate", { processId: "tui", graceMs: 0 });
  await b.close();
  await a.close();
}

// ---- run ----------------------------------------------------------------------------------
const tmp = fs.mkdtempSync("/var/tmp/uexec-proto-")  // not under /tmp: a token there refuses other suites' Landlock+network sandboxes;
fs.chmodSync(tmp, 0o700);

// stdio
{
  const p = new StdioPeer();
  await common("stdio", p);
  await sandbox("stdio", p);
  await oversize("stdio", p);
  await p.close();
}

// uexec serve: Unix socket and WebSocket
const sock = path.join(tmp, "uexec.sock");
const serve = spawn(uexec, ["serve", "--socket", sock, "--ws", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
let serveErr = "";
serve.stderr.on("data", (d) => { serveErr += d; });
for (let i = 0; i < 100 && !/ws:\/\/127\.0\.0\.1:(\d+)/.test(serveErr); i++) await sleep(50);
const wsPort = Number(serveErr.match(/ws:\/\/127\.0\.0\.1:(\d+)/)?.[1]);
const token = fs.readFileSync(path.join(tmp, "token"), "utf8");
check("serve listens on WebSocket", wsPort > 0, serveErr);
{
  const p = new UnixPeer(sock);
  await p.open();
  await common("unix", p);
  await p.close();
  await daemon("unix", async () => { const q = new UnixPeer(sock); await q.open(); return q; });
}
{
  const url = `ws://127.0.0.1:${wsPort}/`;
  const noToken = new WsPeer(url, "");
  check("[ws] an upgrade without the token is refused with 401", !(await noToken.open()) && noToken.status === 401, String(noToken.status));
  const badOrigin = new WsPeer(url, token, { ws: { origin: "http://evil.example" } });
  check("[ws] a foreign Origin is refused with 403", !(await badOrigin.open()) && badOrigin.status === 403, String(badOrigin.status));
  const viaProto = new WsPeer(url, "", { protocols: ["uexec.v1", `uexec.auth.${token}`] });
  check("[ws] the token as a browser subprotocol", await viaProto.open());
  check("[ws] the server selects uexec.v1", viaProto.ws.protocol === "uexec.v1", viaProto.ws.protocol);
  await viaProto.close();
  const p = new WsPeer(url, token);
  check("[ws] open with the token", await p.open());
  await common("ws", p);
  p.ws.send(Buffer.from([1, 2, 3]), { binary: true });
  await p.until(() => (p.orphans ?? []).filter((m) => m.error).length >= 2, 3000);
  const r = await p.request("environment/status", {});
  check("[ws] a binary message is refused and the connection stays open", r.result?.status === "ready");
  await p.close();
  await daemon("ws", async () => { const q = new WsPeer(url, token); await q.open(); return q; });
  await screenAndRoles("ws", async () => { const q = new WsPeer(url, token); await q.open(); return q; });
}
serve.kill("SIGTERM");
const code = await Promise.race([once(serve, "exit").then(([c]) => c), sleep(10000).then(() => "timeout")]);
check("serve exits 0 on SIGTERM", code === 0, String(code));

// exec-server --listen ws://
{
  const es = spawn(uexec, ["exec-server", "--listen", "ws://127.0.0.1:0"], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  es.stdout.on("data", (d) => { out += d; });
  for (let i = 0; i < 100 && !out.includes("\n"); i++) await sleep(50);
  const p = new WsPeer(out.trim() + "/", "");
  check("[exec-server ws] prints its URL and accepts a connection", await p.open(), out);
  await common("exec-server ws", p);
  await p.close();
  es.kill("SIGTERM");
  await once(es, "exit");
}

fs.rmSync(tmp, { recursive: true, force: true });
finish("protocol");
