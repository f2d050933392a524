// harness.mjs: what the node tests here share: check() counts the results, sleep(), the text
// of an MCP tool result, and finish(), which prints the summary line and exits 1 if any check
// failed.
let passed = 0, failed = 0;

export function check(name, ok, detail = "") {
  if (ok) passed++;
  else { failed++; console.log(`FAIL: ${name} ${detail}`); }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The first text content of a CallToolResult ("" when there is none).
export const text = (r) => r?.content?.[0]?.text ?? "";

export function finish(label) {
  console.log(`${label}: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

// notifications/cancelled, as the MCP SDK sends it when the caller aborts a tools/call: the
// front door must end the call's wait without a reply (McpServer), or drop the daemon's late
// reply (McpRelay), and the command runs on. `transport` is the client's, to watch the wire.
export async function checkCancelled(label, client, transport) {
  const seen = [], sent = [];
  const onmessage = transport.onmessage, send = transport.send;
  transport.onmessage = (m, extra) => { seen.push(m); onmessage?.(m, extra); };
  transport.send = (m, options) => { sent.push(m); return send.call(transport, m, options); };
  const marker = `cancel-me-${process.pid}`;
  const ac = new AbortController();
  const call = client.callTool({ name: "exec_command", arguments: { cmd: `echo ${marker}; exec sleep 30`, yield_time_ms: 2000, login: false } },
    undefined, { signal: ac.signal });
  await sleep(400);
  ac.abort("test");
  const rejected = await call.then(() => false, () => true);
  await sleep(2600);  // past the yield: a wait that had not been ended would have answered by now
  transport.onmessage = onmessage;
  transport.send = send;
  const id = sent.find((m) => m.method === "tools/call" && m.params?.arguments?.cmd?.includes(marker))?.id;
  check(`[${label}] cancel: notifications/cancelled sent for the call`, rejected && id !== undefined &&
    sent.some((m) => m.method === "notifications/cancelled" && m.params?.requestId === id), JSON.stringify(sent.slice(-2)));
  check(`[${label}] cancel: no reply ever comes for it`, !seen.some((m) => m.id === id),
    JSON.stringify(seen.filter((m) => m.id === id)).slice(0, 300));
  const r = await client.callTool({ name: "list_sessions", arguments: {} });
  check(`[${label}] cancel: the command runs on`, text(r).includes("sleep 30"), text(r));
}
