// mcp_approvals.mjs UEXEC: approvals over MCP (docs/sandbox.md §6.5), driven by the official MCP SDK
// client: `uexec mcp --sandbox workspace-write --approval on-failure` asks a client that declared
// `elicitation` with elicitation/create before the single retry without the sandbox, and its
// answer decides (approved, approved_for_session, decline/cancel/error = denied); a client
// without the capability is never asked, and the tool result says that approval was needed.
// The same through `uexec mcp --connect` to `uexec serve --approval on-failure`, where the
// daemon's approval/request is relayed as elicitation/create.
// Skips (exit 0, with the reason) where the namespaces sandbox cannot run.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { check, sleep, text, finish } from "./harness.mjs";

const uexec = process.argv[2];

const probe = spawnSync(uexec, ["sandbox", "--mode", "workspace-write", "--backend", "namespaces", "--", "true"]);
if (probe.status !== 0) {
  console.log(`mcp-approvals: skipped, the namespaces sandbox does not run here: ${probe.stderr.toString().trim()}`);
  process.exit(77);  // meson: skipped
}

// Outside the writable roots (the cwd /tmp and /tmp itself): the sandbox denies writing here.
const scratch = fs.mkdtempSync("/var/tmp/uexec-mcp-approvals-");
const sandboxArgs = ["--sandbox", "workspace-write", "--backend", "namespaces", "--approval", "on-failure"];
const writeCmdIn = (name) => ({ cmd: `echo hi > ${scratch}/${name} && echo wrote`, login: false, yield_time_ms: 10000 });
const existsIn = (name) => fs.existsSync(path.join(scratch, name));
const children = [];

// An SDK client of `uexec ARGS`; with `answer` it declares elicitation and answers each
// elicitation/create with answer(params) (which may throw); every request is kept in `asked`.
async function connect(args, answer) {
  const transport = new StdioClientTransport({ command: uexec, args, cwd: "/tmp", stderr: "inherit" });
  const client = new Client({ name: "mcp-approvals", version: "1.0.0" },
    answer ? { capabilities: { elicitation: {} } } : {});
  const asked = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return answer(req.params);
    });
  }
  await client.connect(transport);
  return { client, asked, transport };
}
const accept = (decision) => () => ({ action: "accept", content: { decision } });

// The cases both front doors must pass. `who` names them in the output.
async function cases(who, args) {
  const tag = who.replace(/[^a-z]/g, "");  // file names of their own in the shared scratch dir
  const writeCmd = (name) => writeCmdIn(`${tag}-${name}`);
  const exists = (name) => existsIn(`${tag}-${name}`);
  // approved: the retry runs without the sandbox.
  let answer = accept("approved");
  const a = await connect(args, (p) => answer(p));
  let r = await a.client.callTool({ name: "exec_command", arguments: writeCmd("approved") });
  check(`[${who}] one elicitation/create before the retry`, a.asked.length === 1, JSON.stringify(a.asked));
  const q = a.asked[0] ?? {};
  check(`[${who}] the question names the command and the cwd`, q.message?.includes(`echo hi > ${scratch}/${tag}-approved`) &&
    q.message?.includes("/tmp") && /without the sandbox/.test(q.message ?? ""), q.message);
  const d = q.requestedSchema?.properties?.decision;
  check(`[${who}] the schema: one enum property \`decision\``, q.requestedSchema?.type === "object" &&
    Object.keys(q.requestedSchema?.properties ?? {}).length === 1 && d?.type === "string" &&
    JSON.stringify(d?.enum) === JSON.stringify(["approved", "approved_for_session", "denied", "abort"]) &&
    JSON.stringify(q.requestedSchema?.required) === JSON.stringify(["decision"]), JSON.stringify(q.requestedSchema));
  check(`[${who}] approved: the retry ran without the sandbox`, exists("approved") && !r.isError &&
    text(r).includes("retried without the sandbox") && r.structuredContent?.exit_code === 0, text(r));

  // decline: denied; nothing written, the result says it was not approved.
  a.asked.length = 0;
  answer = () => ({ action: "decline" });
  r = await a.client.callTool({ name: "exec_command", arguments: writeCmd("declined") });
  check(`[${who}] decline counts as denied`, a.asked.length === 1 && !exists("declined") &&
    text(r).includes("not approved") && text(r).includes("Sandbox denied"), text(r));

  // cancel and an error answer: denied as well.
  answer = () => ({ action: "cancel" });
  r = await a.client.callTool({ name: "exec_command", arguments: writeCmd("cancelled") });
  check(`[${who}] cancel counts as denied`, !exists("cancelled") && text(r).includes("not approved"), text(r));
  answer = () => { throw new Error("the user closed the prompt"); };
  r = await a.client.callTool({ name: "exec_command", arguments: writeCmd("errored") });
  check(`[${who}] an error answer counts as denied`, !exists("errored") && text(r).includes("not approved"), text(r));
  answer = () => ({ action: "accept", content: { decision: "sure" } });
  r = await a.client.callTool({ name: "exec_command", arguments: writeCmd("malformed") });
  check(`[${who}] a decision outside the enum counts as denied`, !exists("malformed") && text(r).includes("not approved"), text(r));

  // approved_for_session: asked once, then the same command in the same cwd is not asked again.
  a.asked.length = 0;
  answer = accept("approved_for_session");
  const again = { cmd: `echo hi >> ${scratch}/${tag}-session && echo wrote`, login: false, yield_time_ms: 10000 };
  r = await a.client.callTool({ name: "exec_command", arguments: again });
  const r2 = await a.client.callTool({ name: "exec_command", arguments: again });
  check(`[${who}] approved_for_session: asked once for two calls`, a.asked.length === 1 &&
    text(r).includes("retried without the sandbox") && text(r2).includes("retried without the sandbox") &&
    fs.readFileSync(path.join(scratch, `${tag}-session`), "utf8") === "hi\nhi\n", `${a.asked.length} ${text(r2)}`);

  // A command the sandbox allows is never asked about.
  a.asked.length = 0;
  r = await a.client.callTool({ name: "exec_command", arguments: { cmd: "echo inside", login: false } });
  check(`[${who}] an allowed command is not asked about`, a.asked.length === 0 && r.structuredContent?.output === "inside\n", text(r));
  await a.client.close();

  // No elicitation capability: never asked; denied, and the result says approval was needed.
  const b = await connect(args, null);
  r = await b.client.callTool({ name: "exec_command", arguments: writeCmd("no-elicitation") });
  check(`[${who}] without elicitation: denied, nothing written`, !exists("no-elicitation") && text(r).includes("Sandbox denied"), text(r));
  check(`[${who}] without elicitation: the result says approval was needed`, text(r).includes("Approval needed") &&
    text(r).includes("elicitation"), text(r));
  r = await b.client.callTool({ name: "exec_command", arguments: { cmd: "echo fine", login: false } });
  check(`[${who}] without elicitation: allowed commands run, without the note`, r.structuredContent?.output === "fine\n" &&
    !text(r).includes("Approval needed"), text(r));
  await b.client.close();
}

try {
  // ---- 1. `uexec mcp --sandbox … --approval on-failure` -------------------------------------
  await cases("mcp", ["mcp", "--structured-content", ...sandboxArgs]);

  // A question still open when the client goes away does not keep the server alive.
  {
    const transport = new StdioClientTransport({ command: uexec, args: ["mcp", "--structured-content", ...sandboxArgs], cwd: "/tmp", stderr: "inherit" });
    const client = new Client({ name: "mcp-approvals-eof", version: "1.0.0" }, { capabilities: { elicitation: {} } });
    let seen = false;
    client.setRequestHandler(ElicitRequestSchema, () => { seen = true; return new Promise(() => {}); });  // never answers
    await client.connect(transport);
    const pending = client.callTool({ name: "exec_command", arguments: writeCmdIn("abandoned") }).catch(() => null);
    for (let i = 0; i < 400 && !seen; i++) await sleep(25);
    check("[mcp] the question was asked", seen);
    const pid = transport.pid;
    await client.close();
    await pending;
    let gone = false;
    for (let i = 0; i < 200 && !gone; i++) { try { process.kill(pid, 0); await sleep(25); } catch { gone = true; } }
    check("[mcp] stdin EOF with a question open: it exits", gone);
    check("[mcp] and nothing ran unsandboxed", !existsIn("abandoned"));
  }

  // --approval is still refused without --sandbox.
  const f = spawnSync(uexec, ["mcp", "--approval", "on-failure"], { input: "" });
  check("[mcp] --approval without --sandbox: usage error", f.status === 2 && f.stderr.toString().includes("--sandbox"),
    `${f.status} ${f.stderr}`);

  // ---- 2. `uexec mcp --connect` to `uexec serve --approval on-failure` ----------------------
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "uexec-mcp-appr-"));
  fs.chmodSync(dir, 0o700);
  const sock = path.join(dir, "uexec.sock");
  const daemon = spawn(uexec, ["serve", "--socket", sock, "--no-ws", ...sandboxArgs], { cwd: "/tmp", stdio: ["ignore", "ignore", "pipe"] });
  children.push(daemon);
  let err = "";
  daemon.stderr.on("data", (x) => { err += x; });
  for (let i = 0; i < 400 && !err.includes("listening on unix:") && daemon.exitCode === null; i++) await sleep(25);
  check("[serve] the daemon listens", err.includes("listening on unix:"), err);
  await cases("mcp --connect", ["mcp", "--connect", sock, "--structured-content"]);
  daemon.kill("SIGTERM");
  await Promise.race([once(daemon, "exit"), sleep(10000)]);
  fs.rmSync(dir, { recursive: true, force: true });
} finally {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  fs.rmSync(scratch, { recursive: true, force: true });
}

finish("mcp-approvals");
