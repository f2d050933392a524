#!/usr/bin/env node
// bench_web.mjs: does a browser attached to a flooding process slow the process down?
//
// Target B1: "with one browser attached, throughput on the 80-column flood stays at >= 0.8x
// of the throughput with nothing attached". The workload is a tty process (24x80) that
// writes N MiB of 80-column lines (79 printable characters + "\n", the same pattern as
// bench_drain's writer; 64 MiB, --quick 8 MiB) with `cat` of a file generated in a temp dir.
// Throughput is the child's output rate through the PTY into the daemon's ring: file bytes /
// (time from the release of the flood to the reply of `process/wait {until:{exit:true}}`).
//
// One `uexec serve` (socket and token in a 0700 temp dir, WebSocket on 127.0.0.1:0) runs for
// the whole benchmark; a Node WebSocket client (the `ws` package, token as a Bearer header)
// owns every flood process. Each flood starts behind a gate,
//     sh -c 'read x; exec cat FILE'   (tty, subscribe:false)
// and the client waits until the daemon reports the shell blocked on its terminal
// (process/list awaitingInput). Then, per condition:
//   A  nothing attached: no page is open; the client sends process/wait, then releases the
//      gate with process/write "\n" and times release -> wait reply.
//   B  one browser attached: a fresh page of the web terminal is opened in headless
//      Chromium, attached to the gated process with window.uexec.attach(sessionId,
//      processId) (snapshot + subscribe as a viewer, rendering in xterm.js), then the
//      release and the timing are exactly those of A. Afterwards the page is given time to
//      catch up (process/closed seen, xterm's write queue drained) and is closed, so it
//      costs nothing during the next A round. A page that makes no progress for 5 s after
//      the exit without having seen process/closed is reported as stalled (a daemon issue,
//      see PAGE_STALL_MS), not waited for.
// The browser is Debian's Chromium, driven by default over the DevTools protocol with `ws`
// alone (--driver cdp): Playwright enables the Network domain, which makes Chromium copy
// every WebSocket frame to the driver; on a 2-core machine that copy costs B a large share
// (--driver playwright, kept for comparison).
// Rounds interleave A, B, A, B (5 rounds, --quick 2) after one untimed warm-up pair; each
// round gives one ratio B/A, and the target is judged on the median, as in the other
// benchmarks (docs/performance.md: absolute numbers on the shared 2-core machines
// drift, ratios within a run do not).
//
// Checked and reported for B: the bytes the page received in process/output (counted in
// the page by a WebSocket wrapper installed before app.js runs) against what the PTY
// produced, the process/gap notices it got (a viewer is never allowed to slow the child,
// so it may get gaps and resyncs by snapshot), the page's final seq, how long after exit the
// page was done, and that xterm's buffer ends with a flood line. CPU seconds of the daemon
// (itself and its reaped children: sh + cat), of Chromium (all its processes, by kind) and of
// this Node process are sampled from /proc over each timed interval, and so is the CPU that
// other users' processes took meanwhile (other_cpu_s: the machines are shared, so a round
// with seconds of it is noise).
//
//   node tools/bench/bench_web.mjs [--quick] [--json PATH] [--build DIR] [--modules DIR]
//                                  [--chromium PATH] [--driver cdp|playwright] [--rounds N] [--mib N]
//                                  [--trace] [--explain]
//
// --build    the meson build dir holding src/uexec (default <repo>/build)
// --modules  a node_modules directory with ws or playwright-core (whose bundled ws is used
//            when ws is missing; --driver playwright needs playwright-core) (default
//            $UEXEC_BENCH_WEB_MODULES, else <repo>/tests/e2e/web/node_modules); e.g.
//            npm install --prefix DIR playwright-core@1.65.1 ws and pass DIR/node_modules
// --chromium the browser (default $UEXEC_BENCH_CHROMIUM, else /usr/bin/chromium)
// --driver   cdp (default) or playwright, see above
// --rounds N, --mib N  override the rounds (5, --quick 2) and the flood size (64, --quick 8)
// --trace    progress and per-round details on stderr (also BENCH_WEB_TRACE=1)
// --explain  also run, in every round, four diagnostic conditions, each an informational row
//            against the same round's A: S = the daemon's screen model built by one
//            process/snapshot and then fed every chunk, nothing subscribed; V = a Node viewer
//            (another session) subscribed from seq 0, no snapshot, no browser; SV = both, the
//            daemon's side of B without the browser; BI = B with every Chromium thread under
//            SCHED_IDLE (chrt) while the flood runs, so the browser gets only CPU time nothing
//            else wants. They tell which part of B costs what.
//
// Prints a Markdown table on stdout; --json PATH writes (or appends to an existing array in
// PATH) one result object shaped like the C++ benchmarks' rows (bench_util.h Row::to_json).
// The page's files are served from <source>/src/web/page (source from <build>/meson-info),
// so its node_modules must be installed (npm ci in src/web/page).
// Everything started here (browser, daemon, flood processes) is stopped and the temp dir
// removed on every exit path, including errors, SIGINT and SIGTERM.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const MiB = 1024 * 1024;
const PAGE_STALL_MS = 5000;               // a page with no progress this long after exit is stalled
const LINE_LEN = 80;                      // 79 printable characters + "\n"
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');

// ---------------------------------------------------------------------------------------
// Command line.

function usage(code) {
  const text = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
  const from = text.findIndex((l) => l.startsWith('//   node tools/bench'));
  const to = text.findIndex((l, i) => i > from && l.startsWith('// Prints a Markdown'));
  process.stdout.write(text.slice(from, to).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
  process.exit(code);
}

function parseArgs(argv) {
  const o = {
    quick: false, json: '', build: path.join(repo, 'build'),
    modules: process.env.UEXEC_BENCH_WEB_MODULES || path.join(repo, 'tests', 'e2e', 'web', 'node_modules'),
    chromium: process.env.UEXEC_BENCH_CHROMIUM || '/usr/bin/chromium',
    rounds: 0, mib: 0, trace: !!process.env.BENCH_WEB_TRACE, explain: false,
    driver: 'cdp',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) die(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--quick') o.quick = true;
    else if (a === '--json') o.json = path.resolve(val());
    else if (a === '--build') o.build = path.resolve(val());
    else if (a === '--modules') o.modules = path.resolve(val());
    else if (a === '--chromium') o.chromium = val();
    else if (a === '--rounds') o.rounds = Number(val());
    else if (a === '--mib') o.mib = Number(val());
    else if (a === '--trace') o.trace = true;
    else if (a === '--explain') o.explain = true;
    else if (a === '--driver') o.driver = val();
    else if (a === '--peers') { /* accepted like the other benchmarks: there is no peer here */ }
    else if (a === '-h' || a === '--help') usage(0);
    else die(`unknown argument ${a} (see --help)`);
  }
  if (!o.rounds) o.rounds = o.quick ? 2 : 5;
  if (!o.mib) o.mib = o.quick ? 8 : 64;
  if (!(o.rounds >= 1) || !(o.mib >= 1)) die('--rounds and --mib must be positive numbers');
  if (o.driver !== 'cdp' && o.driver !== 'playwright') die('--driver is cdp or playwright');
  return o;
}

class BenchError extends Error {}
function die(msg) { throw new BenchError(msg); }

let opts;
try {
  opts = parseArgs(process.argv.slice(2));
} catch (err) {
  console.error(`bench_web: ${err.message}`);
  process.exit(2);
}
const trace = (...a) => { if (opts.trace) console.error('[bench_web]', ...a); };

// ---------------------------------------------------------------------------------------
// Statistics and results (the shapes of tools/bench/bench_util.h).

function median(v) {
  if (!v.length) return 0;
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
const stats = (v) => ({ min: Math.min(...v), median: median(v), max: Math.max(...v) });
const f1 = (x) => x.toFixed(1);
const f3 = (x) => x.toFixed(3);
const triple = (v) => { const s = stats(v); return `${f1(s.min)}/${f1(s.median)}/${f1(s.max)}`; };

function printTable(title, rows) {
  const out = [`\n### ${title}\n`, '| id | name | ratio min | ratio median | ratio max | target | met | absolute |',
    '|---|---|---|---|---|---|---|---|'];
  for (const r of rows) {
    const skipped = !r.ratios.length;
    const met = skipped ? 'skipped' : r.informational ? '(info)' : r.met ? 'yes' : '**no**';
    const cell = (x) => (skipped ? '-' : f3(x));
    out.push(`| ${r.id} | ${r.name} | ${cell(r.ratio_min)} | ${cell(r.ratio_median)} | ${cell(r.ratio_max)} | ` +
      `${r.target} | ${met} | ${r.absolute_text} |`);
  }
  process.stdout.write(out.join('\n') + '\n');
}

// As bench_util.h write_json: appended to the array already in `file`, if any.
function writeJson(file, rows) {
  let arr = [];
  try {
    const old = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (Array.isArray(old)) arr = old;
  } catch { /* missing or not JSON: start a new array */ }
  for (const r of rows) {
    const { absolute_text: _, ...j } = r;
    arr.push(j);
  }
  fs.writeFileSync(file, JSON.stringify(arr, null, 2) + '\n');
}

// ---------------------------------------------------------------------------------------
// Clean-up: everything we start is registered here and undone on every exit path.

const cleanups = [];                       // async functions, run last-in first-out
let cleaning = null;
function cleanup() {
  if (!cleaning) {
    cleaning = (async () => {
      while (cleanups.length) {
        const fn = cleanups.pop();
        try { await fn(); } catch (err) { trace('cleanup:', err && err.message); }
      }
    })();
  }
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    console.error(`bench_web: ${sig}, cleaning up`);
    cleanup().finally(() => process.exit(128 + os.constants.signals[sig]));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function alive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}
async function killGroup(pid, graceMs) {
  if (!pid || !alive(pid)) return;
  try { process.kill(-pid, 'SIGTERM'); } catch { try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ } }
  for (let t = 0; t < graceMs && alive(pid); t += 50) await sleep(50);
  if (alive(pid)) {
    try { process.kill(-pid, 'SIGKILL'); } catch { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  }
}

// ---------------------------------------------------------------------------------------
// /proc: CPU seconds of a process (itself, and its waited-for children) and of a tree.

const HZ = 100;                            // USER_HZ: 100 on every Linux ABI in use
function procStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');   // f[0] is field 3 (state)
    return { ppid: +f[1], utime: +f[11], stime: +f[12], cutime: +f[13], cstime: +f[14] };
  } catch { return null; }
}
function cpuOf(pid) {
  const s = procStat(pid);
  return s ? { self: (s.utime + s.stime) / HZ, children: (s.cutime + s.cstime) / HZ } : { self: 0, children: 0 };
}
// Every live process descending from `root` (root included), with its own CPU seconds.
function treeCpu(root) {
  const kids = new Map();
  const cpu = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(+name);
    if (!s) continue;
    cpu.set(+name, (s.utime + s.stime) / HZ);
    if (!kids.has(s.ppid)) kids.set(s.ppid, []);
    kids.get(s.ppid).push(+name);
  }
  const out = new Map();
  const stack = [root];
  while (stack.length) {
    const p = stack.pop();
    if (!cpu.has(p) || out.has(p)) continue;
    out.set(p, cpu.get(p));
    for (const k of kids.get(p) || []) stack.push(k);
  }
  return out;
}
function childrenOf(ppid) {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(+name);
    if (s && s.ppid === ppid) out.push(+name);
  }
  return out;
}
// CPU used between two treeCpu samples (processes that died in between are not counted:
// Chromium keeps its processes for the life of the browser).
function treeDelta(a, b) {
  let sum = 0;
  for (const [pid, t] of b) sum += t - (a.get(pid) || 0);
  return sum;
}
// CPU seconds of every user-space process that is not ours (not in this process's tree, not
// a kernel thread): how much of an interval went to other users of the shared machine.
function foreignCpu() {
  const ours = treeCpu(process.pid);
  const out = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = +name;
    if (ours.has(pid) || pid === 2) continue;
    const s = procStat(pid);
    if (!s || s.ppid === 2) continue;
    out.set(pid, (s.utime + s.stime) / HZ);
  }
  return out;
}
// The same delta per kind of Chromium process: browser, renderer, gpu, network, ...
const kinds = new Map();
function chromiumKind(pid) {
  if (!kinds.has(pid)) {
    let k = '?';
    try {
      // Chromium rewrites its process titles: the arguments may be joined by spaces.
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/);
      const type = (cmd.find((a) => a.startsWith('--type=')) || '').slice(7);
      const sub = (cmd.find((a) => a.startsWith('--utility-sub-type=')) || '').slice(19);
      k = !type ? (/chrom/.test(cmd[0]) ? 'browser' : path.basename(cmd[0] || '?'))
        : type === 'utility' ? (sub.split('.')[0] || 'utility') : type.replace(/-process$/, '');
    } catch { /* gone */ }
    kinds.set(pid, k);
  }
  return kinds.get(pid);
}
function treeDeltaByKind(a, b) {
  const out = {};
  for (const [pid, t] of b) {
    const k = chromiumKind(pid);
    out[k] = (out[k] || 0) + t - (a.get(pid) || 0);
  }
  for (const k of Object.keys(out)) out[k] = +out[k].toFixed(2);
  return out;
}
const nodeCpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

// ---------------------------------------------------------------------------------------
// The modules (playwright-core, ws) come from --modules.

function loadModules(dir) {
  const req = createRequire(path.join(dir, '_bench_web_.js'));
  const hint = `install them with\n  npm install --prefix DIR playwright-core@1.65.1 ws\n` +
    'and pass --modules DIR/node_modules (or set UEXEC_BENCH_WEB_MODULES)';
  const tryLoad = (name) => { try { return req(name); } catch { return null; } };
  // The `ws` package, else the copy playwright-core bundles (tests/e2e/web depends on
  // playwright-core alone; `playwright-core/lib/utilsBundle` is one of its exported paths).
  const bundle = tryLoad('playwright-core/lib/utilsBundle');
  const WebSocket = tryLoad('ws') || (bundle && bundle.ws);
  if (!WebSocket) die(`cannot load ws (nor playwright-core's bundled copy) from ${dir}; ${hint}`);
  let playwright = null;
  if (opts.driver === 'playwright' && !(playwright = tryLoad('playwright-core'))) {
    die(`cannot load playwright-core from ${dir}; ${hint}`);
  }
  return { WebSocket, playwright };
}

// ---------------------------------------------------------------------------------------
// A JSON-RPC client on one WebSocket.

class Rpc {
  constructor(WebSocket, url, token) {
    this.nextId = 1;
    this.pending = new Map();
    this.ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` }, perMessageDeflate: false });
    this.closed = false;
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', resolve);
      this.ws.once('error', (err) => reject(new BenchError(`WebSocket ${url}: ${err.message}`)));
    });
    this.ws.on('error', (err) => trace('daemon connection:', err.message));
    this.ws.on('message', (data) => this.onMessage(data));
    this.ws.on('close', () => {
      this.closed = true;
      for (const p of this.pending.values()) p.reject(new BenchError('daemon connection closed'));
      this.pending.clear();
    });
  }
  onMessage(data) {
    const text = data.toString();
    if (this.onRaw && this.onRaw(text)) return;    // a notification the owner of onRaw counted
    let msg;
    try { msg = JSON.parse(text); } catch { return; }
    if (msg.id == null || msg.method) return;      // notifications: none are needed here
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.error) p.reject(new BenchError(`${p.method}: ${msg.error.message} ${JSON.stringify(msg.error.data || {})}`));
    else p.resolve(msg.result);
  }
  call(method, params = {}) {
    if (this.closed) return Promise.reject(new BenchError('daemon connection closed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }
  notify(method, params = {}) { this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params })); }
  close() { if (!this.closed) this.ws.close(); }
}

// What a Node viewer (--explain) counts, the same way as the page probe below. Returns true
// for notifications (nothing else needs them).
function countMessage(b, d) {
  const m = d.indexOf('"method":"');
  if (m < 0 || m > 40) return false;
  if (d.startsWith('process/output"', m + 10)) {
    const i = d.indexOf('"chunk":"');
    const j = d.indexOf('"', i + 9);
    const pad = (d[j - 1] === '=' ? 1 : 0) + (d[j - 2] === '=' ? 1 : 0);
    b.outBytes += ((j - i - 9) / 4) * 3 - pad;
    b.outMsgs++;
    const s = d.indexOf('"seq":');
    if (s > 0) b.lastSeq = Math.max(b.lastSeq, parseInt(d.slice(s + 6, s + 26), 10));
  } else if (d.startsWith('process/gap"', m + 10)) {
    b.gaps.push(JSON.parse(d).params);
  } else if (d.startsWith('process/closed"', m + 10)) {
    b.closed++;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// The page side: installed before app.js runs. It wraps WebSocket to count what the page
// receives; the counting is cheap (no second JSON.parse of output messages).

function pageProbe() {
  const b = window.__bench = {
    msgs: 0, chars: 0, outMsgs: 0, outBytes: 0, gaps: [], exited: 0, closed: 0, lastOutSeq: 0,
    tFirstOut: 0, tLastMsg: 0, snapshots: 0,
  };
  const Orig = window.WebSocket;
  class Counted extends Orig {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (ev) => {
        const d = ev.data;
        if (typeof d !== 'string') return;
        b.msgs++;
        b.chars += d.length;
        b.tLastMsg = performance.now();
        const m = d.indexOf('"method":"');
        if (m < 0 || m > 40) {
          if (d.includes('"ansi":')) b.snapshots++;
          return;
        }
        if (d.startsWith('process/output"', m + 10)) {
          const i = d.indexOf('"chunk":"');
          const j = d.indexOf('"', i + 9);
          if (i < 0 || j < 0) return;
          const n = j - i - 9;
          const pad = (d[j - 1] === '=' ? 1 : 0) + (d[j - 2] === '=' ? 1 : 0);
          b.outBytes += (n / 4) * 3 - pad;
          b.outMsgs++;
          if (!b.tFirstOut) b.tFirstOut = performance.now();
          const s = d.indexOf('"seq":');
          if (s > 0) b.lastOutSeq = Math.max(b.lastOutSeq, parseInt(d.slice(s + 6, s + 26), 10));
        } else if (d.startsWith('process/gap"', m + 10)) {
          b.gaps.push(JSON.parse(d).params);
        } else if (d.startsWith('process/exited"', m + 10)) {
          b.exited++;
        } else if (d.startsWith('process/closed"', m + 10)) {
          b.closed++;
        }
      });
    }
  }
  window.WebSocket = Counted;
}

// ---------------------------------------------------------------------------------------
// Setup.

function sourceRoot(build) {
  try {
    const j = JSON.parse(fs.readFileSync(path.join(build, 'meson-info', 'meson-info.json'), 'utf8'));
    return j.directories && j.directories.source ? j.directories.source : '';
  } catch { return ''; }
}

// N MiB of 80-column lines: the pattern of bench_drain's writer ('!' + (i + c) % 94).
function writeFlood(file, mib) {
  const lines = Math.floor((mib * MiB) / LINE_LEN);
  const perBuf = Math.floor((64 * 1024) / LINE_LEN);
  const buf = Buffer.alloc(perBuf * LINE_LEN);
  for (let i = 0; i < perBuf; i++) {
    for (let c = 0; c < LINE_LEN - 1; c++) buf[i * LINE_LEN + c] = 33 + ((i + c) % 94);
    buf[i * LINE_LEN + LINE_LEN - 1] = 10;
  }
  const fd = fs.openSync(file, 'w', 0o600);
  try {
    for (let left = lines; left > 0; left -= perBuf) {
      const n = Math.min(left, perBuf);
      fs.writeSync(fd, buf, 0, n * LINE_LEN);
    }
  } finally { fs.closeSync(fd); }
  return { lines, bytes: lines * LINE_LEN, lastLine: buf.subarray(((lines - 1) % perBuf) * LINE_LEN, ((lines - 1) % perBuf) * LINE_LEN + LINE_LEN - 1).toString('latin1') };
}

// Starts `uexec serve` in its own process group; resolves once it printed its addresses.
async function startDaemon(uexec, dir, webRoot) {
  const args = ['serve', '--socket', path.join(dir, 'uexec.sock'), '--ws', '127.0.0.1:0'];
  if (webRoot) args.push('--web-root', webRoot);
  const child = spawn(uexec, args, { cwd: dir, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  cleanups.push(async () => {
    trace('stopping the daemon', child.pid);
    await killGroup(child.pid, 3000);
  });
  let log = '';
  const info = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new BenchError(`uexec serve printed no address in 10 s:\n${log}`)), 10000);
    child.once('error', (err) => { clearTimeout(timer); reject(new BenchError(`cannot run ${uexec}: ${err.message}`)); });
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new BenchError(`uexec serve exited (${code ?? sig}) before it was ready:\n${log}`));
    });
    const found = {};
    child.stderr.on('data', (d) => {
      if (log.length < 1e5) log += d.toString();
      const ws = /listening on (ws:\/\/[^ ]+\/) \(token in ([^)]+)\)/.exec(log);
      const web = /web terminal at (http:\/\/\S+)/.exec(log);
      if (ws) { found.ws = ws[1]; found.tokenFile = ws[2]; }
      if (web) found.web = web[1];
      if (found.ws && found.web && !found.done) {
        found.done = true;
        clearTimeout(timer);
        resolve(found);
      }
    });
  });
  child.removeAllListeners('exit');
  child.on('exit', (code, sig) => { if (!cleaning) console.error(`bench_web: uexec serve exited (${code ?? sig})`); });
  child.stderr.on('data', () => {});       // keep draining its log
  info.token = fs.readFileSync(info.tokenFile, 'utf8').trim();
  info.pid = child.pid;
  return info;
}

// Two ways to drive the browser, both giving pages with addInitScript(fn), goto(url),
// evaluate(fn, arg) and close():
//
//   cdp (default)  Chromium started here with --remote-debugging-port=0 and driven over the
//                  DevTools protocol with `ws`, using only Target, Page.navigate,
//                  Page.addScriptToEvaluateOnNewDocument and Runtime.evaluate. No Network
//                  domain, so the browser works as a user's does.
//   playwright     playwright-core's chromium.launch. Playwright enables the Network domain
//                  on every page, so Chromium copies every WebSocket frame's payload to the
//                  DevTools pipe (Network.webSocketFrameReceived) and Node parses it: extra
//                  CPU in the browser process and here, on the machine the flood shares.
async function launchBrowser(mods, exe, dir) {
  if (!fs.existsSync(exe)) die(`no browser at ${exe} (apt-get install chromium, or --chromium PATH)`);
  return opts.driver === 'playwright' ? launchPlaywright(mods.playwright, exe) : launchCdp(mods.WebSocket, exe, dir);
}

async function launchPlaywright(playwright, exe) {
  if (!playwright) die('--driver playwright needs playwright-core in --modules');
  const before = childrenOf(process.pid);
  const browser = await playwright.chromium.launch({
    executablePath: exe, headless: true, args: CHROMIUM_ARGS, timeout: 60000,
  });
  // Playwright starts the browser as our child, leader of its own process group.
  const pid = childrenOf(process.pid).find((p) => !before.includes(p)) || 0;
  cleanups.push(async () => {
    trace('closing the browser');
    await Promise.race([browser.close().catch(() => {}), sleep(5000)]);
    if (pid) await killGroup(pid, 1000);
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  return { pid, newPage: () => context.newPage() };
}

// A DevTools-protocol client on the browser's WebSocket (flattened target sessions).
class Cdp {
  constructor(WebSocket, url) {
    this.nextId = 1;
    this.pending = new Map();
    this.ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 256 * MiB });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', resolve);
      this.ws.once('error', (err) => reject(new BenchError(`DevTools ${url}: ${err.message}`)));
    });
    this.ws.on('error', (err) => trace('DevTools connection:', err.message));
    this.ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      const p = msg.id != null && this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new BenchError(`${p.method}: ${msg.error.message}`));
      else p.resolve(msg.result);
    });
    this.ws.on('close', () => {
      for (const p of this.pending.values()) p.reject(new BenchError('DevTools connection closed'));
      this.pending.clear();
    });
  }
  send(method, params = {}, sessionId = undefined) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.ws.send(JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params }));
    });
  }
}

async function launchCdp(WebSocket, exe, dir) {
  const profile = path.join(dir, 'chromium-profile');
  const args = [...CHROMIUM_ARGS, '--remote-debugging-port=0', `--user-data-dir=${profile}`,
    '--window-size=1280,800', 'about:blank'];
  const child = spawn(exe, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  cleanups.push(async () => {
    trace('closing the browser');
    await killGroup(child.pid, 2000);
  });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new BenchError(`${exe} printed no DevTools address in 30 s:\n${log}`)), 30000);
    child.once('error', (err) => { clearTimeout(timer); reject(new BenchError(`cannot run ${exe}: ${err.message}`)); });
    child.once('exit', (code, sig) => { clearTimeout(timer); reject(new BenchError(`${exe} exited (${code ?? sig}):\n${log}`)); });
    child.stderr.on('data', (d) => {
      if (log.length < 1e5) log += d.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
  });
  child.removeAllListeners('exit');
  const cdp = new Cdp(WebSocket, url);
  await cdp.opened;
  cleanups.push(async () => {
    await Promise.race([cdp.send('Browser.close').catch(() => {}), sleep(2000)]);
    cdp.ws.close();
  });
  const newPage = async () => {
    const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
    const send = (m, p) => cdp.send(m, p, sessionId);
    await send('Page.enable');              // for addScriptToEvaluateOnNewDocument (few events)
    const evaluate = async (fn, arg) => {
      const expression = `(${fn})(${arg === undefined ? '' : JSON.stringify(arg)})`;
      const r = await send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
      if (r.exceptionDetails) {
        const e = r.exceptionDetails;
        die(`in the page: ${(e.exception && e.exception.description) || e.text}`);
      }
      return r.result.value;
    };
    return {
      addInitScript: (fn) => send('Page.addScriptToEvaluateOnNewDocument', { source: `(${fn})();` }),
      goto: async (u) => {
        await send('Page.navigate', { url: u });
        await waitFor('the page to load', () => evaluate(() => document.readyState === 'complete' && !!window.uexec)
          .catch(() => false), 30000, 50);
      },
      evaluate,
      close: () => cdp.send('Target.closeTarget', { targetId }),
    };
  };
  return { pid: child.pid, newPage };
}

// ---------------------------------------------------------------------------------------
// One timed flood.

async function waitFor(what, fn, timeoutMs, everyMs = 20) {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (performance.now() > end) die(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

async function runFlood(ctx, cond, label) {
  const { rpc, daemon, flood, sessionId } = ctx;
  const processId = `flood-${label}`;
  const start = await rpc.call('process/start', {
    processId, argv: ['/bin/sh', '-c', 'read x; exec cat "$0"', flood.file], cwd: ctx.dir,
    env: { PATH: '/usr/bin:/bin', HOME: ctx.dir, LANG: 'C' }, tty: true, subscribe: false,
  });
  ctx.childPids.add(start.pid);
  // The gate: the shell blocked reading its terminal.
  await waitFor(`${processId} to wait at its gate`, async () => {
    const r = await rpc.call('process/list', {});
    const e = r.processes.find((p) => p.processId === processId);
    if (e && e.state !== 'running' && e.state !== 'starting') die(`${processId} ended before its release: ${JSON.stringify(e)}`);
    return e && e.awaitingInput;
  }, 10000);

  let page = null;
  if (cond === 'B' || cond === 'BI') {
    page = await ctx.browser.newPage();
    await page.addInitScript(pageProbe);
    await page.goto(ctx.daemonInfo.web, { waitUntil: 'load' });
    const ok = await page.evaluate(() => Promise.race([window.uexec.ready,
      new Promise((r) => setTimeout(() => r(false), 15000))]));
    if (!ok) die('the web page did not connect to the daemon');
    await page.evaluate(([s, p]) => window.uexec.attach(s, p), [sessionId, processId]);
    const st = await page.evaluate(() => ({
      attached: window.uexec.attached, role: window.uexec.role, mode: window.uexec.mode, lastSeq: window.uexec.lastSeq,
      cols: window.uexec.term.cols, rows: window.uexec.term.rows,
    }));
    if (!st.attached || st.attached.processId !== processId) die(`the page did not attach ${processId}: ${JSON.stringify(st)}`);
    const e = (await rpc.call('process/list', {})).processes.find((p) => p.processId === processId);
    if (!e || !(e.subscribers >= 1)) die(`the daemon shows no subscriber on ${processId}: ${JSON.stringify(e)}`);
    trace(`${label}: page attached as ${st.role} (${st.mode}, seq ${st.lastSeq}, ${st.cols}x${st.rows}), ` +
      `daemon subscribers ${e.subscribers}`);
    await sleep(200);                       // let the page settle (first paint, list poll)
  } else {
    // --explain only: S = the screen model is built (a snapshot) and then fed every chunk,
    // nothing subscribed; V = a Node viewer (another session) subscribed from seq 0, no
    // snapshot; SV = both (the daemon's side of B without a browser).
    if (cond === 'S' || cond === 'SV') await rpc.call('process/snapshot', { processId, format: 'ansi' });
    if (cond === 'V' || cond === 'SV') {
      ctx.viewerCount = { outBytes: 0, outMsgs: 0, gaps: [], closed: 0, lastSeq: 0 };
      ctx.viewer.onRaw = (d) => countMessage(ctx.viewerCount, d);
      await ctx.viewer.call('process/subscribe', { processId, sessionId, afterSeq: 0, role: 'viewer' });
    }
    await sleep(200);
  }

  // --explain BI: B with every Chromium thread under SCHED_IDLE for the timed interval, so
  // that the browser runs only on CPU time nothing else wants. BI near A says B1 is set by the
  // browser's share of the machine's two cores; BI near B says the daemon's side sets it.
  // Every change must take: a browser left under SCHED_IDLE would spoil every later round
  // (returning to SCHED_OTHER needs CAP_SYS_NICE or RLIMIT_NICE; chrt may be missing).
  const idle = (policy) => {
    for (const pid of treeCpu(ctx.browserPid).keys()) {
      const r = spawnSync('chrt', ['-a', policy, '-p', '0', String(pid)], { stdio: 'ignore' });
      if (r.error || (r.status !== 0 && alive(pid))) die(`chrt ${policy} ${pid} failed: BI needs chrt and CAP_SYS_NICE`);
    }
  };
  if (cond === 'BI') idle('-i');
  const cpu0 = { daemon: cpuOf(daemon.pid), chromium: ctx.browserPid ? treeCpu(ctx.browserPid) : new Map(), node: nodeCpu(),
    foreign: foreignCpu() };
  const waitP = rpc.call('process/wait', { processId, until: { exit: true }, timeoutMs: 600000 });
  const wall0 = Date.now();
  const t0 = performance.now();
  const wrote = rpc.call('process/write', { processId, chunk: Buffer.from('\n').toString('base64'), writeId: 'go' });
  const w = await waitP;
  const t1 = performance.now();
  const cpu1 = { daemon: cpuOf(daemon.pid), chromium: ctx.browserPid ? treeCpu(ctx.browserPid) : new Map(), node: nodeCpu(),
    foreign: foreignCpu() };
  if (cond === 'BI') idle('-o');
  const wr = await wrote;
  if (wr.status !== 'accepted') die(`release of ${processId}: ${JSON.stringify(wr)}`);
  if (w.fired !== 'exit' || w.exitCode !== 0) die(`${processId} did not exit cleanly: ${JSON.stringify(w)}`);

  const seconds = (t1 - t0) / 1000;
  const r = {
    cond, seconds, mib_s: flood.bytes / MiB / seconds,
    cpu: {
      daemon_s: cpu1.daemon.self - cpu0.daemon.self,
      child_s: cpu1.daemon.children - cpu0.daemon.children,    // sh + cat, reaped by the daemon
      chromium_s: treeDelta(cpu0.chromium, cpu1.chromium),
      chromium_by_kind: treeDeltaByKind(cpu0.chromium, cpu1.chromium),
      node_s: cpu1.node - cpu0.node,
    },
  };
  // What other users of the machine ran meanwhile (their builds and tests): noise.
  r.cpu.other_s = treeDelta(cpu0.foreign, cpu1.foreign);
  const info = (await rpc.call('process/list', {})).processes.find((p) => p.processId === processId);
  r.pty_bytes = info ? info.outputBytes : 0;
  if (info && info.exitedAtMs) r.server_seconds = (info.exitedAtMs - wall0) / 1000;

  if (cond === 'V' || cond === 'SV') {
    const vc = ctx.viewerCount;
    // A viewer that is behind when the output ends may be left there: the daemon's
    // drain callback resumes only the processes of the connection's own session. Noted as
    // "stalled", then the viewer re-subscribes from its last seq to collect the rest.
    let stalled = false;
    try {
      await waitFor('the Node viewer to see process/closed', () => vc.closed > 0, 5000, 20);
    } catch {
      stalled = true;
      trace(`${label}: the Node viewer stalled at seq ${vc.lastSeq} (${vc.outBytes} bytes) of ${info ? info.nextSeq - 1 : '?'}`);
      await ctx.viewer.call('process/subscribe', { processId, sessionId, afterSeq: vc.lastSeq, role: 'viewer' });
      await waitFor('the Node viewer to see process/closed after re-subscribing', () => vc.closed > 0, 20000, 20);
    }
    r.browser = { stalled, out_bytes: vc.outBytes, out_msgs: vc.outMsgs, gaps: vc.gaps.length,
      gap_bytes: vc.gaps.reduce((x, g) => x + (g.bytes || 0), 0), gap_reasons: [...new Set(vc.gaps.map((g) => g.reason))] };
    ctx.viewer.onRaw = null;
  }
  if (page) {
    // Let the page catch up: process/closed received and xterm's write queue drained. A page
    // that is still behind when the output ends can be left there for good (the daemon
    // resumes a drained connection's pushes only for its own session's processes, and a
    // viewer's process belongs to another session): after PAGE_STALL_MS of no progress it
    // counts as stalled and is closed as it is.
    const tb = performance.now();
    let stalled = false;
    for (let seen = -1, since = performance.now(); ;) {
      const p = await page.evaluate(() => {
        const b = window.__bench;
        return { closed: b.closed, n: b.outMsgs + b.gaps.length + b.snapshots, seq: window.uexec.lastSeq };
      });
      if (p.closed > 0) break;
      if (p.n + p.seq !== seen) { seen = p.n + p.seq; since = performance.now(); }
      if (performance.now() - since > PAGE_STALL_MS) { stalled = true; break; }
      if (performance.now() - tb > 120000) die(`the page has not caught up with ${processId} after 120 s`);
      await sleep(50);
    }
    await page.evaluate(() => new Promise((res) => window.uexec.term.write('', res)));
    const cpu2 = treeCpu(ctx.browserPid);
    const b = await page.evaluate((want) => {
      const t = window.uexec.term;
      const buf = t.buffer.active;
      const lines = [];
      for (let y = buf.length - 1; y >= 0 && lines.length < t.rows + 4; y--) {
        const l = buf.getLine(y);
        lines.push(l ? l.translateToString(true) : '');
      }
      return {
        bench: window.__bench, lastSeq: window.uexec.lastSeq, mode: window.uexec.mode,
        bufferLines: buf.length, hasLastLine: lines.includes(want), bottom: lines.slice(0, 6).reverse(),
      };
    }, flood.lastLine);
    r.browser = {
      stalled, out_bytes: b.bench.outBytes, out_msgs: b.bench.outMsgs, ws_chars: b.bench.chars,
      gaps: b.bench.gaps.length, gap_bytes: b.bench.gaps.reduce((s, g) => s + (g.bytes || 0), 0),
      gap_reasons: [...new Set(b.bench.gaps.map((g) => g.reason))],
      snapshots: b.bench.snapshots, last_seq: b.lastSeq, final_seq: info ? info.nextSeq - 1 : null,
      done_after_exit_s: (performance.now() - tb) / 1000, chromium_catch_up_s: treeDelta(cpu1.chromium, cpu2),
      buffer_lines: b.bufferLines, last_line_shown: b.hasLastLine,
    };
    if (!(b.bench.outBytes > 0)) die(`the page received no output of ${processId}`);
    if (!stalled && !b.hasLastLine) {
      // Not fatal (the throughput is measured all the same), but reported: the page said
      // it was done and its screen does not show the end of the output.
      console.error(`bench_web: ${label}: the page's terminal does not end with the flood's last line: ` +
        `${JSON.stringify(b.bottom)} ${JSON.stringify({ ...b.bench, gaps: b.bench.gaps.slice(-3) })}`);
    }
    if (stalled) trace(`${label}: the page stalled at seq ${b.lastSeq} of ${r.browser.final_seq}`);
    await page.close();
  }
  trace(`${label}: ${cond} ${f1(r.mib_s)} MiB/s in ${r.seconds.toFixed(3)} s ` +
    `(server ${r.server_seconds != null ? r.server_seconds.toFixed(3) : '?'} s); cpu ${JSON.stringify(
      Object.fromEntries(Object.entries(r.cpu).map(([k, v]) => [k, typeof v === 'number' ? +v.toFixed(2) : v])))}` +
    (r.browser ? `; browser ${JSON.stringify(r.browser)}` : ''));
  return r;
}

// ---------------------------------------------------------------------------------------
// Main.

// --explain: extra conditions per round, each against the same round's A (informational).
const EXPLAIN = [
  { cond: 'S', name: 'explain: screen model only (process/snapshot, then nothing subscribed) / nothing attached' },
  { cond: 'V', name: 'explain: one Node viewer subscribed (no snapshot, no browser) / nothing attached' },
  { cond: 'SV', name: 'explain: snapshot + Node viewer (the daemon side of B, no browser) / nothing attached' },
  { cond: 'BI', name: 'explain: the browser attached as in B, every Chromium thread SCHED_IDLE / nothing attached' },
];

async function main() {
  const uexec = path.join(opts.build, 'src', 'uexec');
  if (!fs.existsSync(uexec)) die(`${uexec} is missing; build first: ninja -C ${opts.build}`);
  const src = sourceRoot(opts.build) || repo;
  const webRoot = path.join(src, 'src', 'web', 'page');
  if (!fs.existsSync(path.join(webRoot, 'node_modules', '@xterm', 'xterm'))) {
    die(`${webRoot}/node_modules is missing: (cd ${webRoot} && npm ci --ignore-scripts)`);
  }
  const mods = loadModules(opts.modules);
  const { WebSocket } = mods;

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uexec-bench-web-'));
  fs.chmodSync(dir, 0o700);
  cleanups.push(async () => { fs.rmSync(dir, { recursive: true, force: true }); });
  const flood = { file: path.join(dir, 'flood.txt'), ...writeFlood(path.join(dir, 'flood.txt'), opts.mib) };
  trace(`flood: ${flood.lines} lines, ${flood.bytes} bytes in ${flood.file}`);

  const daemon = await startDaemon(uexec, dir, webRoot);
  trace(`daemon ${daemon.pid}: ${daemon.ws}, page ${daemon.web.replace(/token=.*/, 'token=…')}`);
  const childPids = new Set();
  // Flood processes left behind by a daemon that died: each is its own process group.
  cleanups.push(async () => { for (const pid of childPids) await killGroup(pid, 0); });

  const rpc = new Rpc(WebSocket, daemon.ws, daemon.token);
  cleanups.push(async () => rpc.close());
  await rpc.opened;
  const init = await rpc.call('initialize', { clientName: 'bench_web', capabilities: { extensions: true } });
  rpc.notify('initialized', {});

  const browser = await launchBrowser(mods, opts.chromium, dir);
  const ctx = { rpc, daemon, daemonInfo: daemon, flood, dir, sessionId: init.sessionId, childPids, browser, browserPid: browser.pid };
  if (opts.explain) {
    ctx.viewer = new Rpc(WebSocket, daemon.ws, daemon.token);
    cleanups.push(async () => ctx.viewer.close());
    await ctx.viewer.opened;
    await ctx.viewer.call('initialize', { clientName: 'bench_web-viewer', capabilities: { extensions: true } });
    ctx.viewer.notify('initialized', {});
  }

  // Warm-up (untimed): the first page load, JIT, page cache of the flood file.
  await runFlood(ctx, 'A', 'warmup-A');
  await runFlood(ctx, 'B', 'warmup-B');

  const rounds = [];
  for (let i = 0; i < opts.rounds; i++) {
    const a = await runFlood(ctx, 'A', `${i}-A`);
    const b = await runFlood(ctx, 'B', `${i}-B`);
    const round = { a, b, ratio: b.mib_s / a.mib_s, extra: {} };
    if (opts.explain) {
      for (const c of EXPLAIN) round.extra[c.cond] = await runFlood(ctx, c.cond, `${i}-${c.cond}`);
    }
    rounds.push(round);
    trace(`round ${i}: ratio ${f3(b.mib_s / a.mib_s)}`);
  }

  const ratios = rounds.map((r) => r.ratio);
  const s = stats(ratios);
  const A = rounds.map((r) => r.a);
  const B = rounds.map((r) => r.b);
  const sum = (v) => v.reduce((x, y) => x + y, 0);
  const perMiB = (list, key) => list.map((r) => (r.cpu[key] * 1000) / (flood.bytes / MiB));
  const absolute = {
    mib: opts.mib,
    file_bytes: flood.bytes,
    pty_bytes: B[0].pty_bytes,
    nothing_attached_mib_s: A.map((r) => r.mib_s),
    browser_attached_mib_s: B.map((r) => r.mib_s),
    browser_received_bytes: B.map((r) => r.browser.out_bytes),
    browser_gaps: B.map((r) => r.browser.gaps),
    browser_gap_bytes: B.map((r) => r.browser.gap_bytes),
    browser_gap_reasons: [...new Set(B.flatMap((r) => r.browser.gap_reasons))],
    browser_snapshots: B.map((r) => r.browser.snapshots),
    browser_done_after_exit_s: B.map((r) => r.browser.done_after_exit_s),
    browser_stalled: B.map((r) => r.browser.stalled),
    browser_last_line_shown: B.map((r) => r.browser.last_line_shown),
    browser_last_seq: B.map((r) => r.browser.last_seq),
    final_seq: B.map((r) => r.browser.final_seq),
    // CPU seconds the machine spent on other processes during each timed interval (noise).
    other_cpu_s_nothing_attached: A.map((r) => r.cpu.other_s),
    other_cpu_s_browser_attached: B.map((r) => r.cpu.other_s),
    cpu_ms_per_mib: {
      daemon_nothing_attached: perMiB(A, 'daemon_s'),
      daemon_browser_attached: perMiB(B, 'daemon_s'),
      child_nothing_attached: perMiB(A, 'child_s'),
      child_browser_attached: perMiB(B, 'child_s'),
      chromium_browser_attached: perMiB(B, 'chromium_s'),
      chromium_nothing_attached: perMiB(A, 'chromium_s'),
    },
  };
  const recv = sum(B.map((r) => r.browser.out_bytes)) / B.length;
  const gaps = B.map((r) => r.browser.gaps);
  const pageStalls = B.filter((r) => r.browser.stalled).length;
  const wrongScreens = B.filter((r) => !r.browser.stalled && !r.browser.last_line_shown).length;
  const cpuMed = (list, key) => f1(median(perMiB(list, key)));
  const row = {
    id: 'B1',
    name: `flood throughput, one browser attached / nothing attached, 80-col lines (${opts.mib} MiB)`,
    target: '>= 0.8',
    ratios,
    ratio_min: s.min,
    ratio_median: s.median,
    ratio_max: s.max,
    met: s.median >= 0.8,
    rounds: ratios.length,
    absolute,
    absolute_text: `none ${triple(absolute.nothing_attached_mib_s)} MiB/s; browser ${triple(absolute.browser_attached_mib_s)} MiB/s; ` +
      `page got ${f1(recv / MiB)} of ${f1(absolute.pty_bytes / MiB)} MiB, gaps ${gaps.join('/')}` +
      (pageStalls ? `, page stalled before process/closed in ${pageStalls} of ${B.length} rounds` : '') +
      (wrongScreens ? `, page's final screen without the last line in ${wrongScreens} of ${B.length} rounds` : '') + '; ' +
      `daemon CPU ${cpuMed(A, 'daemon_s')} -> ${cpuMed(B, 'daemon_s')} ms/MiB, chromium ${cpuMed(B, 'chromium_s')} ms/MiB`,
  };
  const rows = [row];
  if (opts.explain) {
    for (const c of EXPLAIN) {
      const X = rounds.map((r) => r.extra[c.cond]);
      const rs = rounds.map((r) => r.extra[c.cond].mib_s / r.a.mib_s);
      const st = stats(rs);
      const stalls = X.filter((x) => x.browser && x.browser.stalled).length;
      const got = X[0].browser ? `; viewer got ${f1(median(X.map((x) => x.browser.out_bytes)) / MiB)} MiB, gaps ` +
        X.map((x) => x.browser.gaps).join('/') + (stalls ? `, stalled at the end in ${stalls} of ${X.length} rounds` : '') : '';
      rows.push({
        id: `B1-${c.cond}`, name: c.name, target: 'info', informational: true, ratios: rs,
        ratio_min: st.min, ratio_median: st.median, ratio_max: st.max, met: true, rounds: rs.length,
        absolute: { mib_s: X.map((x) => x.mib_s), daemon_cpu_ms_per_mib: perMiB(X, 'daemon_s'),
          viewer_received_bytes: X.map((x) => (x.browser ? x.browser.out_bytes : 0)),
          viewer_stalled: X.map((x) => !!(x.browser && x.browser.stalled)) },
        absolute_text: `${triple(X.map((x) => x.mib_s))} MiB/s; daemon CPU ${cpuMed(X, 'daemon_s')} ms/MiB${got}`,
      });
    }
  }
  printTable(`bench_web (${ratios.length} rounds)`, rows);
  if (opts.json) writeJson(opts.json, rows);
}

let code = 0;
try {
  await main();
} catch (err) {
  // After SIGINT/SIGTERM the clean-up closes what main() is waiting on: no second message.
  if (!cleaning) console.error(`bench_web: ${err instanceof BenchError ? err.message : (err && err.stack) || err}`);
  code = 1;
}
await cleanup();
process.exit(code);
