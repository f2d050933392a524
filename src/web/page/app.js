/*
 * app.js: the uexec web page (plain browser JavaScript: no bundler, no framework).
 *
 * The page speaks JSON-RPC 2.0 to `uexec serve` over one WebSocket (one message per text
 * frame, subprotocols "uexec.v1" + "uexec.auth.<token>"). It lists every process on the
 * daemon, shows one of them ("attached") in an xterm.js terminal, and types into it.
 *
 * Structure, top to bottom:
 *   1. Config       URL parameters (token, attach target, dev `ws` override), constants.
 *   2. Helpers      DOM shortcuts, base64 <-> bytes, formatting.
 *   3. Rpc          one WebSocket: requests matched by id, notifications by method.
 *   4. Connection   connect, initialize (resuming the page's session), reconnect with backoff.
 *   5. Terminal     xterm.js + fit addon; keyboard input, owner resize, title.
 *   6. Attach       snapshot + subscribe (or replay), output / exit / gap handling, resync.
 *   7. List         process/list polling, rows, activity sparklines, kill, viewers & grants.
 *   7b. Recording   the attached process's output as an asciicast v2 download.
 *   8. Boot         button wiring, window.uexec for tests, start.
 *
 * Identity: a process is the pair (owner sessionId, processId). The page's own session id
 * lives in sessionStorage, so a reload resumes the same session and keeps ownership of the
 * shells it started. The attached process is kept in the URL fragment
 * (#token=…&attach=<sessionId>/<processId>), so a reload re-attaches it.
 */
'use strict';

(() => {
  // ---------------------------------------------------------------------------------------
  // 1. Config
  // ---------------------------------------------------------------------------------------

  const LIST_INTERVAL_MS = 1000;       // process/list polling period
  const SPARK_SAMPLES = 60;            // activity samples kept per process (one per poll)
  const RESIZE_DEBOUNCE_MS = 100;      // owner: delay before process/resize after a fit
  const BACKOFF_MS = [250, 500, 1000, 2000, 4000, 5000];  // reconnect delays, last repeats
  const BUSY_RETRIES = 4;              // sessionBusy on resume: retries (~4 s) before a new session
  const WRITE_SLICE = 64 * 1024;       // input bytes per process/write (large pastes)
  const SESSION_KEY = 'uexec.sessionId';
  const SHELL_ARGV = ['/bin/bash', '-i'];
  const SHELL_ENV = { inherit: 'all', set: { TERM: 'xterm-256color', COLORTERM: 'truecolor' } };

  // Parameters come from the fragment (never sent to the server), with ?query as fallback.
  //   token   the daemon's access token (required)
  //   attach  <ownerSessionId>/<processId>: the process to show
  //   ws      dev override of the WebSocket endpoint: "host:port" or a full ws:// URL
  const urlParams = readUrlParams();

  function readUrlParams() {
    const query = new URLSearchParams(location.search);
    const frag = new URLSearchParams(location.hash.replace(/^#/, ''));
    const get = (name) => frag.get(name) || query.get(name) || '';
    return { token: get('token'), attach: parseTarget(get('attach')), ws: get('ws') };
  }

  // "<sessionId>/<processId>" → {sessionId, processId}. Session ids are UUIDs (no '/'), so
  // the first '/' separates them; a processId may itself contain '/'.
  function parseTarget(text) {
    const i = text ? text.indexOf('/') : -1;
    if (i <= 0 || i === text.length - 1) return null;
    return { sessionId: text.slice(0, i), processId: text.slice(i + 1) };
  }

  function wsUrl() {
    const o = urlParams.ws;
    if (/^wss?:\/\//.test(o)) return o;
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    return `${scheme}://${o || location.host}/`;
  }

  // ---------------------------------------------------------------------------------------
  // 2. Helpers
  // ---------------------------------------------------------------------------------------

  const $ = (sel) => document.querySelector(sel);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  };
  const keyOf = (t) => `${t.sessionId}/${t.processId}`;
  const sameTarget = (a, b) => !!a && !!b && a.sessionId === b.sessionId && a.processId === b.processId;
  const utf8 = new TextEncoder();

  function base64ToBytes(b64) {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function bytesToBase64(bytes) {
    let bin = '';
    for (let i = 0; i < bytes.length; i += 0x8000) {
      bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(bin);
  }

  function randomHex(n) {
    const b = crypto.getRandomValues(new Uint8Array(n));
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  function fmtAge(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m`;
    if (s < 86400) return `${Math.floor(s / 3600)}h`;
    return `${Math.floor(s / 86400)}d`;
  }

  function fmtRate(bps) {
    if (bps < 1) return '0 B/s';
    if (bps < 1024) return `${Math.round(bps)} B/s`;
    if (bps < 1024 * 1024) return `${(bps / 1024).toFixed(1)} KiB/s`;
    return `${(bps / 1024 / 1024).toFixed(1)} MiB/s`;
  }

  // Paths arrive as file:// URIs (an absolute path is passed through).
  function uriPath(uri) {
    const text = uri || '';
    if (!text.startsWith('file://')) return text;
    try { return decodeURIComponent(new URL(text).pathname); } catch { return text; }
  }

  // A cwd for display: the path, with the user's home as "~".
  function cwdPath(uri) {
    let path = uriPath(uri);
    const home = conn.homeDir;
    if (home && (path === home || path.startsWith(home + '/'))) path = '~' + path.slice(home.length);
    return path;
  }

  // The exit status of a list entry: {text, cls} where cls picks the colour.
  function exitStatus(p) {
    if (p.state === 'running' || p.state === 'starting') return { text: p.state, cls: 'st-running' };
    if (p.signal) return { text: p.signal, cls: 'st-fail' };
    if (p.exitCode === 0) return { text: 'exit 0', cls: 'st-ok' };
    if (p.exitCode != null) return { text: `exit ${p.exitCode}`, cls: 'st-fail' };
    return { text: p.state || '?', cls: 'st-neutral' };
  }

  const disconnectedError = () => new RpcError({ message: 'not connected', data: { kind: 'disconnected' } });
  const isLive = (p) => !!p && (p.state === 'running' || p.state === 'starting');

  // Status line: short messages, errors stay until replaced, info fades after a while.
  let statusTimer = 0;
  function showStatus(text, kind = 'info') {
    const s = $('#status');
    s.textContent = text;
    s.className = kind;
    clearTimeout(statusTimer);
    if (kind === 'info') statusTimer = setTimeout(() => { s.textContent = ''; }, 6000);
  }
  function showError(err, context) {
    const msg = (err && err.message) || String(err);
    showStatus(context ? `${context}: ${msg}` : msg, 'error');
  }

  // ---------------------------------------------------------------------------------------
  // 3. Rpc: JSON-RPC 2.0 over one WebSocket
  // ---------------------------------------------------------------------------------------

  // An error response ({code, message, data:{kind,…}}) or a local failure (kind
  // "disconnected" when the socket closed before the answer).
  class RpcError extends Error {
    constructor(e) {
      super(e.message || 'request failed');
      this.code = e.code;
      this.data = e.data || {};
      this.kind = this.data.kind || '';
    }
  }

  class Rpc {
    constructor(url, protocols) {
      this.nextId = 1;
      this.pending = new Map();      // id → {resolve, reject}
      this.onopen = null;
      this.onclose = null;
      this.onnotification = null;    // (method, params)
      this.ws = new WebSocket(url, protocols);
      this.ws.addEventListener('open', () => this.onopen && this.onopen());
      this.ws.addEventListener('message', (ev) => this._message(ev));
      this.ws.addEventListener('close', (ev) => this._closed(ev));
    }

    get open() { return this.ws.readyState === WebSocket.OPEN; }

    call(method, params = {}) {
      if (!this.open) return Promise.reject(disconnectedError());
      const id = this.nextId++;
      return new Promise((resolve, reject) => {
        this.pending.set(id, { resolve, reject });
        this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      });
    }

    notify(method, params = {}) {
      if (this.open) this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
    }

    close() {
      if (this.ws.readyState <= WebSocket.OPEN) this.ws.close(1000, 'bye');
    }

    _message(ev) {
      let msg;
      try { msg = JSON.parse(ev.data); } catch { console.warn('uexec: unparsable message', ev.data); return; }
      if (msg.method) {
        if (msg.id != null) {
          // A server→client request (approval/request): this page never declared
          // `approvals`, so none should come. Answer anyway so nothing waits on us.
          const error = { code: -32601, message: `method not found: ${msg.method}` };
          this.ws.send(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error }));
        } else if (this.onnotification) {
          this.onnotification(msg.method, msg.params || {});
        }
        return;
      }
      const p = this.pending.get(msg.id);
      if (!p) {
        // id -1: the server could not tie an error to a request (parse error, too large).
        if (msg.error) console.warn('uexec: unmatched error', msg.error);
        return;
      }
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new RpcError(msg.error));
      else p.resolve(msg.result);
    }

    _closed(ev) {
      const err = new RpcError({ message: 'connection closed', data: { kind: 'disconnected' } });
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      if (this.onclose) this.onclose(ev);
    }
  }

  // ---------------------------------------------------------------------------------------
  // 4. Connection: connect, initialize (resume), reconnect
  // ---------------------------------------------------------------------------------------

  const conn = {
    rpc: null,
    ready: false,                  // initialize + initialized done on the current socket
    everReady: false,
    sessionId: sessionStorage.getItem(SESSION_KEY) || null,
    homeDir: '',
    attempt: 0,                    // consecutive failed connects (backoff index)
    busyRetries: 0,
    retryTimer: 0,
  };

  let resolveReady;
  const readyPromise = new Promise((r) => { resolveReady = r; });

  // Calls on the current connection; fails with kind "disconnected" while there is none.
  function call(method, params) {
    if (!conn.rpc || !conn.ready) return Promise.reject(disconnectedError());
    return conn.rpc.call(method, params);
  }

  function setConnState(state, text) {
    const c = $('#conn');
    c.textContent = text || state;
    c.dataset.state = state;
    document.body.dataset.state = state === 'connected' ? 'connected' : 'disconnected';
    $('#new-shell').disabled = state !== 'connected';
  }

  function connect() {
    clearTimeout(conn.retryTimer);
    setConnState(conn.everReady ? 'reconnecting' : 'connecting',
      conn.everReady ? 'reconnecting…' : 'connecting…');
    let rpc;
    try {
      rpc = new Rpc(wsUrl(), ['uexec.v1', 'uexec.auth.' + urlParams.token]);
    } catch (err) {
      showError(err, 'WebSocket');
      scheduleReconnect();
      return;
    }
    conn.rpc = rpc;
    rpc.onnotification = onNotification;
    rpc.onopen = () => {
      handshake(rpc).catch((err) => {
        if (rpc !== conn.rpc) return;
        if (err.kind !== 'sessionBusy') showError(err, 'initialize');
        rpc.close();               // onclose schedules the retry
      });
    };
    rpc.onclose = () => {
      if (rpc !== conn.rpc) return;
      conn.rpc = null;
      conn.ready = false;
      onDisconnected();
      scheduleReconnect();
    };
  }

  function scheduleReconnect() {
    const delay = BACKOFF_MS[Math.min(conn.attempt, BACKOFF_MS.length - 1)];
    conn.attempt++;
    if (conn.everReady) showOffline(delay);
    if (!conn.everReady && conn.attempt >= 3) {
      showStatus(`cannot connect to ${wsUrl()}: is \`uexec serve\` running, and is the token in ` +
        'this URL the current one? (It is in the `token` file next to the daemon\'s socket.)', 'error');
    }
    conn.retryTimer = setTimeout(connect, delay);
  }

  // The daemon went away after the page had it: a banner over the (dimmed) terminal says so,
  // counts down to the next try and offers to try now. The header's dot alone looked like a
  // hang (issue 20). Hidden again once a handshake succeeds.
  function showOffline(delayMs) {
    const until = Date.now() + delayMs;
    const render = () => {
      const s = Math.ceil((until - Date.now()) / 1000);
      setText($('#offline-text'), 'Lost the connection to the daemon. ' +
        (s > 0 ? `Trying again in ${s} s (attempt ${conn.attempt}).` : 'Trying again…'));
    };
    render();
    clearInterval(conn.offlineTimer);
    conn.offlineTimer = setInterval(render, 250);
    $('#offline').hidden = false;
    $('#terminal-wrap').classList.add('away');
  }

  function hideOffline() {
    clearInterval(conn.offlineTimer);
    $('#offline').hidden = true;
    $('#terminal-wrap').classList.remove('away');
  }

  // initialize → initialized. Resumes the stored session when there is one, so the page
  // stays the owner of the shells it started; falls back to a new session if that fails.
  async function handshake(rpc) {
    // detachedTtlMs -1: the shells this page starts outlive the tab, as in tmux; while this
    // session is away, viewers of its shells may type (the daemon's rule).
    const base = { clientName: 'uexec-web', capabilities: { extensions: true }, detachedTtlMs: -1 };
    let result = null;
    if (conn.sessionId) {
      try {
        result = await rpc.call('initialize', { ...base, resumeSessionId: conn.sessionId });
      } catch (err) {
        // sessionBusy: the previous connection (say, before a reload) is not closed yet on
        // the server side; retry the resume shortly rather than giving up the identity.
        if (err.kind === 'sessionBusy' && conn.busyRetries++ < BUSY_RETRIES) throw err;
        if (err.kind === 'disconnected') throw err;
        showStatus(`previous session not resumed (${err.message}); started a new one`, 'info');
        forgetSession();
      }
    }
    // A failed initialize does not count as "the" initialize, so it may be sent again on
    // the same connection. Should the server ever refuse that, the retry (new connection,
    // no resume id any more) starts fresh.
    if (!result) result = await rpc.call('initialize', base);
    if (rpc !== conn.rpc) return;
    rpc.notify('initialized', {});

    conn.sessionId = result.sessionId;
    sessionStorage.setItem(SESSION_KEY, conn.sessionId);
    const home = result.environmentInfo && result.environmentInfo.userHomeDir;
    conn.homeDir = home ? uriPath(home) : '';
    conn.ready = true;
    conn.attempt = 0;
    conn.busyRetries = 0;
    const wasReady = conn.everReady;
    conn.everReady = true;
    setConnState('connected');
    hideOffline();
    if (wasReady) showStatus(result.resumed ? 'reconnected' : 'reconnected with a new session', 'info');

    await refreshList();
    startPolling();
    // Re-attach (resync) what was on screen, or what the URL names on first load.
    const target = att.target || (!wasReady ? urlParams.attach : null);
    if (target) attach(target, { resync: sameTarget(target, att.target) });
    else showNotice();
    resolveReady(true);
  }

  function forgetSession() {
    conn.sessionId = null;
    sessionStorage.removeItem(SESSION_KEY);
  }

  function onDisconnected() {
    // At once, not only when the next try starts: the header must not say connected meanwhile.
    setConnState(conn.everReady ? 'reconnecting' : 'connecting', conn.everReady ? 'reconnecting…' : 'connecting…');
    stopPolling();
    att.accepting = false;         // output resumes only after a resync
    att.gen++;                     // abandon any attach in flight
    updateToolbar();
  }

  function onNotification(method, p) {
    switch (method) {
      case 'process/output': onOutput(p); break;
      case 'process/exited': onExited(p); break;
      case 'process/closed': onClosed(p); break;
      case 'process/gap': onGap(p); break;
      default: break;              // unknown notifications are ignored
    }
  }

  // ---------------------------------------------------------------------------------------
  // 5. Terminal
  // ---------------------------------------------------------------------------------------

  // The UMD builds define window.Terminal and window.FitAddon.FitAddon.
  if (typeof window.Terminal !== 'function' || !window.FitAddon) {
    document.body.dataset.state = 'disconnected';
    $('#status').textContent =
      'xterm.js did not load (/vendor/xterm/xterm.js): the daemon cannot find its node_modules.';
    $('#status').className = 'error';
    return;
  }

  const term = new window.Terminal({
    scrollback: 5000,
    cursorBlink: true,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace',
    fontSize: 13,
    theme: {
      background: '#0b0e14', foreground: '#d6dae2', cursor: '#d6dae2', cursorAccent: '#0b0e14',
      selectionBackground: '#2f4466',
      black: '#1c2029', red: '#ef6b73', green: '#8fc97a', yellow: '#e5c07b',
      blue: '#61afef', magenta: '#c678dd', cyan: '#56b6c2', white: '#c8ccd4',
      brightBlack: '#5c6370', brightRed: '#ff7b85', brightGreen: '#a5e08f', brightYellow: '#f0d08a',
      brightBlue: '#7cc0ff', brightMagenta: '#d792ea', brightCyan: '#6fd0dc', brightWhite: '#f2f4f8',
    },
  });
  const fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open($('#terminal'));

  // Typing, paste and control keys (Ctrl-C arrives as "\x03") all come through onData;
  // onBinary carries the few non-UTF-8 reports (old-style mouse encoding).
  term.onData((data) => sendInput(utf8.encode(data)));
  term.onBinary((data) => sendInput(Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff)));
  term.onTitleChange((t) => setTitle(t));
  term.onResize(() => scheduleRemoteResize());

  // The owner's terminal fills the pane; a viewer's keeps the process's size (section 6).
  new ResizeObserver(() => requestAnimationFrame(fitTerminal)).observe($('#terminal-wrap'));

  function fitTerminal() {
    if (att.target && att.role === 'viewer') return sizeToProcess(att.info);
    try { fit.fit(); } catch { /* not laid out yet */ }
  }

  // Makes the xterm exactly rows×cols of the process (viewers follow the owner's size).
  function sizeToProcess(info) {
    const size = info && info.size;
    if (size && (size.rows !== term.rows || size.cols !== term.cols)) term.resize(size.cols, size.rows);
  }

  let resizeTimer = 0;
  function scheduleRemoteResize() {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      const t = att.target;
      if (!t || att.role !== 'owner' || !att.accepting || !att.info || !att.info.tty || !isLive(att.info)) return;
      const { rows, cols } = term;
      const size = att.info.size;
      if (size && size.rows === rows && size.cols === cols) return;
      call('process/resize', { processId: t.processId, sessionId: t.sessionId, rows, cols })
        .then(() => { if (sameTarget(t, att.target) && att.info) att.info.size = { rows, cols }; })
        .catch((err) => { if (err.kind !== 'disconnected') showError(err, 'resize'); });
    }, RESIZE_DEBOUNCE_MS);
  }

  // Input goes to the attached process unless it is known to refuse it (read-only viewer).
  function sendInput(bytes) {
    const t = att.target;
    if (!t || att.readOnly || !conn.ready || !bytes.length) return;
    if (att.info && !isLive(att.info)) { showStatus('the process has exited; input is closed', 'info'); return; }
    for (let i = 0; i < bytes.length; i += WRITE_SLICE) {
      const chunk = bytesToBase64(bytes.subarray(i, i + WRITE_SLICE));
      call('process/write', { processId: t.processId, sessionId: t.sessionId, chunk })
        .then((r) => {
          if (r && r.status && r.status !== 'accepted') showStatus(`input not delivered: ${r.status}`, 'info');
        })
        .catch((err) => {
          if (err.kind === 'readOnly') { if (sameTarget(t, att.target)) setReadOnly(true); return; }
          if (err.kind !== 'disconnected') showError(err, 'write');
        });
    }
  }

  function setReadOnly(ro) {
    if (att.readOnly === ro) return;
    att.readOnly = ro;
    if (ro) showStatus('read-only: the owner has not granted you input', 'info');
    updateToolbar();
  }

  let titleFromTerm = '';
  function setTitle(t) {
    titleFromTerm = t || '';
    updateToolbar();
  }

  // ---------------------------------------------------------------------------------------
  // 6. Attach: snapshot + subscribe, output, exit, gaps
  // ---------------------------------------------------------------------------------------

  const att = {
    target: null,        // {sessionId (owner), processId} or null
    gen: 0,              // bumped on every (re)attach/detach; stale async steps check it
    accepting: false,    // output for target is written only when true
    lastSeq: 0,          // last seq written to the terminal (chunks, exited, closed)
    mode: null,          // 'live' (we started it) | 'snapshot' | 'replay' (no snapshot)
    role: null,          // 'owner' | 'viewer'
    readOnly: false,     // input refused (viewer without grant)
    info: null,          // latest process/list entry of the target
    listed: false,       // the target has been seen in a list (so its absence means gone)
    exit: null,          // process/exited params, written as a note at process/closed
    resyncing: false,
    resyncAgain: false,
  };
  let snapshotSupported = null;       // null unknown, true/false once tried

  function isAttachedTo(p) {
    const t = att.target;
    return !!t && p.processId === t.processId && (p.sessionId || conn.sessionId) === t.sessionId;
  }

  // Attaches `target`. With resync, re-synchronises the same process after a reconnect or
  // a gap. The screen comes from process/snapshot (format "ansi": it repaints screen,
  // cursor and modes on a fresh terminal of the same size); process/subscribe with
  // afterSeq = snapshot.seq then pushes exactly the output after it. Without a snapshot
  // (pipe process, or a server without the screen model), subscribe replays the retained
  // output from the start (or, on resync, from the last seq already on screen).
  async function attach(target, { resync = false } = {}) {
    const gen = ++att.gen;
    const prev = att.target;
    if (prev && !sameTarget(prev, target)) unsubscribe(prev);
    if (!resync || !sameTarget(prev, target)) {
      att.readOnly = false;
      att.exit = null;
      titleFromTerm = '';
    }
    att.target = { sessionId: target.sessionId, processId: target.processId };
    att.accepting = false;
    unsubscribed.delete(keyOf(target));
    hideNotice();
    updateFragment();
    renderSelection();

    let info = findProcess(target);
    if (!info) { await refreshList(); info = findProcess(target); }
    if (gen !== att.gen) return;
    if (!info) {
      detach(`process ${target.processId} is not on the server any more`);
      return;
    }
    att.info = info;
    att.listed = true;
    att.role = info.sessionId === conn.sessionId ? 'owner' : 'viewer';
    applyViewerEntry(info);
    term.options.convertEol = !info.tty;   // pipe output has bare \n
    updateToolbar();

    const { processId, sessionId } = att.target;
    let afterSeq = 0;
    try {
      if (!info.tty) throw new RpcError({ message: 'not a tty', data: { kind: 'notTty' } });
      const snap = await call('process/snapshot', { processId, sessionId, format: 'ansi' });
      if (gen !== att.gen) return;
      snapshotSupported = true;
      term.reset();
      if (snap.rows !== term.rows || snap.cols !== term.cols) term.resize(snap.cols, snap.rows);
      term.write(snap.ansi || '');
      titleFromTerm = snap.title || '';
      att.mode = 'snapshot';
      att.lastSeq = snap.seq;
      afterSeq = snap.seq;
      // Chunks after the snapshot can only arrive after its reply: accept them now. The
      // subscribe below re-sends any already written; the seq check drops those.
      att.accepting = true;
    } catch (err) {
      if (gen !== att.gen || err.kind === 'disconnected') return;   // reconnect re-attaches
      if (err.kind !== 'notTty') snapshotSupported = false;
      // On a resync without snapshot, the screen already holds everything up to lastSeq.
      const keep = resync && sameTarget(prev, target) && att.lastSeq > 0 &&
        (att.mode === 'replay' || att.mode === 'live');
      att.mode = 'replay';
      if (keep) {
        afterSeq = att.lastSeq;
      } else {
        term.reset();
        att.lastSeq = 0;
        if (att.role === 'viewer') sizeToProcess(info);
      }
    }

    try {
      await call('process/subscribe', { processId, sessionId, afterSeq, role: att.role });
    } catch (err) {
      if (gen !== att.gen || err.kind === 'disconnected') return;
      detach(`cannot attach ${processId}: ${err.message}`, true);
      return;
    }
    if (gen !== att.gen) return;
    // In replay mode output is accepted from here on: uexec answers subscribe before it
    // pushes the replayed chunks, and anything before that reply came from an older
    // subscription (already on screen, or wiped by the reset above).
    att.accepting = true;
    fitTerminal();
    if (att.role === 'owner') scheduleRemoteResize();
    // A viewer's input right (canInput) changed with this subscribe: learn it now, not at
    // the next poll.
    if (att.role === 'viewer') refreshList();
    updateToolbar();
    if (!resync) term.focus();
  }

  // Starts a new interactive shell, owned by this page, and attaches it live: the starting
  // session is subscribed from seq 1 and the start reply precedes any of its output.
  async function newShell() {
    if (!conn.ready) return;
    const processId = 'web-' + randomHex(6);
    const prev = att.target;
    if (prev) unsubscribe(prev);
    try { fit.fit(); } catch { /* keep the current size */ }
    const rows = term.rows;
    const cols = term.cols;

    const gen = ++att.gen;
    Object.assign(att, {
      target: { sessionId: conn.sessionId, processId }, accepting: true, lastSeq: 0, mode: 'live',
      role: 'owner', readOnly: false, exit: null, listed: false,
      info: {
        sessionId: conn.sessionId, processId, argv: SHELL_ARGV, tty: true, state: 'starting', size: { rows, cols },
      },
    });
    titleFromTerm = '';
    term.reset();
    term.options.convertEol = false;
    hideNotice();
    updateFragment();
    updateToolbar();
    term.focus();
    try {
      await call('process/start',
        { processId, argv: SHELL_ARGV, tty: true, size: { rows, cols }, envPolicy: SHELL_ENV });
      if (gen === att.gen) att.info.state = 'running';
      updateToolbar();
    } catch (err) {
      if (gen === att.gen) detach(null);
      showError(err, 'New shell');
    }
    refreshList();
  }

  // Stops showing the current process (its output is unsubscribed; the process keeps going).
  function detach(message, isError) {
    const prev = att.target;
    att.gen++;
    Object.assign(att, {
      target: null, accepting: false, role: null, info: null, readOnly: false, mode: null, exit: null, listed: false,
    });
    if (prev) unsubscribe(prev);
    updateFragment();
    renderSelection();
    updateToolbar();
    showNotice();
    if (message) showStatus(message, isError ? 'error' : 'info');
  }

  // Output of processes we do not show is not wanted: unsubscribe once (a subscription
  // survives a resume, and started shells are subscribed automatically).
  const unsubscribed = new Set();
  function unsubscribe(t) {
    unsubscribed.add(keyOf(t));
    call('process/unsubscribe', { processId: t.processId, sessionId: t.sessionId }).catch(() => {});
  }
  function dropStray(p) {
    const t = { sessionId: p.sessionId || conn.sessionId, processId: p.processId };
    if (!unsubscribed.has(keyOf(t)) && !sameTarget(t, att.target)) unsubscribe(t);
  }

  function onOutput(p) {
    if (!isAttachedTo(p)) { dropStray(p); return; }
    if (!att.accepting || p.seq <= att.lastSeq) return;   // not in sync yet, or a duplicate
    att.lastSeq = p.seq;
    term.write(base64ToBytes(p.chunk));
  }

  function onExited(p) {
    if (!isAttachedTo(p) || !att.accepting || p.seq <= att.lastSeq) return;
    att.lastSeq = p.seq;
    att.exit = p;
    if (att.info) Object.assign(att.info, { state: 'exited', exitCode: p.exitCode, signal: p.signal || null });
    updateToolbar();
    refreshList();
  }

  // `closed` is the last event: all output is in, so the exit note goes after it.
  function onClosed(p) {
    if (!isAttachedTo(p) || !att.accepting || p.seq <= att.lastSeq) return;
    att.lastSeq = p.seq;
    if (att.info) att.info.state = 'closed';
    const e = att.exit;
    if (e) {
      const how = e.signal ? `killed by ${e.signal}` : `exited with code ${e.exitCode}`;
      const colour = e.signal || e.exitCode !== 0 ? '31' : '32';
      term.write(`\r\n\x1b[2;${colour}m[process ${how}]\x1b[0m\r\n`);
    }
    updateToolbar();
  }

  // Output was dropped (slow consumer) or evicted before we read it. With a snapshot the
  // screen is rebuilt (resync). Without one, evicted bytes are gone for good: mark the
  // hole in the terminal and go on; slow-consumer bytes may still be retained, so the
  // resync re-subscribes after the last seq on screen.
  function onGap(p) {
    if (!isAttachedTo(p) || p.toSeq <= att.lastSeq) return;
    const canSnapshot = snapshotSupported !== false && att.info && att.info.tty;
    if (!canSnapshot && p.reason !== 'slowConsumer') {
      term.write(`\r\n\x1b[2m[… ${p.bytes} bytes of output not retained …]\x1b[0m\r\n`);
      att.lastSeq = p.toSeq;
      return;
    }
    resync();
  }

  function resync() {
    if (!att.target) return;
    if (att.resyncing) { att.resyncAgain = true; return; }
    att.resyncing = true;
    attach(att.target, { resync: true }).finally(() => {
      att.resyncing = false;
      if (att.resyncAgain) { att.resyncAgain = false; resync(); }
    });
  }

  // The fragment keeps the token (and dev override) and names the attached process.
  function updateFragment() {
    const frag = new URLSearchParams(location.hash.replace(/^#/, ''));
    const parts = [];
    for (const [k, v] of frag) if (k !== 'attach') parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
    const t = att.target;
    if (t) parts.push(`attach=${encodeURIComponent(t.sessionId)}/${encodeURIComponent(t.processId)}`);
    const hash = parts.length ? '#' + parts.join('&') : '';
    if (hash !== location.hash) history.replaceState(null, '', location.pathname + location.search + hash);
  }

  // ---------------------------------------------------------------------------------------
  // 7. List: process/list polling, rows, sparklines, viewers
  // ---------------------------------------------------------------------------------------

  const list = {
    procs: [],
    rows: new Map(),     // key → {li, parts…, samples:[], lastBytes, lastAt}
    timer: 0,
    inFlight: null,
  };

  function findProcess(t) {
    return list.procs.find((p) => p.sessionId === t.sessionId && p.processId === t.processId) || null;
  }

  function startPolling() {
    stopPolling();
    list.timer = setInterval(refreshList, LIST_INTERVAL_MS);
  }
  function stopPolling() {
    clearInterval(list.timer);
    list.timer = 0;
  }

  function refreshList() {
    if (!conn.ready) return Promise.resolve();
    if (list.inFlight) return list.inFlight;
    list.inFlight = call('process/list', { all: true })
      .then((r) => applyList((r && r.processes) || []))
      .catch((err) => { if (err.kind !== 'disconnected') showError(err, 'list'); })
      .finally(() => { list.inFlight = null; });
    return list.inFlight;
  }

  // Total bytes of output so far. `outputBytes` is the daemon's counter; older daemons
  // only report what is retained plus what was evicted, which adds up to the same.
  function totalBytes(p) {
    if (typeof p.outputBytes === 'number') return p.outputBytes;
    return (p.retainedBytes || 0) + ((p.omitted && p.omitted.bytes) || 0);
  }

  function applyList(procs) {
    const now = performance.now();
    // Live processes first, newest first within each group.
    procs.sort((a, b) => (isLive(b) - isLive(a)) || (b.startedAtMs || 0) - (a.startedAtMs || 0));
    list.procs = procs;

    const ul = $('#sessions');
    const seen = new Set();
    procs.forEach((p, i) => {
      const key = keyOf(p);
      seen.add(key);
      let row = list.rows.get(key);
      if (!row) { row = makeRow(p); list.rows.set(key, row); }
      // One sample per poll period: an extra refresh in between (after a kill, say) does
      // not add a sample; the next poll's sample covers the whole interval.
      const bytes = totalBytes(p);
      const dt = (now - row.lastAt) / 1000;
      if (row.lastBytes == null || dt >= LIST_INTERVAL_MS / 2000) {
        if (row.lastBytes != null) {
          row.samples.push(Math.max(0, bytes - row.lastBytes) / dt);
          if (row.samples.length > SPARK_SAMPLES) row.samples.splice(0, row.samples.length - SPARK_SAMPLES);
        }
        row.lastBytes = bytes;
        row.lastAt = now;
      }
      updateRow(row, p);
      if (ul.children[i] !== row.li) ul.insertBefore(row.li, ul.children[i] || null);
    });
    for (const [key, row] of list.rows) {
      if (!seen.has(key)) { row.li.remove(); list.rows.delete(key); }
    }
    $('#sessions-empty').hidden = procs.length > 0;
    $('#session-count').textContent = procs.length ? String(procs.length) : '';
    renderSelection();

    // Keep the attached process's entry current: size, state, viewers and grants.
    if (att.target) {
      const info = findProcess(att.target);
      if (info) {
        att.info = info;
        att.listed = true;
        applyViewerEntry(info);
        if (att.role === 'viewer' && att.accepting) sizeToProcess(info);
      } else if (att.listed) {
        // Gone from the list: ended longer ago than the server retains processes.
        detach(`process ${att.target.processId} ended and is no longer retained by the server`);
        return;
      }
    }
    updateToolbar();
  }

  function makeRow(p) {
    const li = el('li', 'session');
    li.dataset.processId = p.processId;
    li.dataset.sessionId = p.sessionId;
    li.tabIndex = 0;
    const top = el('div', 'line top');
    const dot = el('span', 'dot');
    const cmd = el('span', 'cmd');
    const kill = el('button', 'kill', '×');
    kill.type = 'button';
    kill.title = 'Terminate this process';
    top.append(dot, cmd, kill);
    const cwd = el('div', 'line cwd');
    const bottom = el('div', 'line bottom');
    const meta = el('span', 'meta');
    const owner = el('span', 'owner');
    const exit = el('span', 'exit');
    const spark = el('canvas', 'spark');
    const rate = el('span', 'rate');
    bottom.append(exit, owner, meta, spark, rate);
    li.append(top, cwd, bottom);

    const target = { sessionId: p.sessionId, processId: p.processId };
    li.addEventListener('click', () => {
      showSessions(false);  // a phone's drawer closes on the chosen terminal, attached already or not
      if (sameTarget(target, att.target)) term.focus();
      else attach(target);
    });
    li.addEventListener('keydown', (ev) => {
      if (ev.target === li && (ev.key === 'Enter' || ev.key === ' ')) { ev.preventDefault(); attach(target); }
    });
    kill.addEventListener('click', (ev) => {
      ev.stopPropagation();
      confirmThen(kill, 'kill?', () => terminate(target));
    });
    return { li, dot, cmd, kill, cwd, meta, owner, exit, spark, rate, samples: [], lastBytes: null, lastAt: 0 };
  }

  function updateRow(row, p) {
    const cmdText = (p.argv || []).join(' ') || p.processId;
    setText(row.cmd, cmdText.length > 80 ? cmdText.slice(0, 79) + '…' : cmdText);
    row.cmd.title = `${cmdText}\n${p.processId}${p.pid ? ` (pid ${p.pid})` : ''}`;
    const path = cwdPath(p.cwd);
    setText(row.cwd, path.length > 44 ? '…' + path.slice(-43) : path);
    row.cwd.title = path;
    const st = exitStatus(p);
    setText(row.exit, st.text);
    row.exit.className = `exit ${st.cls}`;
    row.li.dataset.state = p.state;
    row.dot.className = `dot ${st.cls}`;
    const mine = p.sessionId === conn.sessionId;
    setText(row.owner, mine ? 'mine' : (p.clientName || 'other'));
    row.owner.className = mine ? 'owner mine' : 'owner';
    row.owner.title = `owner session ${p.sessionId}`;
    const age = p.startedAtMs ? fmtAge(Date.now() - p.startedAtMs) : '';
    setText(row.meta, p.tty ? age : [age, 'pipe'].filter(Boolean).join(' · '));
    if (p.startedAtMs) row.meta.title = `started ${new Date(p.startedAtMs).toLocaleString()}`;
    // A hollow dot: the process is blocked reading its terminal (a prompt).
    row.dot.classList.toggle('awaiting', !!p.awaitingInput && isLive(p));
    row.dot.title = p.awaitingInput && isLive(p) ? 'waiting for input' : st.text;
    row.kill.hidden = !isLive(p);
    const rate = row.samples.length ? row.samples[row.samples.length - 1] : 0;
    row.spark.title = `output: ${fmtRate(rate)} (last ${SPARK_SAMPLES} s)`;
    drawSpark(row.spark, row.samples, mine);
    // The number beside the chart, so the chart needs no axis: now, or "quiet".
    setText(row.rate, !isLive(p) ? '' : rate >= 1 ? fmtRate(rate) : 'quiet');
    row.rate.title = row.spark.title;
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  // A bar-less area chart of bytes/s over the last SPARK_SAMPLES polls, right-aligned so
  // the newest sample is at the right edge. The scale floor keeps a prompt's few bytes
  // from filling the whole height.
  function drawSpark(canvas, samples, mine) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 72;
    const h = canvas.clientHeight || 16;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
    }
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.fillStyle = 'rgba(255,255,255,0.035)';
    g.fillRect(0, 0, w, h);
    g.fillStyle = 'rgba(255,255,255,0.14)';
    g.fillRect(0, h - 1, w, 1);
    if (!samples.length) return;
    const max = Math.max(512, ...samples);
    const step = w / (SPARK_SAMPLES - 1);
    const x0 = w - (samples.length - 1) * step;
    const y = (v) => h - 1 - (v / max) * (h - 2);
    g.beginPath();
    g.moveTo(x0, h);
    samples.forEach((v, i) => g.lineTo(x0 + i * step, y(v)));
    g.lineTo(w, h);
    g.closePath();
    g.fillStyle = mine ? 'rgba(97,175,239,0.30)' : 'rgba(198,120,221,0.28)';
    g.fill();
    g.beginPath();
    samples.forEach((v, i) => (i ? g.lineTo(x0 + i * step, y(v)) : g.moveTo(x0, y(v))));
    g.strokeStyle = mine ? '#61afef' : '#c678dd';
    g.lineWidth = 1.5;
    g.stroke();
  }

  function renderSelection() {
    const current = att.target ? keyOf(att.target) : null;
    for (const [key, row] of list.rows) row.li.classList.toggle('selected', key === current);
  }

  // A kill asks first: the first click arms the button ("Kill?", for 3 s), the second kills.
  // No modal dialog: it would block the page's other sessions and every test driving it.
  function confirmThen(button, armedText, action) {
    if (button.dataset.armed === '1') {
      clearTimeout(button._disarm);
      disarm(button);
      action();
      return;
    }
    button.dataset.armed = '1';
    button.classList.add('armed');
    button.dataset.text = button.textContent;
    button.dataset.tip = button.title;
    button.textContent = armedText;
    button.title = 'Click again to terminate it';
    button._disarm = setTimeout(() => disarm(button), 3000);
  }

  function disarm(button) {
    if (button.dataset.armed !== '1') return;
    delete button.dataset.armed;
    button.classList.remove('armed');
    button.textContent = button.dataset.text;
    button.title = button.dataset.tip;
  }

  function terminate(t) {
    showStatus(`terminating ${t.processId}…`, 'info');
    call('process/terminate', { processId: t.processId, sessionId: t.sessionId })
      .then(() => refreshList())
      .catch((err) => showError(err, 'kill'));
  }

  // A viewer learns its grant from the list: the viewers entry with its own session id.
  function applyViewerEntry(info) {
    if (att.role !== 'viewer') return;
    if (typeof info.canInput === 'boolean') { att.readOnly = !info.canInput; return; }
    if (!Array.isArray(info.viewers)) return;
    const me = info.viewers.find((v) => v.sessionId === conn.sessionId);
    if (me) att.readOnly = !me.input;
  }

  // Toolbar: title, role badge, viewers (owner), buttons; plus xterm's stdin switch.
  function updateToolbar() {
    const t = att.target;
    const info = att.info;
    const live = isLive(info);
    const cmd = info && info.argv ? info.argv.join(' ') : t ? t.processId : '';
    setText($('#title'), t ? (titleFromTerm || cmd) : 'no terminal attached');
    $('#title').title = t ? `${cmd}\n${t.sessionId}/${t.processId}` : '';

    const role = $('#role');
    role.hidden = !t;
    let roleText = '';
    // Plain words: whose it is, and whether typing here reaches it.
    if (att.role === 'owner') roleText = 'yours';
    else if (att.role === 'viewer') {
      const known = !!info && Array.isArray(info.viewers) &&
        info.viewers.some((v) => v.sessionId === conn.sessionId);
      const by = info && info.clientName ? `started by ${info.clientName}` : 'shared';
      roleText = att.readOnly ? `${by} — watching only`
        : info && info.ownerConnected === false ? `${by} — you can type`
        : known ? `${by} — you may type` : by;
    }
    setText(role, roleText);
    role.dataset.role = att.role || '';
    role.classList.toggle('readonly', att.readOnly);

    $('#kill').disabled = !t || !live || !conn.ready;
    $('#save-cast').disabled = !t || !conn.ready;
    $('#ctrl-c').disabled = !t || !live || !conn.ready || att.readOnly;
    term.options.disableStdin = !t || att.readOnly;
    document.body.dataset.attached = t ? keyOf(t) : '';
    document.body.dataset.role = att.role || '';
    renderViewers();
  }

  // The owner sees who else watches the attached process and may grant them input.
  let viewersSig = '';
  function renderViewers() {
    const box = $('#viewers');
    const info = att.info;
    const viewers = att.role === 'owner' && info && Array.isArray(info.viewers)
      ? info.viewers.filter((v) => v.sessionId !== conn.sessionId) : [];
    const sig = JSON.stringify(viewers.map((v) => [v.sessionId, v.clientName, !!v.input]));
    if (sig === viewersSig) return;
    viewersSig = sig;
    box.replaceChildren();
    box.hidden = viewers.length === 0;
    if (!viewers.length) return;
    box.append(el('span', 'muted', viewers.length === 1 ? '1 viewer:' : `${viewers.length} viewers:`));
    for (const v of viewers) {
      const label = el('label', 'viewer');
      label.title = `session ${v.sessionId}`;
      const box2 = el('input');
      box2.type = 'checkbox';
      box2.checked = !!v.input;
      box2.dataset.grantee = v.sessionId;
      box2.addEventListener('change', () => grant(v.sessionId, box2.checked, box2));
      label.append(box2, el('span', null, `${v.clientName || 'viewer'} ${v.sessionId.slice(0, 8)}`),
        el('span', 'muted', ' allow input'));
      box.append(label);
    }
  }

  function grant(grantee, input, checkbox) {
    const t = att.target;
    if (!t) return;
    call('process/grant', { processId: t.processId, sessionId: t.sessionId, grantee, input })
      .then(() => { showStatus(input ? 'input granted' : 'input revoked', 'info'); refreshList(); })
      .catch((err) => { checkbox.checked = !input; showError(err, 'grant'); });
  }

  // The overlay over the terminal area: hints when nothing is attached.
  function showNotice(html) {
    const n = $('#notice');
    if (html) n.replaceChildren(...html);
    else n.replaceChildren(el('p', null, 'Select a process on the left, or start a New shell.'));
    n.hidden = false;
  }
  function hideNotice() { $('#notice').hidden = true; }

  // ---------------------------------------------------------------------------------------
  // 8. Boot
  // ---------------------------------------------------------------------------------------

  $('#new-shell').addEventListener('click', newShell);
  // ---------------------------------------------------------------------------------------
  // 7b. Recording
  // ---------------------------------------------------------------------------------------

  // The retained output of `t` (process/read with `timestamps`, page by page) as asciicast v2:
  // byte for byte what `uexec logs ID --asciicast` writes (src/cli/asciicast.h describes the
  // format's choices; tests/e2e/asciicast_test.py compares the two files).
  async function castOf(t, info) {
    const tty = !!(info && info.tty);  // as the CLI: a process the list does not show is taken for a pipe one
    const size = (info && info.size) || {};
    let head = `{"version": 2, "width": ${tty && size.cols ? size.cols : 80}, "height": ${tty && size.rows ? size.rows : 24}`;
    const ts = info && info.startedAtMs ? Math.floor(info.startedAtMs / 1000) : 0;
    if (ts > 0) head += `, "timestamp": ${ts}`;
    const command = ((info && info.argv) || []).join(' ');
    if (command) head += `, "command": ${JSON.stringify(command)}`;
    const lines = [head + '}\n'];
    const event = (ms, text) => `[${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')}, "o", ${JSON.stringify(text)}]\n`;
    const decoder = new TextDecoder('utf-8');
    let lastMs = 0;
    const flush = () => { const rest = decoder.decode(); if (rest) lines.push(event(lastMs, rest)); };
    let after = 0;
    let omitted = null;
    let gapDone = false;
    const chunks = [];
    for (;;) {
      const r = await call('process/read', { processId: t.processId, sessionId: t.sessionId, afterSeq: after,
        maxBytes: 1 << 20, timestamps: true });
      if (r.omitted) omitted = r.omitted;
      const got = r.chunks || [];
      chunks.push(...got);
      const last = got.length ? got[got.length - 1].seq : after;
      if (last <= after) break;
      after = last;
    }
    gapDone = !omitted;
    for (const ch of chunks) {
      const ms = ch.atMs || 0;
      if (!gapDone && ch.seq > omitted.toSeq) {
        flush();
        lastMs = ms;
        lines.push(event(ms, `\r\n[... ${omitted.bytes} bytes not retained ...]\r\n`));
        gapDone = true;
      }
      lastMs = ms;
      let bytes = base64ToBytes(ch.chunk);
      if (!tty) {  // pipes: "\n" becomes "\r\n", as a terminal needs it
        const out = [];
        for (const b of bytes) { if (b === 10) out.push(13); out.push(b); }
        bytes = Uint8Array.from(out);
      }
      const text = decoder.decode(bytes, { stream: true });
      if (text) lines.push(event(ms, text));
    }
    flush();
    return lines.join('');
  }

  async function saveCast() {
    const t = att.target;
    if (!t) return;
    try {
      const cast = await castOf(t, findProcess(t));
      const a = document.createElement('a');
      a.href = URL.createObjectURL(new Blob([cast], { type: 'application/x-asciicast' }));
      a.download = `uexec-${t.processId}.cast`;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    } catch (err) {
      showError(err, 'recording');
    }
  }

  // The Sessions button (narrow screens): the process list as a drawer; attaching closes it.
  function showSessions(open) {
    document.body.classList.toggle('sessions-open', open);
    $('#toggle-sessions').setAttribute('aria-expanded', String(open));
  }
  $('#toggle-sessions').addEventListener('click', () =>
    showSessions(!document.body.classList.contains('sessions-open')));

  $('#kill').addEventListener('click', () => {
    const t = att.target;
    if (!t) return;
    const b = $('#kill');
    if (b.dataset.armed === '1' && b.dataset.for !== keyOf(t)) { clearTimeout(b._disarm); disarm(b); }
    b.dataset.for = keyOf(t);  // armed for this process only: attaching another disarms it
    confirmThen(b, 'Kill?', () => terminate(t));
  });
  $('#save-cast').addEventListener('click', saveCast);
  $('#ctrl-c').addEventListener('click', () => {
    const t = att.target;
    if (!t) return;
    call('process/signal', { processId: t.processId, sessionId: t.sessionId, signal: 'interrupt' })
      .catch((err) => showError(err, 'Ctrl-C'));
    term.focus();
  });
  // A hand-edited fragment (#…&attach=sid/pid) attaches that process.
  window.addEventListener('hashchange', () => {
    const t = parseTarget(new URLSearchParams(location.hash.replace(/^#/, '')).get('attach') || '');
    if (t && conn.ready && !sameTarget(t, att.target)) attach(t);
  });
  // Close the socket on the way out, so the session is detached at once and a reload can
  // resume it without running into sessionBusy.
  window.addEventListener('pagehide', () => { if (conn.rpc) conn.rpc.close(); });

  $('#offline-retry').addEventListener('click', () => {
    if (conn.rpc) return;          // a try is under way already
    conn.attempt = 0;
    connect();
  });

  // For tests and the curious: live views of the page's state.
  window.uexec = {
    ready: readyPromise,
    get sessionId() { return conn.sessionId; },
    get attached() { return att.target ? { ...att.target } : null; },
    get role() { return att.role; },
    get lastSeq() { return att.lastSeq; },
    get mode() { return att.mode; },
    get readOnly() { return att.readOnly; },
    get connected() { return conn.ready; },
    term,
    call,
    attach: (sessionId, processId) => attach({ sessionId, processId }),
    castOf: (sessionId, processId) => castOf({ sessionId, processId }, findProcess({ sessionId, processId })),
  };

  fitTerminal();
  if (!urlParams.token) {
    setConnState('no-token', 'no token');
    $('#sessions-empty').hidden = true;
    const code = (text) => el('code', null, text);
    const p1 = el('p', null, 'This page needs the daemon\'s access token in its URL. ');
    p1.append('When it starts, ', code('uexec serve'), ' prints the full address, like ',
      code(`${location.origin}/#token=…`), ' — open that.');
    const p2 = el('p', null, 'The token is also kept in the file ');
    p2.append(code('token'), ' next to the daemon\'s socket (', code('$XDG_RUNTIME_DIR/uexec/token'),
      ' or ', code('/tmp/uexec-$UID/token'), '): append ', code('#token=<its contents>'), ' to this URL.');
    showNotice([el('h2', null, 'No access token'), p1, p2]);
    return;
  }
  showNotice();
  connect();
})();
