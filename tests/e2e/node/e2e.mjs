// e2e.mjs UEXEC: drives `uexec mcp` with the official MCP TypeScript SDK client, as an
// agent host would, and speaks raw JSON-RPC to it for what the SDK cannot send (bad JSON).
import { execSync, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { check, checkCancelled, text, finish } from "./harness.mjs";

const uexec = process.argv[2];

// --- through the SDK ---------------------------------------------------------------------
const transport = new StdioClientTransport({ command: uexec, args: ["mcp", "--structured-content"], stderr: "inherit" });
const client = new Client({ name: "uexec-e2e", version: "1.0.0" });
await client.connect(transport);  // initialize + notifications/initialized
check("server info", client.getServerVersion()?.name === "uexec");

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check("tools/list", JSON.stringify(names) ===
  JSON.stringify(["exec_command", "kill_session", "list_sessions", "read_output", "write_stdin"]), names.join(","));
const exec = tools.find((t) => t.name === "exec_command");
check("exec_command schema", exec.inputSchema.required?.includes("cmd") && exec.inputSchema.additionalProperties === false);
check("with --structured-content every tool declares an outputSchema (the SDK checks results against it)",
  tools.every((t) => t.outputSchema?.type === "object"), JSON.stringify(tools.filter((t) => !t.outputSchema).map((t) => t.name)));
check("max_output_tokens' default is the server's (9500)", exec.inputSchema.properties.max_output_tokens?.default === 9500,
  JSON.stringify(exec.inputSchema.properties.max_output_tokens));
check("every property has a description",
  tools.every((t) => Object.values(t.inputSchema.properties).every((p) => typeof p.description === "string")));

// session_id or name (issue 20): the schema does not require session_id, whose absence
// beside a name is fine; the outputSchema says why session and session_id differ.
for (const n of ["write_stdin", "kill_session", "read_output"]) {
  const t = tools.find((x) => x.name === n);
  check(`${n}: session_id is not required (name works too)`, !(t.inputSchema.required ?? []).includes("session_id"),
    JSON.stringify(t.inputSchema.required));
  const out = t.outputSchema?.properties ?? {};
  check(`${n}: outputSchema describes session and session_id`,
    typeof out.session?.description === "string" && typeof out.session_id?.description === "string", JSON.stringify(out));
}

// An interactive shell on a tty keeps its state across writes.
let r = await client.callTool({ name: "exec_command",
  arguments: { cmd: "PS1='$ ' exec bash --norc --noprofile -i", tty: true, yield_time_ms: 3000, login: false } });
const sid = r.structuredContent?.session_id;
check("bash -i runs with a session id", Number.isInteger(sid) && sid >= 1000 && sid < 100000, text(r));
check("bash -i envelope", /^Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\nProcess running with session ID \d+\n/.test(text(r)), text(r));
r = await client.callTool({ name: "write_stdin", arguments: { session_id: sid, chars: "export X=1\n" } });
check("write export", !r.isError, text(r));
r = await client.callTool({ name: "write_stdin", arguments: { session_id: sid, chars: "echo $X\n" } });
check("echo $X sees 1", /\r?\n1\r?\n/.test(r.structuredContent?.output ?? ""), JSON.stringify(r.structuredContent?.output));

// A command that exits within the yield: exit_code, no session id.
r = await client.callTool({ name: "exec_command", arguments: { cmd: "echo quick", login: false } });
check("quick exit: exit_code 0", r.structuredContent?.exit_code === 0, text(r));
check("quick exit: no session id", r.structuredContent?.session_id === null && !text(r).includes("session ID"), text(r));
check("quick exit: text", text(r).includes("Process exited with code 0\n") && text(r).endsWith("Output:\nquick\n"), text(r));

// Progress (docs/protocol.md §6): with onprogress the SDK sends a progressToken, and while the
// call waits notifications/progress carry the newest line of output, at most one per 250 ms.
const deltas = [];
// The trailing sleep: the SDK drops a progress notification that it handles after the reply
// (it removes the handler when the response arrives), so the last piece must come earlier.
r = await client.callTool({ name: "exec_command", arguments: { cmd: "echo first; sleep 0.4; echo second; sleep 0.5", login: false, yield_time_ms: 10000 } },
  undefined, { onprogress: (p) => deltas.push(p) });
for (let i = 0; i < 50 && deltas.length < 2; i++) await new Promise((res) => setTimeout(res, 20));
check("progress: the call still returns the whole output", r.structuredContent?.output === "first\nsecond\n", text(r));
check("progress: the newest line arrives, in order", deltas.length === 2 && deltas[0].message === "first" &&
  deltas[1].message === "second" && deltas.every((d, i) => d.progress === i + 1), JSON.stringify(deltas));
const flood = [];
const floodStart = Date.now();
r = await client.callTool({ name: "exec_command", arguments: { cmd: "for i in $(seq 1 30); do seq 1 20000; sleep 0.05; done; sleep 0.3", login: false, yield_time_ms: 20000 } },
  undefined, { onprogress: (p) => flood.push(p) });
const floodMs = Date.now() - floodStart;  // at most one notification per 250 ms of it, however slow the machine
check("progress of a flood: short lines at most every 250 ms, not the output (3.3 MB)",
  flood.length >= 1 && flood.length <= Math.floor(floodMs / 250) + 1 &&
  flood.every((p) => p.message.length <= 200 && !p.message.includes("\n")),
  `${flood.length} notifications in ${floodMs} ms: ${JSON.stringify(flood.slice(0, 3))}`);

await checkCancelled("mcp", client, transport);

// Neither session_id nor name: one clear error.
r = await client.callTool({ name: "write_stdin", arguments: { chars: "x" } });
check("write_stdin without a session: says what is needed",
  r.isError === true && text(r) === "write_stdin failed: session_id or name is required", text(r));

// An empty poll waits at least 5 s (Codex's rule): a smaller yield_time_ms is raised, and said.
r = await client.callTool({ name: "exec_command", arguments: { cmd: "sleep 30", login: false, yield_time_ms: 250 } });
const sleeper = r.structuredContent?.session_id;
r = await client.callTool({ name: "write_stdin", arguments: { session_id: sleeper, yield_time_ms: 1000 } });
check("empty poll with yield_time_ms 1000: a note says it was raised to 5000",
  (r.structuredContent?.warnings ?? []).some((w) => w.includes("waits at least 5000 ms") && w.includes("yield_time_ms 1000 was raised")),
  JSON.stringify(r.structuredContent));
await client.callTool({ name: "kill_session", arguments: { session_id: sleeper, signal: "kill" } });

// A bad session id: a tool error with the tombstone reason.
r = await client.callTool({ name: "write_stdin", arguments: { session_id: 99999, chars: "x" } });
check("bad id is an isError result", r.isError === true, JSON.stringify(r));
check("bad id says why", text(r) === "write_stdin failed: Unknown process id 99999 (no session with this id was started by this manager)", text(r));

// list, read_output, kill.
r = await client.callTool({ name: "list_sessions", arguments: {} });
check("list_sessions shows bash", text(r).includes(String(sid)), text(r));
r = await client.callTool({ name: "read_output", arguments: { session_id: sid, grep: "^1\\s*$" } });
check("read_output grep", /L\d+@\d+: 1/.test(text(r)), text(r));
r = await client.callTool({ name: "kill_session", arguments: { session_id: sid } });
check("kill_session reports the end", text(r).includes("Process exited with code") && text(r).includes("sent by kill_session"), text(r));
r = await client.callTool({ name: "write_stdin", arguments: { session_id: sid, chars: "x" } });
check("killed id answers with its tombstone", r.isError && text(r).includes("killed by kill_session"), text(r));

// Bad arguments are tool errors; an unknown tool is a protocol error.
r = await client.callTool({ name: "exec_command", arguments: { cmd: "true", bogus: 1 } });
check("unknown parameter refused", r.isError && text(r).includes("unknown parameter `bogus`"), text(r));
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
  check("unknown tool is a JSON-RPC error", false);
} catch (e) {
  check("unknown tool is a JSON-RPC error", String(e).includes("-32602"), String(e));
}
await client.close();

// --- raw JSON-RPC: malformed input keeps the server serving --------------------------------
const child = spawn(uexec, ["mcp", "--structured-content"], { stdio: ["pipe", "pipe", "inherit"] });
const lines = createInterface({ input: child.stdout });
const queue = [];
let waiter = null;
lines.on("line", (l) => { if (waiter) { const w = waiter; waiter = null; w(l); } else queue.push(l); });
const next = () => new Promise((res, rej) => {
  if (queue.length) return res(queue.shift());
  waiter = res;
  setTimeout(() => rej(new Error("no reply")), 10000);
});
const send = (o) => child.stdin.write((typeof o === "string" ? o : JSON.stringify(o)) + "\n");

send("{this is not json");
let m = JSON.parse(await next());
check("malformed JSON: -32700 with id null", m.error?.code === -32700 && m.id === null, JSON.stringify(m));
send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
m = JSON.parse(await next());
check("a request before initialize: -32600", m.error?.code === -32600 && m.id === 1, JSON.stringify(m));
send({ jsonrpc: "2.0", id: 11, method: "server/discover" });
m = JSON.parse(await next());
check("an unknown method before initialize: -32601", m.error?.code === -32601 && m.id === 11, JSON.stringify(m));
send({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: "2024-11-05", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
m = JSON.parse(await next());
check("an older version is echoed", m.result?.protocolVersion === "2024-11-05", JSON.stringify(m));
send([1, 2]);
m = JSON.parse(await next());
check("a batch is an invalid request", m.error?.code === -32600, JSON.stringify(m));
send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "exec_command", arguments: { cmd: "echo still-serving", login: false } } });
m = JSON.parse(await next());
check("still serving after bad input", m.result?.content?.[0]?.text?.includes("still-serving"), JSON.stringify(m));
check("2024-11-05 has no structuredContent", m.result && !("structuredContent" in m.result), JSON.stringify(m));
send({ jsonrpc: "2.0", id: 4, method: "ping" });
m = JSON.parse(await next());
check("ping", JSON.stringify(m.result) === "{}", JSON.stringify(m));
// A long-running session, then stdin EOF: the server ends its sessions and exits 0.
send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "exec_command", arguments: { cmd: "trap '' TERM HUP; sleep 312.5", yield_time_ms: 250, login: false } } });
m = JSON.parse(await next());
const pid_line = m.result?.structuredContent;
check("long session runs", m.result?.content?.[0]?.text?.includes("Process running"), JSON.stringify(m));
const exited = new Promise((res) => child.on("exit", (code) => res(code)));
child.stdin.end();
const code = await exited;
check("stdin EOF: exit 0", code === 0, String(code));
void pid_line;
let left = "";
try { left = execSync("pgrep -f '^sleep 312.5$' || true").toString().trim(); } catch { left = "?"; }
check("stdin EOF: no session process is left", left === "", left);

// Protocol revisions: 2025-11-25 (what current clients ask for) is echoed and carries
// structuredContent; a revision uexec does not know is answered with the newest it serves.
for (const [asked, answered] of [["2025-11-25", "2025-11-25"], ["2099-01-01", "2025-11-25"]]) {
  const c2 = spawn(uexec, ["mcp", "--structured-content"], { stdio: ["pipe", "pipe", "inherit"] });
  const l2 = createInterface({ input: c2.stdout });
  const replies = [];
  l2.on("line", (l) => replies.push(JSON.parse(l)));
  const reply = async (id) => {
    for (let i = 0; i < 200; i++) {
      const r = replies.find((x) => x.id === id);
      if (r) return r;
      await new Promise((res) => setTimeout(res, 50));
    }
    return null;
  };
  c2.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: "rev", version: "1" } } }) + "\n");
  const init = await reply(1);
  check(`initialize ${asked}: answered ${answered}`, init?.result?.protocolVersion === answered, JSON.stringify(init));
  c2.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  c2.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "exec_command", arguments: { cmd: "echo rev-ok", login: false } } }) + "\n");
  const call = await reply(2);
  check(`${asked}: structuredContent`, call?.result?.structuredContent?.output?.includes("rev-ok"), JSON.stringify(call));
  const gone = new Promise((res) => c2.on("exit", res));
  c2.stdin.end();
  await gone;
}

// `uexec mcp --sandbox workspace-write`: every exec_command runs in the sandbox; a denial is a
// normal result with a "Sandbox denied:" line; require_escalated is refused (policy never).
{
  const fs = await import("node:fs");
  const ws = fs.mkdtempSync("/var/tmp/uexec-mcp-sbx-");
  const t2 = new StdioClientTransport({ command: uexec, args: ["mcp", "--structured-content", "--sandbox", "workspace-write"], cwd: ws, stderr: "inherit" });
  const c2 = new Client({ name: "uexec-e2e-sandbox", version: "1.0.0" });
  await c2.connect(t2);
  let s = await c2.callTool({ name: "exec_command", arguments: { cmd: "echo kind=$UEXEC_SANDBOX; echo ok > here; touch /etc/uexec-mcp-x", login: false } });
  check("sandboxed exec_command: marker and workspace write", text(s).includes("kind=linux-ns") && fs.existsSync(ws + "/here"), text(s));
  check("sandboxed exec_command: the denial is reported, not an error", !s.isError && text(s).includes("Sandbox denied: ") &&
    s.structuredContent?.exit_code === 1, text(s));
  check("nothing written outside", !fs.existsSync("/etc/uexec-mcp-x"));
  // The model's workdir is where the command runs, not what the sandbox lets it write.
  const elsewhere = fs.mkdtempSync("/var/tmp/uexec-mcp-other-");
  s = await c2.callTool({ name: "exec_command", arguments: { cmd: "touch planted", workdir: elsewhere, login: false } });
  check("workdir outside the workspace stays read-only", !fs.existsSync(elsewhere + "/planted") && text(s).includes("Read-only file system"), text(s));
  fs.rmSync(elsewhere, { recursive: true, force: true });
  s = await c2.callTool({ name: "exec_command", arguments: { cmd: "true", sandbox_permissions: "require_escalated", justification: "test" } });
  check("require_escalated under policy never: a clear tool error", s.isError && text(s).includes("approval policy is never"), text(s));
  await c2.close();
  fs.rmSync(ws, { recursive: true, force: true });
}

finish("mcp-e2e");
