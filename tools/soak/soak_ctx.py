"""soak_ctx.py: the run's context (daemon, connections, counters, checks) and the invariants."""
import json
import os
import random
import time

from soak_proc import (children, cpu_seconds, fd_count, fd_targets, kill_marked, malloc_in_use, malloc_trim, marked,
                       rss_kib, status_kib, wait_for, zombies)
from soak_rpc import Conn, Hub, RpcError, Tracker

# Sizes: `ci` must finish in <= 8 minutes on a 2-core machine; `full` is the numbers.
SIZES = {
    "ci": dict(
        sessions=1000, wave=100, window=32, stream_rate=2_000_000, slow_pause_s=12, stall_s=75,
        flood_lines=250_000,            # 16 MB per flood child (pipe and tty)
        subs_procs=100, subs_conns=100,  # 10,000 subscriptions
        waits=1100, garbage_lines=2000, half_lines=30, long_polls=20, fd_limit=256,
        stall_close_rounds=3, noread_requests=200,
        churn_warm=4500, churn_rounds=2, churn_per_round=4000,
        crash_sessions=60, crash_rounds=3,
        drain_each=False),
    "full": dict(
        sessions=5000, wave=250, window=48, stream_rate=4_000_000, slow_pause_s=30, stall_s=75,
        flood_lines=1_500_000,          # 96 MB per flood child
        subs_procs=100, subs_conns=100,
        waits=1100, garbage_lines=20000, half_lines=100, long_polls=100, fd_limit=256,
        stall_close_rounds=5, noread_requests=400,
        churn_warm=5000, churn_rounds=4, churn_per_round=5000,
        crash_sessions=300, crash_rounds=4,
        drain_each=True),
}

EXITED_RETENTION_S = 30.0   # docs/protocol.md §3.6 exitedRetentionMs
STALL_TIMEOUT_S = 60.0      # docs/protocol.md §7 stallTimeoutMs
# What the drained daemon may hold above its baseline: 10 %, and never less than 1 MiB. The
# growth after a run that peaks near 100 MiB is ~750-820 KiB of anonymous memory (allocator
# fragmentation and one-time state), measured with and without libwebsockets linked; the
# floor keeps the allowance where 10 % put it while every daemon also carried libwebsockets
# and OpenSSL (~1.9 MiB of baseline that never grew; they are now loaded only by a listener,
# and the soak's daemon runs --no-ws).
RSS_TOLERANCE = 0.10
RSS_FLOOR_KIB = 1024


class CaseResult:
    def __init__(self, name):
        self.name = name
        self.checks = []     # (name, ok, detail)
        self.notes = []
        self.metrics = {}
        self.t0 = time.monotonic()
        self.t1 = None
        self.skipped = None

    @property
    def failed(self):
        return [c for c in self.checks if not c[1]]

    @property
    def ok(self):
        return self.skipped is None and bool(self.checks) and not self.failed

    def to_json(self):
        return {"name": self.name, "ok": self.ok, "seconds": round((self.t1 or time.monotonic()) - self.t0, 1),
                "skipped": self.skipped, "metrics": self.metrics, "notes": self.notes,
                "checks": [{"name": n, "ok": ok, "detail": d} for n, ok, d in self.checks]}


class Ctx:
    def __init__(self, uexec, tmp, size_name, seed, verbose=False):
        self.uexec = uexec
        self.tmp = tmp
        self.size_name = size_name
        self.S = SIZES[size_name]
        self.rng = random.Random(seed)
        self.seed = seed
        self.verbose = verbose
        self.hub = Hub()
        self.daemon = None
        self.ctl = None
        self.marker_key = "UEXEC_SOAK_RUN"
        self.marker_val = os.urandom(6).hex()
        self.stats = {"sessions": 0, "bytes": 0, "faults": 0}
        self.case = None
        self.cases = []
        self.base = {}
        self.warnings = []
        self.t0 = time.monotonic()
        self.rss_samples = []
        self.limits_supported = None
        self.trim_diagnose = True
        self.sanitized = False   # ASan/TSan build: memory checks are meaningless
        self.totals = {"zombies": 0, "fd_leak": None, "handle_leak": None, "rss_final": None, "fd_leak_case": 0}

    # -- bookkeeping
    @property
    def marker(self):
        return f"{self.marker_key}={self.marker_val}"

    def log(self, msg):
        print(f"  [{time.monotonic() - self.t0:7.1f}s] {msg}", flush=True)

    def note(self, msg):
        if self.case:
            self.case.notes.append(msg)
        self.log(msg)

    def warn(self, msg):
        if msg not in self.warnings:
            self.warnings.append(msg)
        self.log("WARNING: " + msg)

    def check(self, name, ok, detail=""):
        ok = bool(ok)
        if isinstance(detail, (list, dict)):
            detail = json.dumps(detail)[:1500]
        detail = str(detail)[:1500] if detail else ""
        self.case.checks.append((name, ok, "" if ok else detail))
        if not ok or self.verbose:
            print(f"    {'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}", flush=True)
        return ok

    def fault(self, n=1):
        self.stats["faults"] += n

    def env(self, **extra):
        e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.tmp, "LANG": "C.UTF-8",
             "TERM": "xterm-256color", self.marker_key: self.marker_val}
        e.update({k: str(v) for k, v in extra.items()})
        return e

    # -- connections and processes
    def conn(self, name, daemon=None, init=True, ttl_ms=10000, extensions=True):
        """A connection, initialized unless `init` is false. A closed one's session lingers
        `ttl_ms` (10 s by default, under the daemon's 30 s, so a case's leftovers end well
        within the invariants' settle)."""
        d = daemon or self.daemon
        c = Conn(self.hub, d.sock, name)
        c.tr = Tracker(c, self.stats)
        if init:
            c.initialize(name, extensions=extensions, ttl_ms=ttl_ms)
        return c

    def start(self, conn, pid, argv, tty=False, cb=None, **params):
        """process/start, asynchronously; counts the started sessions."""
        p = {"processId": pid, "argv": argv, "tty": tty, "env": params.pop("env", None) or self.env()}
        p.update(params)

        def done(call):
            if call.ok:
                self.stats["sessions"] += 1
            if cb:
                cb(call)
        return conn.request("process/start", p, done)

    def start_sync(self, conn, pid, argv, tty=False, timeout=15, **params):
        c = self.start(conn, pid, argv, tty, **params)
        self.hub.run_until(lambda: c.done or conn.dead, timeout)
        return c

    def status(self, conn=None, timeout=10):
        c = (conn or self.ctl).call("environment/status", {}, timeout)
        return c.result if c.ok else None

    def live_processes(self, conn=None):
        c = (conn or self.ctl).call("process/list", {"all": True, "includeClosed": False}, 15)
        if not c.ok:
            return None
        return [p for p in c.result.get("processes", []) if p.get("state") != "closed"]

    def all_processes(self, conn=None):
        c = (conn or self.ctl).call("process/list", {"all": True}, 15)
        return c.result.get("processes", []) if c.ok else None

    def wait(self, pred, timeout):
        return self.hub.run_until(pred, timeout)

    def poll(self, pred, timeout, step=0.25):
        """Evaluates pred every `step` (an expensive probe), serving connections meanwhile."""
        end = time.monotonic() + timeout
        while True:
            v = pred()
            if v or time.monotonic() >= end:
                return v
            self.hub.sleep(min(step, max(0.0, end - time.monotonic())))

    def close_conns(self, keep=()):
        for c in list(self.hub.conns):
            if c not in keep and c is not self.ctl:
                c.close()


def daemon_cpu_share(pid, seconds, hub=None):
    """The daemon's CPU use (fraction of one core) over `seconds`, serving connections meanwhile."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    if hub:
        hub.sleep(seconds)
    else:
        time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / max(1e-6, time.monotonic() - t0)


# ---- invariants -------------------------------------------------------------------------------

def take_baseline(ctx):
    d = ctx.daemon
    st = ctx.status() or {}
    ctx.base.update({"fds": fd_count(d.pid), "fd_map": fd_targets(d.pid), "rss": rss_kib(d.pid),
                     "rss_anon": status_kib(d.pid, "RssAnon"), "rss_file": status_kib(d.pid, "RssFile"),
                     "handles": st.get("handles"), "sessions": st.get("sessions")})
    if st.get("handles") is None:
        ctx.warn("environment/status has no `handles`: the leaked-handle invariant is NOT checked")
    ctx.log(f"baseline: {ctx.base['fds']} fds, {ctx.base['handles']} handles, VmRSS {ctx.base['rss']} KiB, "
            f"{ctx.base['sessions']} session(s)")


def fd_diff(ctx):
    now = fd_targets(ctx.daemon.pid)
    base = ctx.base["fd_map"]
    extra = {fd: t for fd, t in now.items() if base.get(fd) != t}
    gone = {fd: t for fd, t in base.items() if now.get(fd) != t}
    return f"new {dict(list(extra.items())[:12])}, gone {dict(list(gone.items())[:6])}"


def invariants(ctx, drained=False, settle_s=20.0):
    """The checks after each case. `drained`: every retained process and detached session is
    gone too (exitedRetentionMs passed), so handles and RSS must be back to the baseline."""
    d = ctx.daemon
    pid = d.pid
    tag = "drained: " if drained else ""
    if not ctx.check(f"{tag}daemon alive", d.alive(), f"exit {d.proc.poll()}; log: {d.log_tail(1500)}"):
        return
    st = ctx.status()
    if not ctx.check(f"{tag}daemon answers environment/status", st is not None, "no reply in 10 s"):
        return
    live = []
    ok = ctx.poll(lambda: not (live.__setitem__(slice(None), ctx.live_processes() or []) or live), settle_s)
    ctx.check(f"{tag}every session ended", ok,
              f"{len(live)} still live: " + ", ".join(f"{p.get('processId')}({p.get('state')})" for p in live[:8]))
    z = wait_for(lambda: not zombies(pid), 5) or zombies(pid)
    nz = 0 if z is True else len(z)
    ctx.totals["zombies"] = max(ctx.totals["zombies"], nz)
    ctx.check(f"{tag}no zombie child", nz == 0, f"zombies: {z}")
    kids = []
    ok = wait_for(lambda: not (kids.__setitem__(slice(None), children(pid)) or kids), 5)
    ctx.check(f"{tag}no child process left", ok, f"children: {kids[:10]}")
    left = []
    ok = wait_for(lambda: not (left.__setitem__(slice(None), marked(ctx.marker)) or left), 5, 0.2)
    if not ok:
        kill_marked(ctx.marker)
    ctx.check(f"{tag}no process of the run left anywhere (marker env)", ok, f"left: {left[:10]}")
    base_fds = ctx.base["fds"]
    ok = wait_for(lambda: fd_count(pid) == base_fds, 10)
    ctx.check(f"{tag}fd count back to the baseline ({base_fds})", ok,
              f"now {fd_count(pid)}; {fd_diff(ctx)}")
    leak = fd_count(pid) - base_fds
    ctx.totals["fd_leak_case"] = max(ctx.totals["fd_leak_case"], leak)
    if drained:
        ctx.totals["fd_leak"] = leak
    st = ctx.status() or {}
    h, bh = st.get("handles"), ctx.base.get("handles")
    retained = ctx.all_processes() or []
    extra_sessions = max(0, (st.get("sessions") or 0) - (ctx.base.get("sessions") or 0))
    if h is None or bh is None:
        ctx.case.notes.append("handles not checked (environment/status has no `handles`)")
    elif drained:
        ok = wait_for(lambda: (ctx.status() or {}).get("handles") == bh, 5, 0.2)
        h = (ctx.status() or {}).get("handles")
        ctx.totals["handle_leak"] = None if h is None else h - bh
        ctx.check(f"{tag}libuv handles back to the baseline ({bh})", ok, f"now {h}")
    else:
        # Retained (closed) processes keep their timers until exitedRetentionMs: at most 3
        # each (retention, drain, kill), and a detached session its TTL timer. The exact
        # check happens once drained.
        bound = bh + 3 * len(retained) + 2 * extra_sessions
        ctx.check(f"libuv handles bounded by the retained state (<= {bound})", h <= bound,
                  f"{h} handles: baseline {bh}, {len(retained)} retained processes, {extra_sessions} extra sessions")
    rss = rss_kib(pid)
    ctx.case.metrics[f"{'drained_' if drained else ''}rss_kib"] = rss
    ctx.case.metrics[f"{'drained_' if drained else ''}handles"] = h
    ctx.case.metrics[f"{'drained_' if drained else ''}fds"] = fd_count(pid)
    ctx.rss_samples.append((ctx.case.name + (" (drained)" if drained else ""), rss))
    if drained:
        b = ctx.base["rss"]
        ctx.totals["rss_final"] = rss
        # File-backed pages (the binary's and its libraries' code, clean and shared) that the
        # faults touched for the first time after the baseline are not memory the daemon holds:
        # they are taken out of the comparison, and both figures are reported.
        file_growth = max(0, status_kib(pid, "RssFile") - (ctx.base.get("rss_file") or 0))
        held = rss - file_growth
        ctx.totals["rss_file_growth"] = file_growth
        detail = (f"{rss} KiB = {100.0 * (rss - b) / b:+.1f}%; without the {file_growth} KiB of file pages first "
                  f"mapped during the run {held} KiB = {100.0 * (held - b) / b:+.1f}% (RssAnon "
                  f"{status_kib(pid, 'RssAnon')}, RssFile {status_kib(pid, 'RssFile')}; baseline RssAnon "
                  f"{ctx.base.get('rss_anon')}, RssFile {ctx.base.get('rss_file')})")
        ctx.case.metrics["drained_rss_detail"] = detail
        allowed = max(b * RSS_TOLERANCE, RSS_FLOOR_KIB)
        ok = held <= b + allowed
        if not ok and ctx.trim_diagnose and not ctx.sanitized:
            # Allocator retention or live memory? Ask glibc to give back what it can, and how
            # much it has handed out.
            trimmed = malloc_trim(pid)
            if trimmed is not None:
                ctx.totals["rss_after_malloc_trim"] = trimmed
                ctx.totals["trimmed"] = True
                ctx.case.metrics["rss_after_malloc_trim_kib"] = trimmed
                detail += (f"; after malloc_trim(0) (gdb, diagnosis only): {trimmed} KiB = "
                           f"{100.0 * (trimmed - b) / b:+.1f}% (RssAnon {status_kib(pid, 'RssAnon')})")
                used = malloc_in_use(pid, d.log_path)
                if used is not None:
                    ctx.case.metrics["malloc_in_use_bytes"] = used
                    detail += f", malloc in-use {used // 1024} KiB"
        if ctx.sanitized:
            ctx.case.notes.append(f"VmRSS not checked (sanitizer build): {detail}")
        else:
            ctx.check(f"drained: VmRSS (less new code pages) within {int(RSS_TOLERANCE * 100)}% or {RSS_FLOOR_KIB} KiB "
                      f"of the baseline ({b} KiB)",
                      ok, detail)
    ctx.check(f"{tag}no unexpected message on the control connection", not ctx.ctl.orphans,
              str(ctx.ctl.orphans[:3]))


def drain(ctx, timeout=EXITED_RETENTION_S + 25):
    """Waits for every retained process and extra session to be gone (exitedRetentionMs, TTLs)."""
    base_sessions = ctx.base.get("sessions") or 1
    t0 = time.monotonic()

    def done():
        procs = ctx.all_processes()
        st = ctx.status() or {}
        return procs == [] and (st.get("sessions") or 0) <= base_sessions

    ok = ctx.poll(done, timeout, 0.5)
    ctx.log(f"drained in {time.monotonic() - t0:.1f} s" if ok else "not drained in time")
    ctx.check("retained processes and detached sessions expire (exitedRetentionMs, detachedTtlMs)", ok,
              f"{len(ctx.all_processes() or [])} processes, status {ctx.status()}")
    return ok


def rpc_detail(call):
    if call is None:
        return "no call"
    if not call.done:
        return "no reply"
    return json.dumps(call.msg)[:400]


__all__ = ["SIZES", "Ctx", "CaseResult", "invariants", "drain", "take_baseline", "daemon_cpu_share", "rpc_detail",
           "RpcError", "EXITED_RETENTION_S", "STALL_TIMEOUT_S"]
