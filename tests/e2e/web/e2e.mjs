// e2e.mjs UEXEC: the web terminal end to end. A real `uexec serve` (temporary socket
// directory, WebSocket on 127.0.0.1 port 0) and Debian's chromium driven by playwright-core:
// connect, New shell, typing, paste, resize, the alternate screen (top, vi), reload with resume,
// a second browser as a read-only viewer (and its input while the owner is away), Ctrl-C,
// the kill button, and the daemon going away and coming back. What the page renders is read from the DOM (`.xterm-rows`) and
// compared with the daemon's screen model (process/snapshot).
//
//   node tests/e2e/web/e2e.mjs <path-to-uexec> <output-dir-for-screenshots>
//
// Prints `ok - …` / `FAIL: …` lines and `web-e2e: N passed, M failed`; exits 1 on any
// failure. A step whose wait times out ends the run (the later steps need its state).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const [uexec, outDir] = process.argv.slice(2);
if (!uexec || !outDir) {
  console.error("usage: node tests/e2e/web/e2e.mjs <path-to-uexec> <output-dir-for-screenshots>");
  process.exit(2);
}

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const WAIT_MS = 10000;          // one wait (2 slow shared cores: be generous)
const OVERALL_MS = 150000;      // the whole run
const started = Date.now();

let passed = 0, failed = 0, aborted = null, overtime = false;
function check(name, ok, detail = "") {
  if (overtime) return ok;        // the guard has reported and is cleaning up
  if (ok) { passed++; console.log(`ok - ${name}`); }
  else { failed++; console.log(`FAIL: ${name} ${detail}`.trimEnd()); }
  return ok;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nonce = () => String(Math.floor(Math.random() * 1e9));

// Polls fn until it returns a truthy value; on timeout throws, with describe()'s view of
// the state (say, the screen) to tell what was there instead.
async function waitFor(what, fn, { timeout = WAIT_MS, describe } = {}) {
  const end = Date.now() + timeout;
  let lastErr = null;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      lastErr = null;
    } catch (e) { lastErr = e; }
    if (Date.now() > end) {
      let detail = lastErr ? ` (last error: ${lastErr.message.split("\n")[0]})` : "";
      if (describe) { try { detail += `\n${await describe()}`; } catch { /* page gone */ } }
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${detail}`);
    }
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------
// The daemon, the browser, cleanup and the overall guard
// ---------------------------------------------------------------------------------------

const tmp = fs.mkdtempSync("/var/tmp/uexec-web-")  // not under /tmp: a token there refuses other suites' Landlock+network sandboxes;
fs.chmodSync(tmp, 0o700);
const home = path.join(tmp, "home");
fs.mkdirSync(home);
// A deterministic interactive shell: bash -i reads /etc/bash.bashrc, then this.
fs.writeFileSync(path.join(home, ".bashrc"),
  "PS1='$ '\nunset PROMPT_COMMAND\nHISTFILE=/dev/null\nunset command_not_found_handle\n");
const notesNonce = nonce();
const notesFile = path.join(tmp, "notes.txt");
fs.writeFileSync(notesFile, `uexec web e2e\nline two: ${notesNonce}\nline three\n`);
fs.mkdirSync(outDir, { recursive: true });

// The shell inherits the daemon's environment (the page asks for inherit:"all"). The daemon
// runs in its user's home directory ($HOME: the temporary home with the .bashrc above), where
// `uexec serve` is usually started, so the page shows the shell's cwd as "~".
const env = {
  PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin",
  HOME: home, USER: os.userInfo().username, LOGNAME: os.userInfo().username, SHELL: "/bin/bash",
  LANG: "C.UTF-8", TZ: "UTC",
};
if (process.env.UEXEC_WEB_ROOT) env.UEXEC_WEB_ROOT = process.env.UEXEC_WEB_ROOT;
const userHome = home;                      // the daemon's userHomeDir ($HOME, as Codex's)
const daemonCwd = userHome;
const serve = spawn(uexec, ["serve", "--socket", path.join(tmp, "uexec.sock"), "--ws", "127.0.0.1:0"],
  { stdio: ["ignore", "ignore", "pipe"], env, cwd: daemonCwd });
let serveErr = "";
let serveExit = null;
let serve2 = null;                          // step 10's daemon, started again
serve.stderr.on("data", (d) => { serveErr += d; });
const serveExited = new Promise((r) => serve.on("exit", (code, signal) => { serveExit = { code, signal }; r(); }));

let browser = null;
let cleaning = null;
async function cleanup() {
  if (cleaning) return cleaning;
  cleaning = (async () => {
    if (browser) await Promise.race([browser.close().catch(() => {}), sleep(10000)]);
    if (!serveExit) {
      serve.kill("SIGTERM");
      await Promise.race([serveExited, sleep(10000)]);
      if (!serveExit) { serve.kill("SIGKILL"); await Promise.race([serveExited, sleep(2000)]); }
    }
    if (serve2 && serve2.exitCode === null) serve2.kill("SIGKILL");
    fs.rmSync(tmp, { recursive: true, force: true });
  })();
  return cleaning;
}

function summary() {
  console.log(`web-e2e: run time ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`web-e2e: ${passed} passed, ${failed} failed`);
}

const guard = setTimeout(async () => {
  failed++;
  overtime = true;
  console.log(`FAIL: the whole run took longer than ${OVERALL_MS / 1000} s (in step "${current}"); ` +
    "killing the browser and the daemon");
  if (serveErr) console.log(`daemon stderr:\n${serveErr.trimEnd()}`);
  const pid = browser?.process?.()?.pid;
  browser = null;
  if (pid) {
    try { process.kill(-pid, "SIGKILL"); } catch { try { process.kill(pid, "SIGKILL"); } catch { /* gone */ } }
  }
  await Promise.race([cleanup(), sleep(15000)]);
  if (!serveExit) serve.kill("SIGKILL");
  summary();
  process.exit(1);
}, OVERALL_MS);

for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    console.log(`FAIL: interrupted by ${sig}`);
    failed++;
    await Promise.race([cleanup(), sleep(15000)]);
    summary();
    process.exit(1);
  });
}

// ---------------------------------------------------------------------------------------
// Page helpers
// ---------------------------------------------------------------------------------------

// The terminal's rendered rows, read from the DOM renderer (trailing blanks trimmed, as in
// process/snapshot lines).
const screen = (page) => page.evaluate(() =>
  [...document.querySelectorAll("#terminal .xterm-rows > div")]
    .map((d) => d.textContent.replace(/\u00a0/g, " ").trimEnd()));
const showScreen = async (page) => "screen:\n" + (await screen(page)).map((l) => `  |${l}`).join("\n");

// A call on the page's own connection: {result} or {error:{message, kind}}.
const rpc = (page, method, params) => page.evaluate(async ([m, p]) => {
  try { return { result: await window.uexec.call(m, p) }; }
  catch (e) { return { error: { message: e.message, kind: e.kind } }; }
}, [method, params]);
async function rpcOk(page, method, params) {
  const r = await rpc(page, method, params);
  if (r.error) throw new Error(`${method}: ${r.error.message} (${r.error.kind})`);
  return r.result;
}
const snapshot = (page, t) => rpcOk(page, "process/snapshot", { processId: t.processId, sessionId: t.sessionId });
async function listEntry(page, t) {
  const r = await rpcOk(page, "process/list", { all: true });
  return r.processes.find((p) => p.processId === t.processId && p.sessionId === t.sessionId) || null;
}
const pageState = (page) => page.evaluate(() => ({
  state: document.body.dataset.state,
  attached: window.uexec.attached, role: window.uexec.role, mode: window.uexec.mode,
  sessionId: window.uexec.sessionId, readOnly: window.uexec.readOnly, lastSeq: window.uexec.lastSeq,
  rows: window.uexec.term.rows, cols: window.uexec.term.cols,
  roleText: document.querySelector("#role").textContent,
  status: document.querySelector("#status").textContent,
  statusError: document.querySelector("#status").className === "error",
}));

// Keyboard input goes to xterm's hidden textarea, as when a person clicks the terminal.
async function typeLine(page, text) {
  await page.focus("#terminal .xterm-helper-textarea");
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
}

// The shell waits at its prompt: the cursor is right after "$ " on an otherwise empty row.
const atPrompt = (page) => page.evaluate(() => {
  const b = window.uexec.term.buffer.active;
  const line = b.getLine(b.baseY + b.cursorY);
  return !!line && line.translateToString(true).trimEnd() === "$" && b.cursorX === 2;
});
const waitPrompt = (page, what) => waitFor(what || "the shell prompt", () => atPrompt(page),
  { describe: () => showScreen(page) });

const rowMatching = async (page, re) => (await screen(page)).map((l) => l.match(re)).find(Boolean) || null;
const waitRow = (page, re, what) => waitFor(what || `a rendered row matching ${re}`, () => rowMatching(page, re),
  { describe: () => showScreen(page) });

// The rendered screen equals the daemon's screen model, row for row.
async function screensAgree(page, t) {
  const [dom, snap] = await Promise.all([screen(page), snapshot(page, t)]);
  return dom.length === snap.lines.length && dom.every((l, i) => l === snap.lines[i].trimEnd()) ? { dom, snap } : null;
}
const waitAgree = (page, t, what) => waitFor(what || "the rendered screen to equal process/snapshot lines",
  () => screensAgree(page, t), {
    describe: async () => {
      const [dom, snap] = await Promise.all([screen(page), snapshot(page, t)]);
      return `dom (${dom.length} rows) vs snapshot (${snap.lines.length} lines):\n` +
        dom.map((l, i) => `${l === (snap.lines[i] ?? "").trimEnd() ? " " : "*"} |${l}\n  |${snap.lines[i] ?? ""}`).join("\n");
    },
  });

// Output has settled: lastSeq unchanged for quietMs.
async function waitQuiet(page, quietMs = 600) {
  let seq = -1, since = Date.now();
  await waitFor("output to settle", async () => {
    const s = await page.evaluate(() => window.uexec.lastSeq);
    if (s !== seq) { seq = s; since = Date.now(); return false; }
    return Date.now() - since >= quietMs;
  });
}

// The process in a ps-like view: is `comm` a child of the shell and the tty's foreground job?
function foregroundChild(shellPid, comm) {
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    let stat;
    try { stat = fs.readFileSync(`/proc/${d}/stat`, "utf8"); } catch { continue; }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");   // state ppid pgrp session tty tpgid
    if (name === comm && Number(f[1]) === shellPid && Number(f[2]) === Number(f[5])) return true;
  }
  return false;
}
async function waitForeground(page, t, comm) {
  const info = await listEntry(page, t);
  if (info?.pid && fs.existsSync(`/proc/${info.pid}`)) {
    await waitFor(`${comm} to be the terminal's foreground job`, () => foregroundChild(info.pid, comm));
  } else {
    await sleep(1000);   // the shell's pid is not visible here (another pid namespace)
  }
}

const pageErrors = [];
// Step 10 stops the daemon on purpose: while it is down, each reconnect attempt makes the
// browser log a refused WebSocket connection. Those, and only while it is down, are expected.
let daemonDown = false;
const expectedWhileDown = /^WebSocket connection to '[^']*' failed: .*ERR_CONNECTION_REFUSED/;
async function openPage(context, url, name) {
  const page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(`${name}: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() !== "error" || (daemonDown && expectedWhileDown.test(m.text()))) return;
    pageErrors.push(`${name} console: ${m.text()}`);
  });
  await page.goto(url);
  return page;
}
async function noStatusError(page, where) {
  const s = await pageState(page);
  check(`${where}: no error in the status line`, !s.statusError, JSON.stringify(s.status));
}
const shot = (page, name) => page.screenshot({ path: path.join(outDir, name) });

let current = "";
async function step(name, fn) {
  if (aborted || overtime) return;
  current = name;
  try { await fn(); }
  catch (e) {
    if (overtime) return;
    failed++;
    aborted = name;
    console.log(`FAIL: ${name}: ${e.message}`);
  }
}

// ---------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------

let url = "", origin = "";
let ctx1, ctx2, page1, page2;
let target = null;            // {sessionId, processId} of the shell
let firstSessionId = "";
const foreign = [];           // requests to anything but the daemon

await step("the daemon starts", async () => {
  await waitFor("uexec serve to print the page's URL", () => /web terminal at (http:\/\/\S+)/.test(serveErr) || serveExit,
    { describe: () => `daemon stderr: ${serveErr}` });
  url = serveErr.match(/web terminal at (http:\/\/\S+)/)?.[1] || "";
  check("uexec serve prints the web terminal's URL with the token in the fragment", /#token=\S+/.test(url), serveErr);
  origin = new URL(url).origin;
  browser = await chromium.launch({
    executablePath: CHROMIUM, timeout: 30000,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
  });
});

// 1. Open the page; it connects.
await step("1. connect", async () => {
  ctx1 = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  ctx1.on("request", (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith("data:")) foreign.push(r.url()); });
  page1 = await openPage(ctx1, url, "page1");
  await waitFor("body[data-state=connected]", async () => (await pageState(page1)).state === "connected");
  await page1.evaluate(() => window.uexec.ready);
  const s = await pageState(page1);
  check("the page connects (body[data-state=connected], #conn says connected)",
    (await page1.textContent("#conn")) === "connected" && /^[0-9a-f-]{36}$/.test(s.sessionId), JSON.stringify(s));
  check("nothing is attached yet", s.attached === null && (await page1.isEnabled("#new-shell")));
});

// 2. New shell: attached, owner.
await step("2. new shell", async () => {
  await page1.click("#new-shell");
  const s = await waitFor("a shell attached as owner", async () => {
    const s = await pageState(page1);
    return s.attached && s.role === "owner" ? s : null;
  });
  target = s.attached;
  firstSessionId = s.sessionId;
  check("New shell attaches a shell owned by the page", target.sessionId === s.sessionId && s.mode === "live",
    JSON.stringify(s));
  check("#role says yours", s.roleText === "yours", JSON.stringify(s.roleText));
  await waitPrompt(page1, "the shell's first prompt ($ from the test's .bashrc)");
  const row = `#sessions .session[data-process-id="${target.processId}"][data-session-id="${target.sessionId}"]`;
  // Soft: a broken list is reported here, and the steps that do not need it still run.
  const listed = await waitFor("the shell's row in the list, running", () => page1.$(`${row}[data-state=running]`), {
    describe: async () => `status: ${JSON.stringify((await pageState(page1)).status)}; list: ` +
      JSON.stringify(await page1.evaluate(() => document.querySelector("#sessions").innerText)),
  }).catch((e) => { check("the list shows the new shell", false, e.message); return null; });
  if (!listed) return;
  const rowText = await page1.evaluate((sel) => {
    const li = document.querySelector(sel);
    return { cmd: li.querySelector(".cmd").textContent, owner: li.querySelector(".owner").textContent,
             cwd: li.querySelector(".cwd").textContent, selected: li.classList.contains("selected") };
  }, row);
  check("the list shows the shell as mine, running and selected",
    rowText.cmd === "/bin/bash -i" && rowText.owner === "mine" && rowText.selected, JSON.stringify(rowText));
  const cwdWanted = daemonCwd === userHome ? "~" : daemonCwd;
  check(`the list shows the shell's cwd (the daemon's, ${daemonCwd}) as ${cwdWanted}`, rowText.cwd === cwdWanted,
    JSON.stringify(rowText));
  await noStatusError(page1, "new shell");
});

// 3. Typing: the output is rendered and is in the daemon's screen model.
let uiNumber = "";
await step("3. typing", async () => {
  await typeLine(page1, "echo ui-$RANDOM");
  const m = await waitRow(page1, /^ui-(\d+)$/, "the rendered row ui-<digits>");
  uiNumber = m[1];
  check("typed `echo ui-$RANDOM` is echoed and its output rendered (DOM .xterm-rows)",
    (await screen(page1)).includes("$ echo ui-$RANDOM"), await showScreen(page1));
  const snap = await snapshot(page1, target);
  check("process/snapshot lines hold the same ui-<digits>", snap.lines.includes(`ui-${uiNumber}`),
    JSON.stringify(snap.lines));
  await waitPrompt(page1);
  await waitAgree(page1, target);
  check("the rendered screen equals process/snapshot lines", true);
  // Paste: xterm.js turns a paste into input, bracketed since bash asked for it (so the
  // pasted text is not run until Enter).
  const pasted = nonce();
  await page1.evaluate((t) => window.uexec.term.paste(t), `echo pasted-$((${pasted}+1))`);
  await page1.keyboard.press("Enter");
  await waitRow(page1, new RegExp(`^pasted-${Number(pasted) + 1}$`), "the pasted command's output");
  check("pasted text reaches the shell", true);
  await waitPrompt(page1);
  await shot(page1, "web-shell.png");
  // The recording (issue 20, item 5): the toolbar's ⤓ .cast downloads the same file, byte for
  // byte, as `uexec logs ID --asciicast` (the shell is quiet at its prompt meanwhile).
  const [download] = await Promise.all([page1.waitForEvent("download"), page1.click("#save-cast")]);
  const fromPage = fs.readFileSync(await download.path(), "utf8");
  const fromCli = spawnSync(uexec, ["logs", `${target.sessionId}/${target.processId}`, "--asciicast"],
    { env: { ...env, UEXEC_SOCKET: path.join(tmp, "uexec.sock"), UEXEC_AUTOSTART: "0" }, encoding: "utf8" });
  check("⤓ .cast downloads uexec-<process>.cast", download.suggestedFilename() === `uexec-${target.processId}.cast`,
    download.suggestedFilename());
  check("the page's recording is the CLI's, byte for byte", fromCli.status === 0 && fromPage === fromCli.stdout,
    `${fromPage.length} vs ${fromCli.stdout.length} bytes: ${fromCli.stderr}`);
  const [head, ...events] = fromPage.trimEnd().split("\n").map((l) => JSON.parse(l));
  const info = await listEntry(page1, target);
  check("its header has the terminal's size, and the typed command is in its events",
    head.version === 2 && head.width === info.size.cols && head.height === info.size.rows &&
    events.some((e) => e[1] === "o" && e[2].includes(`ui-${uiNumber}`)), JSON.stringify(head));
});

// 4. Resize: the viewport → the xterm → process/resize → the PTY.
await step("4. resize", async () => {
  const before = await pageState(page1);
  await page1.setViewportSize({ width: 860, height: 460 });
  const s = await waitFor("the xterm to refit to the smaller viewport", async () => {
    const s = await pageState(page1);
    return s.rows < before.rows - 4 && s.cols < before.cols - 20 ? s : null;
  });
  const { rows, cols } = await waitFor("process/list to report the xterm's size", async () => {
    const s = await pageState(page1);
    const info = await listEntry(page1, target);
    return info?.size?.rows === s.rows && info.size.cols === s.cols ? s : null;
  }, { describe: async () => JSON.stringify({ page: await pageState(page1), list: (await listEntry(page1, target))?.size }) });
  check(`the xterm refits (${before.rows}x${before.cols} → ${rows}x${cols})`, rows === s.rows && cols === s.cols);
  await typeLine(page1, "stty size");
  await waitRow(page1, new RegExp(`^${rows} ${cols}$`), `\`stty size\` to print "${rows} ${cols}"`);
  check("`stty size` in the shell prints the xterm's rows and cols", true);
  const snap = await snapshot(page1, target);
  check("process/snapshot has the same rows and cols", snap.rows === rows && snap.cols === cols,
    `${snap.rows}x${snap.cols}`);
  const after = await pageState(page1);
  check("term.rows/cols did not change meanwhile", after.rows === rows && after.cols === cols,
    `${after.rows}x${after.cols}`);
  await waitPrompt(page1);
  await waitAgree(page1, target);
  await shot(page1, "web-resized.png");
});

// 5. top: a full-screen program redrawing itself. (procps top draws on the normal screen,
//    without smcup; the alternate screen is checked with vi in step 6.)
await step("5. top", async () => {
  if (!["/usr/bin/top", "/bin/top"].some((p) => fs.existsSync(p))) {
    check("top (procps) is installed", false);
    return;
  }
  await typeLine(page1, "top -d 1");
  await waitRow(page1, /^top - /, "top's header rendered");
  await waitRow(page1, /PID +USER/, "top's column header rendered");
  // A redraw: top's header has the time of day, so wait for the next second's frame.
  const first = await rowMatching(page1, /^top - (\d\d:\d\d:\d\d)/);
  await waitFor("top to redraw", async () => {
    const m = await rowMatching(page1, /^top - (\d\d:\d\d:\d\d)/);
    return m && m[1] !== first[1];
  }, { describe: () => showScreen(page1) });
  const snap = await snapshot(page1, target);
  check("top runs and redraws: its header is rendered, and in process/snapshot",
    snap.lines.some((l) => /^top - /.test(l)) && snap.lines.some((l) => /PID +USER/.test(l)), JSON.stringify(snap.lines));
  await shot(page1, "web-top.png");
  await page1.keyboard.press("q");
  await waitPrompt(page1, "the prompt after quitting top");
  // Compared without the last column: top ends its full-width rows with EL (CSI K) in the
  // pending-wrap state, which erases the last cell in the daemon's model (libvterm, as xterm
  // and DEC terminals do) but not in xterm.js.
  await waitFor("the screen after top to equal process/snapshot (but for the last column)", async () => {
    const [dom, snap] = await Promise.all([screen(page1), snapshot(page1, target)]);
    const cut = (l) => l.slice(0, snap.cols - 1).trimEnd();
    return dom.length === snap.lines.length && dom.every((l, i) => cut(l) === cut(snap.lines[i]));
  }, { describe: () => showScreen(page1) });
  check("after top quits, the rendered screen equals process/snapshot (but for the last column)", true);
  await typeLine(page1, "clear");
  await waitPrompt(page1, "the prompt after clear");
  await waitAgree(page1, target);
});

// 6. vi with a known file; reload; the page resumes its session and shows the same screen.
await step("6. reload", async () => {
  const vi = ["/usr/bin/vi", "/bin/vi"].find((p) => fs.existsSync(p));
  if (!vi) { check("vi is installed", false); return; }
  await typeLine(page1, `vi ${notesFile}`);
  await waitFor("process/snapshot altScreen:true (vi)", async () => (await snapshot(page1, target)).altScreen === true);
  check("vi runs: process/snapshot reports altScreen:true", true);
  await waitRow(page1, new RegExp(`^line two: ${notesNonce}$`), "vi showing the file");
  await waitRow(page1, /notes\.txt/, "vi's file message");
  await waitQuiet(page1);
  const { dom: before } = await waitAgree(page1, target, "vi's screen rendered as in process/snapshot");
  check("vi's screen is rendered exactly as process/snapshot has it", true);
  await shot(page1, "web-vi.png");
  const ids = await pageState(page1);

  await page1.reload();
  const s = await waitFor("the reloaded page to re-attach the shell", async () => {
    const s = await pageState(page1);
    return s.state === "connected" && s.attached && s.mode === "snapshot" ? s : null;
  }, { describe: async () => JSON.stringify(await pageState(page1)) });
  check("after reload the page resumes its session (same sessionId)", s.sessionId === ids.sessionId,
    `${ids.sessionId} → ${s.sessionId}`);
  check("after reload it is attached to the same process, as owner",
    s.attached.processId === target.processId && s.attached.sessionId === target.sessionId && s.role === "owner",
    JSON.stringify(s));
  await waitFor("the reloaded page to show the same screen", async () => {
    const now = await screen(page1);
    return now.length === before.length && now.every((l, i) => l === before[i]);
  }, { describe: async () => `before:\n${before.map((l) => `  |${l}`).join("\n")}\n${await showScreen(page1)}` });
  check("after reload the terminal shows the same screen (vi, row for row)", true);
  await waitAgree(page1, target);

  // The owner still types after the reload: quit vi.
  await typeLine(page1, ":q!");
  await waitFor("altScreen:false after :q!", async () => (await snapshot(page1, target)).altScreen === false);
  await waitPrompt(page1, "the prompt after quitting vi");
  // The page rebuilt its screen from the snapshot taken while vi was on the alternate
  // screen; what shows after vi quits is the main screen that repaint put under it.
  // Soft, and cleared after, so that a wrong main screen does not hide the later steps.
  const agreed = await waitAgree(page1, target, "the normal screen after vi (restored from the reload's snapshot)")
    .then(() => true, (e) => e);
  check("after reload, quitting vi shows the normal screen as the daemon's model has it", agreed === true,
    agreed === true ? "" : agreed.message);
  await typeLine(page1, "clear");
  await waitPrompt(page1, "the prompt after clear");
  await waitAgree(page1, target);
  await noStatusError(page1, "reload");
});

// 7. A second browser (another session) is a viewer: same output, read-only while the
//    owner is connected; input opens while the owner is away.
await step("7. viewer", async () => {
  ctx2 = await browser.newContext({ viewport: { width: 1100, height: 640 } });
  page2 = await openPage(ctx2, `${url}&attach=${target.sessionId}/${target.processId}`, "page2");
  const s2 = await waitFor("page 2 attached as viewer", async () => {
    const s = await pageState(page2);
    return s.state === "connected" && s.attached && s.role === "viewer" && s.readOnly ? s : null;
  }, { describe: async () => JSON.stringify(await pageState(page2)) });
  check("page 2 (another browser context) is a different session", s2.sessionId !== target.sessionId);
  check("page 2 attaches the same process as a viewer",
    s2.attached.processId === target.processId && s2.attached.sessionId === target.sessionId);
  await waitFor("#role to say watching only", async () => /— watching only$/.test((await pageState(page2)).roleText),
    { describe: async () => JSON.stringify((await pageState(page2)).roleText) });
  check("#role on page 2 says watching only", true);
  await waitFor("page 1 to list the viewer", async () =>
    (await page1.textContent("#viewers")).includes("1 viewer"));
  check("the owner's toolbar lists one viewer", true);
  // The owner's pane may refit meanwhile (the viewers line in its toolbar); the viewer
  // follows the process's size from the list, whatever its own window.
  const sizes = async () => {
    const [a, b, info] = [await pageState(page1), await pageState(page2), await listEntry(page1, target)];
    return { owner: `${a.rows}x${a.cols}`, viewer: `${b.rows}x${b.cols}`, process: `${info?.size?.rows}x${info?.size?.cols}` };
  };
  await waitFor("the viewer's xterm to have the process's (the owner's) size", async () => {
    const z = await sizes();
    return z.owner === z.viewer && z.viewer === z.process;
  }, { describe: async () => JSON.stringify(await sizes()) });
  check("the viewer's xterm keeps the process's size (the owner's), not its own window's", true);
  await waitAgree(page2, target, "page 2's screen to equal process/snapshot");
  check("page 2 shows the same screen", true);

  const shared = nonce();
  await typeLine(page1, `echo shared-${shared}`);
  await waitRow(page2, new RegExp(`^shared-${shared}$`), "page 2 to show the owner's output");
  check("output typed in page 1 appears in page 2", true);
  await waitPrompt(page1);

  const v = nonce();
  await typeLine(page2, `echo viewer-${v}`);
  const direct = await rpc(page2, "process/write",
    { processId: target.processId, sessionId: target.sessionId, chunk: Buffer.from(`echo viewer-${v}\r`).toString("base64") });
  check("the daemon refuses the viewer's process/write (readOnly)", direct.error?.kind === "readOnly", JSON.stringify(direct));
  const mark = nonce();
  await typeLine(page1, `echo mark-${mark}`);
  await waitRow(page1, new RegExp(`^mark-${mark}$`), "the owner's marker output");
  const snap = await snapshot(page1, target);
  const dom2 = await screen(page2);
  check("typing in page 2 does not reach the shell",
    !snap.lines.some((l) => l.includes(`viewer-${v}`)) && !dom2.some((l) => l.includes(`viewer-${v}`)),
    JSON.stringify(snap.lines));
  await waitPrompt(page1);
  await shot(page2, "web-viewer.png");

  // The owner goes away (page 1 leaves): the viewer may type; back again: read-only.
  await page1.goto("about:blank");
  await waitFor("#role on page 2 to say the owner is away", async () =>
    /— you can type$/.test((await pageState(page2)).roleText),
    { describe: async () => JSON.stringify(await pageState(page2)) });
  check("with the owner away, page 2 says you can type", true);
  const away = nonce();
  await typeLine(page2, `echo away-${away}`);
  await waitRow(page2, new RegExp(`^away-${away}$`), "the viewer's command to run");
  check("with the owner away, typing in page 2 reaches the shell", true);
  await waitPrompt(page2);
  await page1.goto(`${url}&attach=${target.sessionId}/${target.processId}`);
  const back = await waitFor("page 1 back as owner", async () => {
    const s = await pageState(page1);
    return s.state === "connected" && s.role === "owner" && s.attached ? s : null;
  }, { describe: async () => JSON.stringify(await pageState(page1)) });
  check("page 1 comes back to the same session as owner", back.sessionId === firstSessionId, back.sessionId);
  await waitFor("page 2 read-only again", async () => {
    const s = await pageState(page2);
    return s.readOnly && /watching only/.test(s.roleText);
  }, { describe: async () => JSON.stringify(await pageState(page2)) });
  check("with the owner back, page 2 is read-only again", true);
  await waitAgree(page1, target);
  await noStatusError(page1, "viewer (page 1)");
});

// 7b. A phone (issue 20: at 390x844 the sidebar took half the width, the terminal was ~170 px
// and the role badge and Ctrl-C/Kill were off the screen): one column, the list a drawer.
await step("7b. phone", async () => {
  const ctx3 = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  try {
    const page3 = await openPage(ctx3, `${url}&attach=${target.sessionId}/${target.processId}`, "page3");
    await waitFor("the phone page attached", async () => {
      const s = await pageState(page3);
      return s.state === "connected" && s.attached ? s : null;
    }, { describe: async () => JSON.stringify(await pageState(page3)) });
    const box = async (sel) => page3.evaluate((q) => {
      const r = document.querySelector(q).getBoundingClientRect();
      return { left: r.left, right: r.right, width: r.width, visible: r.width > 0 && r.height > 0 };
    }, sel);
    const term = await box("#terminal-wrap");
    check("phone: the terminal takes the whole width", term.width >= 0.95 * 390, JSON.stringify(term));
    for (const sel of ["#role", "#ctrl-c", "#kill", "#toggle-sessions"]) {
      const b = await box(sel);
      check(`phone: ${sel} is on the screen`, b.visible && b.left >= 0 && b.right <= 390, JSON.stringify(b));
    }
    check("phone: the process list starts closed", !(await box("#sidebar")).visible);
    await page3.click("#toggle-sessions");
    const row = `#sessions .session[data-process-id="${target.processId}"][data-session-id="${target.sessionId}"]`;
    await waitFor("the drawer to show the process list", async () => (await box(row)).visible);
    check("phone: the Sessions button opens the list, full width", (await box("#sidebar")).width >= 0.95 * 390);
    await shot(page3, "web-phone-sessions.png");
    await page3.click(`${row} .cmd`);
    await waitFor("the drawer to close after choosing a process", async () => !(await box("#sidebar")).visible);
    check("phone: choosing a process closes the list", true);
    await shot(page3, "web-phone.png");
  } finally {
    await ctx3.close().catch(() => {});
  }
});

// 8. Ctrl-C: the key in page 1, then the toolbar button.
await step("8. ctrl-c", async () => {
  for (const how of ["key", "button"]) {
    await typeLine(page1, "sleep 100");
    await waitForeground(page1, target, "sleep");
    if (how === "key") {
      await page1.focus("#terminal .xterm-helper-textarea");
      await page1.keyboard.press("Control+c");
    } else {
      await page1.click("#ctrl-c");
    }
    await waitPrompt(page1, `the prompt after Ctrl-C (${how})`);
    const n = nonce();
    await typeLine(page1, `echo after-int-${n}`);
    await waitRow(page1, new RegExp(`^after-int-${n}$`), "the next command's output");
    check(`Ctrl-C (${how === "key" ? "Control+C typed in the terminal" : "the Ctrl-C button"}) interrupts sleep 100 and the prompt returns`, true);
    await waitPrompt(page1);
  }
});

// 9. The kill button ends the shell; the list shows the exit in the failure colour.
await step("9. kill", async () => {
  // One click only arms the button (issue 20: × and Kill used to kill at once); the second kills.
  await page1.click("#kill");
  check("one click on Kill asks first (the button says Kill?)", (await page1.textContent("#kill")) === "Kill?",
    await page1.textContent("#kill"));
  await sleep(500);
  const still = await listEntry(page1, target);
  check("...and the shell still runs", !!still && still.state === "running", JSON.stringify(still));
  await page1.click("#kill");
  const info = await waitFor("process/list to report the shell's end", async () => {
    const i = await listEntry(page1, target);
    return i && (i.state === "exited" || i.state === "closed") ? i : null;
  });
  check("the kill button ends the shell (killed by a signal)", !!info.signal, JSON.stringify(info));
  const sel = `#sessions .session[data-process-id="${target.processId}"][data-session-id="${target.sessionId}"] .exit`;
  for (const [name, page] of [["page 1", page1], ["page 2", page2]]) {
    const ex = await waitFor(`${name}'s row to show the exit`, () => page.evaluate((s) => {
      const e = document.querySelector(s);
      if (!e || !e.classList.contains("st-fail")) return null;
      return { text: e.textContent, color: getComputedStyle(e).color };
    }, sel));
    const [r, g, b] = (ex.color.match(/\d+/g) || []).map(Number);
    check(`${name}'s list shows the exit (${ex.text}) in the failure colour (${ex.color})`,
      ex.text === info.signal && r > 180 && r > g + 60 && r > b + 60, JSON.stringify(ex));
  }
  await waitRow(page1, /^\[process killed by SIG[A-Z]+\]$/, "the exit note in the terminal");
  check("the terminal shows the exit note", true);
  check("the kill button is disabled after the exit", await page1.isDisabled("#kill"));
  await shot(page1, "web-killed.png");
  await noStatusError(page1, "kill");
});

// 10. The daemon goes away and comes back (issue 20: a visible reconnect state). The page
//     says so over the dimmed terminal, counts down to its next try and offers Retry now; a
//     daemon started again on the same port (the token file is kept across restarts) takes
//     it back, and the banner goes.
await step("10. reconnect", async () => {
  // The sparkline is readable: a number beside it (the shell is gone; an idle row says nothing).
  check("the process list shows each row's output rate beside its chart",
    await page1.evaluate(() => !!document.querySelector("#sessions .session .rate")));
  daemonDown = true;
  serve.kill("SIGTERM");
  await Promise.race([serveExited, sleep(15000)]);
  const banner = await waitFor("the page to say it lost the daemon", () => page1.evaluate(() => {
    const o = document.querySelector("#offline");
    return o && !o.hidden && o.getBoundingClientRect().height > 0 ? o.textContent.replace(/\s+/g, " ").trim() : null;
  }));
  check("a banner over the terminal says the connection is lost and when the next try is",
    /Lost the connection to the daemon\. (Trying again in \d+ s \(attempt \d+\)\.|Trying again…)/.test(banner), banner);
  const st = await pageState(page1);
  check("#conn says reconnecting…, New shell is disabled", /reconnecting/.test(await page1.textContent("#conn")) &&
    await page1.isDisabled("#new-shell"), JSON.stringify(st));
  check("the terminal is dimmed under it", await page1.evaluate(() =>
    Number(getComputedStyle(document.querySelector("#terminal")).opacity) < 0.5));
  await shot(page1, "web-reconnecting.png");
  const port = new URL(url).port;
  serve2 = spawn(uexec, ["serve", "--socket", path.join(tmp, "uexec.sock"), "--ws", `127.0.0.1:${port}`],
    { stdio: ["ignore", "ignore", "pipe"], env, cwd: daemonCwd });
  let err2 = "";
  serve2.stderr.on("data", (d) => { err2 += d; });
  await waitFor("the second daemon to listen", () => /listening on ws:/.test(err2), { describe: () => err2 });
  // The page's own countdown can win the race and reconnect first (the banner then goes while
  // the click waits for it); press Retry now only while the banner is still up.
  const bannerUp = () => page1.evaluate(() => !document.querySelector("#offline").hidden);
  if (await bannerUp()) {
    await page1.click("#offline-retry", { timeout: 10000 }).catch(async (e) => {
      if (await bannerUp()) throw e;
    });
  }
  await waitFor("the page to be connected again, the banner gone", async () =>
    (await pageState(page1)).state === "connected" && await page1.evaluate(() => document.querySelector("#offline").hidden),
  { describe: async () => JSON.stringify(await pageState(page1)) });
  check("Retry now (or the countdown) reconnects to the daemon started again; the banner goes", true);
  daemonDown = false;
  check("New shell works again", !(await page1.isDisabled("#new-shell")));
  await shot(page1, "web-reconnected.png");
});

if (overtime) await new Promise(() => {});   // the guard ends the process
if (aborted) console.log(`(the steps after "${aborted}" did not run)`);
check("no page made a request to anything but the daemon", foreign.length === 0, foreign.join(" "));
check("no uncaught error or console error on the pages", pageErrors.length === 0, pageErrors.join(" | "));

clearTimeout(guard);
if (browser) await Promise.race([browser.close().catch(() => {}), sleep(10000)]);
browser = null;
if (!serveExit) serve.kill("SIGTERM");
await Promise.race([serveExited, sleep(10000)]);
check("uexec serve exits 0 on SIGTERM", serveExit?.code === 0, JSON.stringify(serveExit));
if (serve2 && serve2.exitCode === null) {
  const exited2 = new Promise((r) => serve2.on("exit", (code) => r(code)));
  serve2.kill("SIGTERM");
  check("the second daemon exits 0 on SIGTERM", (await Promise.race([exited2, sleep(10000)])) === 0);
}
await cleanup();
if (failed && serveErr) console.log(`daemon stderr:\n${serveErr.trimEnd()}`);
summary();
process.exit(failed === 0 ? 0 : 1);
