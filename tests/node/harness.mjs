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
