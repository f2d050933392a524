"""soak_cases.py: the cases of the soak and fault suite (tools/soak/README.md).

Every case gets the run's Ctx (soak_ctx.py): ctx.daemon, ctx.ctl (a control connection kept for
the whole run), ctx.conn() for more connections, ctx.check() to record a result. A case ends
what it started; the invariants run after it (soak.py).
"""
import base64
import json
import os
import time

from soak_ctx import STALL_TIMEOUT_S, daemon_cpu_share, rpc_detail
import signal

from soak_proc import Daemon, fd_count, kill_marked, malloc_in_use, marked, rss_kib, wait_for, zombies
from soak_rpc import Call, Exact, Lines64, lines64_argv, replay_check, seq_bytes


def b64(data):
    return base64.b64encode(data).decode()


def first_errors(streams, limit=4):
    """'key: error' for the first streams whose verdict is not clean."""
    out = []
    for key, st in streams:
        v = st.verdict()
        if v:
            out.append(f"{key[1]}: {'; '.join(v)[:300]}")
        if len(out) >= limit:
            break
    return out


def bad_count(streams):
    return sum(1 for _, st in streams if st.verdict())


class LatencyProbe:
    """environment/status on the control connection every `every` s: the daemon must keep
    answering promptly whatever the other clients do."""

    def __init__(self, ctx, every=0.5):
        self.ctx = ctx
        self.every = every
        self.calls = []
        self.next = 0.0
        ctx.hub.hooks.append(self.tick)

    def tick(self):
        now = time.monotonic()
        if now >= self.next and (not self.calls or self.calls[-1].done):
            self.next = now + self.every
            self.calls.append(self.ctx.ctl.request("environment/status", {}))

    def stop(self):
        if self.tick in self.ctx.hub.hooks:
            self.ctx.hub.hooks.remove(self.tick)
        self.ctx.wait(lambda: all(c.done for c in self.calls), 10)

    def worst(self):
        now = time.monotonic()
        return max([((c.t1 or now) - c.t0) for c in self.calls] or [0.0])


# ---- warm-up ------------------------------------------------------------------------------------

def warmup(ctx):
    """First use of every path (spawn, terminate, tty, pipe, a closed connection, a long poll,
    a subscription from another session), so one-time allocations are not charged to a case."""
    a = ctx.conn("warmup")
    b = ctx.conn("warmup-peer", ttl_ms=200)
    calls = []
    for i in range(4):
        calls.append(ctx.start(a, f"w-seq-{i}", ["seq", "1", "2000"], tty=bool(i % 2)))
        calls.append(ctx.start(a, f"w-sleep-{i}", ["sleep", "30"], tty=bool(i % 2)))
    ctx.wait(lambda: all(c.done for c in calls), 20)
    for i in range(4):
        b.request("process/subscribe", {"processId": f"w-seq-{i}", "sessionId": a.session_id, "afterSeq": 0})
    b.request("process/read", {"processId": "w-sleep-0", "sessionId": a.session_id, "afterSeq": 99, "waitMs": 60000})
    ctx.hub.sleep(0.5)
    for i in range(4):
        a.request("process/terminate", {"processId": f"w-sleep-{i}", "graceMs": 0 if i % 2 else 200})
    b.close()
    ctx.poll(lambda: not ctx.live_processes(), 15)
    a.close()


# ---- load -----------------------------------------------------------------------------------------

def case_load(ctx):
    S = ctx.S
    hub = ctx.hub
    owner = ctx.conn("load-owner")
    streamers = [ctx.conn("streamer-1"), ctx.conn("streamer-2")]
    slow = ctx.conn("slow-reader")
    staller = ctx.conn("staller")
    sid = owner.session_id
    probe = LatencyProbe(ctx)

    # A flood for the whole case, rate-limited, owned by `owner`; the slow reader and the
    # staller subscribe to it and stop reading.
    rate = S["stream_rate"]
    n_flood = int(rate * (S["stall_s"] + 400) / 64)
    exp_f = Lines64(n_flood)
    st_owner_f = owner.tr.watch((sid, "flood"), exp_f)
    c = ctx.start_sync(owner, "flood", lines64_argv(n_flood, rate))
    if not ctx.check("the background flood starts", c.ok, rpc_detail(c)):
        return
    st_slow = slow.tr.watch((sid, "flood"), exp_f)
    r = slow.call("process/subscribe", {"processId": "flood", "sessionId": sid, "afterSeq": 0})
    ctx.check("slow reader subscribes to the flood", r.ok, rpc_detail(r))
    slow.paused = True
    t_pause = time.monotonic()
    owner_bytes_at_pause = st_owner_f.bytes
    use_staller = S["stall_s"] > 0
    if use_staller:
        r = staller.call("process/subscribe", {"processId": "flood", "sessionId": sid})
        ctx.check("staller subscribes to the flood", r.ok, rpc_detail(r))
        staller.paused = True
        ctx.fault()
    t_stall = time.monotonic()
    ctx.fault()
    pause_info = {}

    def slow_hook():
        if slow.paused and time.monotonic() - t_pause >= S["slow_pause_s"]:
            dt = time.monotonic() - t_pause
            pause_info["owner_rate"] = (st_owner_f.bytes - owner_bytes_at_pause) / dt
            pause_info["seconds"] = dt
            pause_info["worst_latency"] = probe.worst()
            slow.paused = False
            ctx.log(f"slow reader resumes after {dt:.1f} s (owner got the flood at "
                    f"{pause_info['owner_rate'] / 1e6:.2f} MB/s meanwhile)")
    hub.hooks.append(slow_hook)

    # The waves.
    kinds = [("seq", 45), ("seqtty", 20), ("lines", 10), ("cat", 10), ("idle", 10), ("linestty", 5)]
    weights = [w for _, w in kinds]
    total = S["sessions"]
    wave_size = S["wave"]
    sessions = {}   # pid -> dict(kind, expect, call, ...)
    failures = {"start": [], "owner": [], "terminated": [], "replay": []}
    stream_sets = [[], []]
    owner_streams = []
    replays = 0
    done_count = 0
    t_waves = time.monotonic()
    for w0 in range(0, total, wave_size):
        wave = list(range(w0, min(total, w0 + wave_size)))
        pending = list(wave)
        inflight = [0]

        def on_start(pid):
            def cb(call):
                inflight[0] -= 1
                s = sessions[pid]
                s["call"] = call
                if not call.ok:
                    failures["start"].append(f"{pid}: {rpc_detail(call)}")
                    return
                i = s["i"]
                for k, sc in enumerate(streamers):
                    if i % (k + 2) == 0:
                        stream_sets[k].append(((sid, pid), sc.tr.watch((sid, pid), s["expect"])))
                        sc.request("process/subscribe", {"processId": pid, "sessionId": sid, "afterSeq": 0})
                if s["kind"] == "cat":
                    owner.request("process/write", {"processId": pid, "chunk": b64(s["token"] + b"\n"),
                                                    "writeId": pid})
                    owner.request("process/closeStdin", {"processId": pid})
            return cb

        def feed():
            while pending and inflight[0] < S["window"]:
                i = pending.pop(0)
                kind = ctx.rng.choices([k for k, _ in kinds], weights)[0]
                pid = f"s{i:04d}-{kind}"
                s = {"i": i, "kind": kind}
                extra = {}
                if kind in ("seq", "seqtty"):
                    k = ctx.rng.randint(1, 3000)
                    argv, tty, s["expect"] = ["seq", "1", str(k)], kind == "seqtty", Exact(seq_bytes(k), kind == "seqtty")
                elif kind in ("lines", "linestty"):
                    n = ctx.rng.randint(2000, 12000)
                    tty = kind == "linestty"
                    argv, s["expect"] = lines64_argv(n), Lines64(n, tty)
                elif kind == "cat":
                    s["token"] = f"token-{i}-{os.urandom(4).hex()}".encode()
                    argv, tty, s["expect"] = ["cat"], False, Exact(s["token"] + b"\n")
                    extra["pipeStdin"] = True
                else:
                    argv, tty, s["expect"] = ["sleep", "120"], False, Exact(b"")
                sessions[pid] = s
                s["st"] = owner.tr.watch((sid, pid), s["expect"])
                owner_streams.append(((sid, pid), s["st"]))
                inflight[0] += 1
                ctx.start(owner, pid, argv, tty, cb=on_start(pid), **extra)
            return not pending and inflight[0] == 0

        hub.run_until(feed, 120)
        wave_pids = [p for p, s in sessions.items() if s["i"] in wave and s.get("call") and s["call"].ok]
        natural = [p for p in wave_pids if sessions[p]["kind"] != "idle"]
        hub.run_until(lambda: all(sessions[p]["st"].closed is not None for p in natural), 90)
        # The idle ones end by terminate, with a grace of 0, 200 ms or the default.
        for j, p in enumerate(p for p in wave_pids if sessions[p]["kind"] == "idle"):
            params = {"processId": p}
            if j % 3:
                params["graceMs"] = 0 if j % 3 == 1 else 200
            owner.request("process/terminate", params)
        hub.run_until(lambda: all(sessions[p]["st"].closed is not None for p in wave_pids), 30)
        hub.run_until(lambda: all(st.closed is not None for k in (0, 1) for key, st in stream_sets[k]
                                  if key[1] in wave_pids), 30)
        for p in wave_pids:
            s = sessions[p]
            if s["kind"] == "idle":
                ex = s["st"].exited or {}
                if ex.get("signal") not in ("SIGTERM", "SIGKILL") or ex.get("exitCode") not in (143, 137):
                    failures["terminated"].append(f"{p}: exited {ex}")
            elif s["i"] % 10 == 0 and s["st"].closed is not None:
                replays += 1
                errs, _ = replay_check(owner, p, s["expect"])
                if errs:
                    failures["replay"].append(f"{p}: {errs[0]}")
        done_count += len(wave_pids)
        ctx.log(f"wave {w0 // wave_size + 1}: {len(wave_pids)} sessions ended ({done_count}/{total}); "
                f"daemon {fd_count(ctx.daemon.pid)} fds")
    ctx.case.metrics["waves_seconds"] = round(time.monotonic() - t_waves, 1)

    ctx.check(f"all {total} sessions start", not failures["start"] and len(sessions) == total,
              f"{len(failures['start'])} failed: {failures['start'][:3]}")
    ctx.check("the owner receives every byte of every session, in seq order",
              bad_count(owner_streams) == 0,
              f"{bad_count(owner_streams)} of {len(owner_streams)}: {first_errors(owner_streams)}")
    owner_gaps = sum(len(st.gaps) for _, st in owner_streams)
    ctx.case.metrics["owner_gaps"] = owner_gaps
    for k in (0, 1):
        ss = stream_sets[k]
        ctx.check(f"streamer-{k + 1}: each of its {len(ss)} sessions complete or with an announced gap",
                  bad_count(ss) == 0, f"{bad_count(ss)} bad: {first_errors(ss)}")
        ctx.case.metrics[f"streamer{k + 1}_sessions"] = len(ss)
        ctx.case.metrics[f"streamer{k + 1}_gaps"] = sum(len(st.gaps) for _, st in ss)
    ctx.check("terminated sessions report SIGTERM/SIGKILL (exitCode 143/137)", not failures["terminated"],
              failures["terminated"][:3])
    ctx.check(f"process/read afterSeq replay reassembles {replays} sampled sessions", not failures["replay"],
              failures["replay"][:3])

    # The slow reader: gaps, not a stall.
    hub.run_until(lambda: not slow.paused, S["slow_pause_s"] + 30)
    if slow_hook in hub.hooks:
        hub.hooks.remove(slow_hook)
    hub.run_until(lambda: slow.dead or st_slow.next_seq >= st_owner_f.next_seq - 1, 30)
    ctx.case.metrics["slow_pause"] = {k: round(v, 3) for k, v in pause_info.items()}
    ctx.check("while a reader is stalled the owner keeps streaming (>= 50% of the flood rate)",
              pause_info.get("owner_rate", 0) >= 0.5 * rate,
              f"{pause_info.get('owner_rate', 0) / 1e6:.2f} MB/s of {rate / 1e6:.2f}")
    ctx.check("while a reader is stalled the daemon answers others within 2 s",
              pause_info.get("worst_latency", 99) < 2.0, f"worst environment/status {pause_info.get('worst_latency')}")
    ctx.check("the slow reader gets process/gap notices for what it missed", len(st_slow.gaps) > 0,
              f"{st_slow.bytes} bytes, no gap; connection dead={slow.dead}")
    ctx.check("the slow reader's stream: every missing byte announced, the rest exact", not st_slow.errors,
              st_slow.errors[:3])
    shapes = [g for g in st_slow.gaps if not (isinstance(g.get("fromSeq"), int) and g.get("reason") == "slowConsumer")]
    ctx.check("process/gap for a slow consumer carries fromSeq and reason slowConsumer (docs/protocol.md §7)",
              st_slow.gaps and not shapes, f"{len(shapes)} of {len(st_slow.gaps)} gaps, e.g. {shapes[:2]}")
    ctx.case.metrics["slow_gaps"] = len(st_slow.gaps)
    ctx.case.metrics["slow_gap_bytes"] = st_slow.gap_bytes

    # The staller: above the high watermark for stallTimeoutMs, it must be closed.
    if use_staller:
        deadline = t_stall + max(S["stall_s"], STALL_TIMEOUT_S + 15)
        if time.monotonic() < deadline:
            ctx.log(f"waiting {deadline - time.monotonic():.0f} s more for the staller (stallTimeoutMs 60 s)")
            hub.run_until(lambda: False, deadline - time.monotonic())
        staller.paused = False
        hub.run_until(lambda: staller.dead, 5)
        ctx.check(f"a reader stalled above the high watermark for {time.monotonic() - t_stall:.0f} s is closed "
                  f"(stallTimeoutMs {int(STALL_TIMEOUT_S * 1000)}, docs/protocol.md §7)", staller.eof,
                  f"still open; it had {staller.bytes_in} bytes when it resumed reading")
    else:
        ctx.case.notes.append("staller left out (stall_s=0)")
    ctx.check("the daemon answered every status probe within 2 s during the load", probe.worst() < 2.0,
              f"worst {probe.worst():.2f} s")
    probe.stop()
    ctx.case.metrics["worst_status_latency_s"] = round(probe.worst(), 3)

    owner.request("process/terminate", {"processId": "flood"})
    hub.run_until(lambda: st_owner_f.closed is not None and (slow.dead or st_slow.closed is not None), 20)
    ctx.check("the flood's owner stream is exact up to its end", st_owner_f.closed is not None and not st_owner_f.errors,
              st_owner_f.errors[:3] or "no closed")
    ctx.case.metrics["flood_bytes"] = st_owner_f.bytes
    for c in (owner, slow, staller, *streamers):
        c.close()


# ---- misbehaving children ---------------------------------------------------------------------

def _tagged(tag):
    return marked(f"UEXEC_SOAK_TAG={tag}")


def _left(tag, timeout):
    """The tagged processes still alive after waiting up to `timeout` for them to go ([] if none)."""
    wait_for(lambda: not _tagged(tag), timeout, 0.1)
    return _tagged(tag)


def case_children(ctx):
    S = ctx.S
    hub = ctx.hub
    a = ctx.conn("children-owner")
    peer = ctx.conn("children-peer")
    sid = a.session_id

    def text_of(st):
        return bytes(st.all)

    # 1. Floods, pipe and tty, both read by the owner and by a second subscriber.
    n = S["flood_lines"]
    floods = []
    for tty in (False, True):
        pid = f"flood-{'tty' if tty else 'pipe'}"
        exp = Lines64(n, tty)
        st = a.tr.watch((sid, pid), exp)
        c = ctx.start_sync(a, pid, lines64_argv(n), tty)
        if not ctx.check(f"{pid} starts", c.ok, rpc_detail(c)):
            continue
        sp = peer.tr.watch((sid, pid), exp)
        peer.request("process/subscribe", {"processId": pid, "sessionId": sid, "afterSeq": 0})
        floods.append((pid, exp, st, sp))
        ctx.fault()
    t0 = time.monotonic()
    hub.run_until(lambda: all(f[2].closed is not None and f[3].closed is not None for f in floods), 300)
    dt = time.monotonic() - t0
    for pid, exp, st, sp in floods:
        ctx.note(f"{pid}: {exp.total / 1e6:.1f} MB in {dt:.1f} s; owner gaps {len(st.gaps)}, peer gaps {len(sp.gaps)}")
        ctx.check(f"{pid}: the owner's stream is complete or every missing byte announced", not st.verdict(),
                  st.verdict())
        ctx.check(f"{pid}: the second subscriber's stream is complete or gapped", not sp.verdict(), sp.verdict())
        ctx.case.metrics[f"{pid}_owner_gaps"] = len(st.gaps)
        errs, info = replay_check(a, pid, exp)
        ctx.check(f"{pid}: process/read from afterSeq 0 returns head + omitted + tail, every byte placed",
                  not errs, f"{errs[:2]} ({info})")
        # A read starting inside the evicted middle must say what it skipped.
        ex_seq = (st.exited or {}).get("seq", 0)
        mid = max(1, ex_seq // 2)
        r = a.call("process/read", {"processId": pid, "afterSeq": mid})
        om = (r.result or {}).get("omitted") if r.ok else None
        first = ((r.result or {}).get("chunks") or [{}])[0].get("seq") if r.ok else None
        ctx.check(f"{pid}: process/read afterSeq {mid} (evicted middle) reports `omitted`",
                  r.ok and (first == mid + 1 or om is not None),
                  f"first chunk seq {first}, omitted {om}")

    # 2. Children that ignore SIGTERM: terminate escalates to SIGKILL after the grace.
    ign = []
    for tty in (False, True):
        for grace in (None, 300):
            tag = f"ign-{tty}-{grace}-{os.urandom(3).hex()}"
            pid = f"ignore-term-{'tty' if tty else 'pipe'}-{grace or 'default'}"
            st = a.tr.watch((sid, pid))
            st.keep_all = True
            # On a tty, terminate also hangs up (SIGHUP): ignore both.
            script = "trap '' TERM HUP; setsid sleep 1000 & echo ready; exec sleep 1000"
            c = ctx.start_sync(a, pid, ["bash", "-c", script], tty, env=ctx.env(UEXEC_SOAK_TAG=tag))
            if ctx.check(f"{pid} starts", c.ok, rpc_detail(c)):
                ign.append((pid, grace, st, tag))
    hub.run_until(lambda: all(b"ready" in text_of(x[2]) for x in ign), 10)
    terms = {}
    for pid, grace, st, tag in ign:
        params = {"processId": pid}
        if grace is not None:
            params["graceMs"] = grace
        terms[pid] = (time.monotonic(), a.request("process/terminate", params))
        ctx.fault()
    hub.run_until(lambda: all(x[2].closed is not None for x in ign), 15)
    for pid, grace, st, tag in ign:
        t, call = terms[pid]
        g = (grace if grace is not None else 1000) / 1000.0
        ex = st.exited or {}
        took = (st.t_exited or time.monotonic()) - t
        ctx.check(f"{pid}: terminate answers running:true", call.ok and call.result.get("running") is True,
                  rpc_detail(call))
        ctx.check(f"{pid}: SIGKILL after the grace ({g:.1f} s): signal SIGKILL, exitCode 137, in {g - 0.05:.2f}..{g + 2:.1f} s",
                  ex.get("signal") == "SIGKILL" and ex.get("exitCode") == 137 and g - 0.05 <= took <= g + 2.0,
                  f"exited {ex} after {took:.2f} s")
        left = _left(tag, 3)
        ctx.check(f"{pid}: its TERM-ignoring setsid grandchild is gone after closed", not left,
                  f"left: {left}")

    # 3. Children that close their output and keep running.
    keep = [("closepty-tty", True, "echo ready; exec sleep 1000 >/dev/null 2>&1 </dev/null"),
            ("closepipes", False, "echo ready; exec sleep 1000 >&- 2>&- </dev/null")]
    running = []
    for pid, tty, script in keep:
        tag = f"{pid}-{os.urandom(3).hex()}"
        st = a.tr.watch((sid, pid))
        st.keep_all = True
        c = ctx.start_sync(a, pid, ["bash", "-c", script], tty, env=ctx.env(UEXEC_SOAK_TAG=tag))
        if ctx.check(f"{pid} starts", c.ok, rpc_detail(c)):
            running.append((pid, st, tag))
            ctx.fault()
    hub.run_until(lambda: all(b"ready" in text_of(x[1]) for x in running), 10)
    hub.sleep(1.0)
    share = daemon_cpu_share(ctx.daemon.pid, 2.0, hub)
    ctx.case.metrics["cpu_share_output_closed"] = round(share, 3)
    ctx.check("no busy loop while children run with their output closed (daemon CPU < 15%)", share < 0.15,
              f"{share * 100:.0f}% of a core")
    procs = {p["processId"]: p for p in (ctx.all_processes() or []) if p.get("sessionId") == sid}
    for pid, st, tag in running:
        ctx.check(f"{pid}: still running (its leader lives), not exited", procs.get(pid, {}).get("state") == "running"
                  and st.exited is None, f"state {procs.get(pid, {}).get('state')}, exited {st.exited}")
        a.request("process/terminate", {"processId": pid})
    hub.run_until(lambda: all(x[1].closed is not None for x in running), 10)
    for pid, st, tag in running:
        ex = st.exited or {}
        ctx.check(f"{pid}: terminate ends it (SIGTERM 143, or SIGHUP 129 on a tty) and closed follows",
                  ex.get("signal") in ("SIGTERM", "SIGHUP") and st.closed is not None,
                  f"exited {ex}, closed {st.closed}")
        left = _left(tag, 3)
        ctx.check(f"{pid}: nothing of it left", not left, f"left: {left}")

    # 4. A leader that exits, leaving a background process off the PTY (containment kills it),
    #    and leaders that exit while grandchildren hold the PTY or pipes open.
    exits = [("bg-off-pty", True, "sleep 1000 </dev/null >/dev/null 2>&1 & echo ready; exit 0", "offpty"),
             # The kernel sends SIGHUP to the tty's foreground group when the leader exits:
             # the grandchildren ignore it, so they really keep the PTY open.
             ("grandchild-tty", True, "trap '' HUP; (sleep 3 &); echo bye; exit 0", "hold"),
             ("grandchild-pipe", False, "(sleep 3 &); echo bye; exit 0", "hold"),
             ("trailing-tty", True, "trap '' HUP; (for i in 1 2 3; do echo tick$i; sleep 0.2; done &); exit 0",
              "trail")]
    ex_runs = []
    for pid, tty, script, kind in exits:
        tag = f"{pid}-{os.urandom(3).hex()}"
        st = a.tr.watch((sid, pid))
        st.keep_all = True
        t = time.monotonic()
        c = ctx.start_sync(a, pid, ["bash", "-c", script], tty, env=ctx.env(UEXEC_SOAK_TAG=tag))
        if ctx.check(f"{pid} starts", c.ok, rpc_detail(c)):
            ex_runs.append((pid, st, tag, kind, t))
            ctx.fault()
    hub.run_until(lambda: all(x[1].closed is not None for x in ex_runs), 10)
    for pid, st, tag, kind, t in ex_runs:
        ex, cl = st.exited or {}, st.closed or {}
        t_ex = (st.t_exited or 1e18) - t
        t_cl = (st.t_closed or 1e18) - t
        ctx.check(f"{pid}: exited 0 at once (<= 1.5 s)", ex.get("exitCode") == 0 and t_ex <= 1.5,
                  f"exited {ex} after {t_ex:.2f} s")
        if kind == "offpty":
            ctx.check(f"{pid}: closed soon after (<= 2.5 s)", t_cl <= 2.5, f"closed {cl} after {t_cl:.2f} s")
        elif kind == "hold":
            ctx.check(f"{pid}: closed after closeDrainMs (1 s), not when the grandchild ends (3 s); outputEof false",
                      0.8 <= t_cl - t_ex <= 2.2 and cl.get("outputEof") is False,
                      f"closed {cl} {t_cl - t_ex:.2f} s after exited")
            ctx.check(f"{pid}: its output arrived", b"bye" in text_of(st), repr(text_of(st)[-100:]))
        else:
            ctx.check(f"{pid}: trailing output after exited is delivered before closed (tick3)",
                      b"tick3" in text_of(st), repr(text_of(st)[-200:]))
        left = _left(tag, 3)
        ctx.check(f"{pid}: its leftover processes are killed at closed", not left, f"left: {left}")
    a.close()
    peer.close()


# ---- limits: fork bomb and timeouts ---------------------------------------------------------------

def _limits_probe(ctx, conn):
    """Whether process/start takes `limits` and reports them: a tiny session with pidsMax."""
    if ctx.limits_supported is not None:
        return ctx.limits_supported
    st = conn.tr.watch((conn.session_id, "limits-probe"))
    c = ctx.start_sync(conn, "limits-probe", ["true"], limits={"pidsMax": 64})
    if not c.ok:
        ctx.limits_supported = f"process/start with limits fails: {rpc_detail(c)}"
    else:
        ctx.wait(lambda: st.closed is not None, 10)
        if "limitEvents" not in (st.closed or {}):
            ctx.limits_supported = f"limits look ignored: process/closed has no limitEvents ({st.closed})"
        else:
            ctx.limits_supported = True
    return ctx.limits_supported


def case_forkbomb(ctx):
    hub = ctx.hub
    a = ctx.conn("forkbomb")
    sid = a.session_id
    sup = _limits_probe(ctx, a)
    if not ctx.check("process/start accepts `limits` and process/closed reports limitEvents", sup is True, sup):
        a.close()
        return
    pids_max = 32
    tag = f"bomb-{os.urandom(3).hex()}"
    st = a.tr.watch((sid, "bomb"))
    peak = [0]
    blown = [False]
    last = [0.0]

    def watchdog():  # never let a bomb escape its limit on the machine
        if time.monotonic() - last[0] < 0.3:
            return
        last[0] = time.monotonic()
        n = len(_tagged(tag))
        peak[0] = max(peak[0], n)
        if n > 4 * pids_max + 20:
            blown[0] = True
            kill_marked(f"UEXEC_SOAK_TAG={tag}")
    hub.hooks.append(watchdog)
    try:
        # The leader starts the bomb in the background, then becomes a sleep (exec needs no
        # fork), so the session lives until terminate whatever the bomb does.
        c = ctx.start_sync(a, "bomb", ["bash", "--norc", "--noprofile", "-c", ":(){ :|:& };: ; exec sleep 1000"], True,
                           env=ctx.env(UEXEC_SOAK_TAG=tag), limits={"pidsMax": pids_max})
        if not ctx.check("the fork bomb starts with pidsMax 32", c.ok, rpc_detail(c)):
            return
        ctx.fault()
        hub.sleep(3.0)
        ctx.check("the bomb stays inside pids.max (watchdog never fired)", not blown[0], f"peak {peak[0]} processes")
        ctx.case.metrics["bomb_peak_processes"] = peak[0]
        ctx.check(f"at most pidsMax ({pids_max}) processes of the bomb at once", peak[0] <= pids_max,
                  f"peak {peak[0]}")
        ctx.check("the bomb really forked up to its limit (peak >= pidsMax/2)", peak[0] >= pids_max // 2,
                  f"peak {peak[0]}: the bomb did not run as intended")
        t = time.monotonic()
        term = a.call("process/terminate", {"processId": "bomb", "graceMs": 500})
        hub.run_until(lambda: st.closed is not None, 15)
        ctx.check("terminate ends the bomb: exited and closed", term.ok and st.closed is not None,
                  f"terminate {rpc_detail(term)}, exited {st.exited}, closed {st.closed}, "
                  f"{time.monotonic() - t:.1f} s")
        left = _left(tag, 5)
        ctx.check("all of the bomb's processes are gone", not left, f"{len(left)} left: {left[:5]}")
        le = (st.closed or {}).get("limitEvents") or {}
        ctx.case.metrics["limitEvents"] = le
        ctx.check("process/closed reports limitEvents.pidsMaxHits > 0", (le.get("pidsMaxHits") or 0) > 0,
                  f"closed {st.closed}")
    finally:
        hub.hooks.remove(watchdog)
        kill_marked(f"UEXEC_SOAK_TAG={tag}")
        a.close()


def case_timeout(ctx):
    hub = ctx.hub
    a = ctx.conn("timeouts")
    sid = a.session_id
    runs = [("timeout", ["sleep", "100"], {"timeoutMs": 800}, "timeout"),
            ("idle-timeout", ["bash", "-c", "echo hi; exec sleep 100"], {"idleTimeoutMs": 800}, "idleTimeout")]
    started = []
    for pid, argv, limits, want in runs:
        st = a.tr.watch((sid, pid))
        t = time.monotonic()
        c = ctx.start_sync(a, pid, argv, False, limits=limits)
        if ctx.check(f"{pid}: process/start with limits {json.dumps(limits)}", c.ok, rpc_detail(c)):
            started.append((pid, st, t, want))
            ctx.fault()
    hub.run_until(lambda: all(x[1].closed is not None for x in started), 10)
    for pid, st, t, want in started:
        ex = st.exited or {}
        took = (st.t_exited or 1e18) - t
        eb = ex.get("endedBy") or {}
        ctx.check(f"{pid}: ends after ~0.8 s (0.7..4 s)", 0.7 <= took <= 4.0,
                  f"exited {ex} after {took:.2f} s" if st.exited else "not exited after 10 s")
        ctx.check(f"{pid}: process/exited endedBy.limit = {want} with a message",
                  eb.get("limit") == want and bool(eb.get("message")), f"exited {ex}")
        if st.closed is None:
            a.request("process/terminate", {"processId": pid, "graceMs": 0})
    hub.run_until(lambda: all(x[1].closed is not None for x in started), 5)
    a.close()


# ---- misbehaving clients -------------------------------------------------------------------------

GARBAGE = [
    # (raw line, expected reply id or None for "no reply", expect an error)
    (b"[]", -1, True), (b"[1,2,3]", -1, True), (b'"just a string"', -1, True), (b"12345", -1, True),
    (b"null", -1, True), (b"true", -1, True), (b"{", -1, True), (b'{"id":1', -1, True),
    (b'{"id":1.5,"method":"environment/status"}', -1, True),
    (b'{"id":[1],"method":"environment/status"}', -1, True),
    (b'{"id":{"a":1},"method":"environment/status"}', -1, True),
    (b'{"jsonrpc":"1.0","id":501,"method":"environment/status"}', 501, True),
    (b'{"id":502,"method":5}', 502, True),
    (b'{"id":503,"method":"no/such/method"}', 503, True),
    (b'{"id":504,"method":"process/start","params":[1]}', 504, True),
    (b'{"id":505,"method":"process/start","params":{"processId":5,"argv":["true"]}}', 505, True),
    (b'{"id":506,"method":"process/start","params":{"processId":"x","argv":[]}}', 506, True),
    (b'{"id":507,"method":"process/write","params":{"processId":"nope","chunk":"!!!not base64"}}', 507, True),
    (b'{"id":508,"method":"process/read","params":{"processId":"nope"}}', 508, True),
    (b'{"id":509,"method":"process/read","params":{"processId":"nope","afterSeq":-1}}', 509, True),
    (b'{"id":510,"method":"process/read","params":{"processId":"nope","afterSeq":1e400}}', None, None),
    (b'{"id":511,"method":"process/signal","params":{"processId":"nope","signal":"bogus"}}', 511, True),
    (b'{"id":512,"method":"initialize","params":{"clientName":"again"}}', 512, True),
    (b'{"id":513,"method":"process/resize","params":{"processId":"nope","rows":1e9,"cols":-5}}', 513, True),
    (b'{"id":514,"method":"process/read","params":{"processId":"nope","maxBytes":"lots"}}', 514, True),
    (b'{"id":515,"method":"process/wait","params":{"processId":"nope","until":{"regex":"(("}}}', 515, True),
    (b'{"id":516,"method":"process/start","params":{"processId":"' + b"p" * 300 + b'","argv":["true"]}}', 516, True),
    (b'{"id":517,"method":"process/start","params":{"processId":"bad-cwd","argv":["true"],"cwd":"relative/dir"}}', 517, True),
    (b'{"id":518,"method":"process/start","params":{"processId":"no-such-bin","argv":["/nonexistent/soak-bin"]}}', 518, True),
    (b'{"id":"str-519","method":"environment/status"}', "str-519", False),
    (b'{"id":9223372036854775807,"method":"environment/status"}', 9223372036854775807, False),
    (b'{"id":520,"method":"environment/status","params":null}', 520, False),
    (b'{"jsonrpc":"2.0","id":521,"result":{}}', None, None),           # a stray response: ignored
    (b'{"jsonrpc":"2.0","method":"no/such/notification"}', None, None),  # ignored
    (b'{"id":522,"method":"\xff\xfe"}', -1, True),                      # invalid UTF-8
    (b"\xef\xbb\xbf{\"id\":523,\"method\":\"environment/status\"}", None, None),  # BOM: either way
    (b'{"id":524,"method":"environment/status"}\x00', -1, True),
    (b"[" * 100000, -1, True),
    (b'{"a":' * 50000, -1, True),
    (b"\r", None, None),                                                   # blank: ignored
]


def _random_garbage(rng, n):
    out = []
    while len(out) < n:
        ln = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))).replace(b"\n", b"").strip()
        ln = ln.rstrip(b"\r")
        if not ln:
            continue
        try:
            json.loads(ln)
            continue          # valid JSON by chance: skip, its reply is not a parse error
        except ValueError:
            pass
        out.append(ln)
    return out


def case_clients(ctx):
    S = ctx.S
    hub = ctx.hub
    sock = ctx.daemon.sock
    owner = ctx.conn("clients-owner")
    sid = owner.session_id
    probe = LatencyProbe(ctx)
    c = ctx.start_sync(owner, "target", ["sleep", "60"])
    ctx.check("a long-poll target starts", c.ok, rpc_detail(c))

    # Half a line, then close: before and after initialize.
    for i in range(S["half_lines"]):
        g = ctx.conn(f"half-{i}", init=bool(i % 2), ttl_ms=100)
        g.send_bytes(b'{"jsonrpc":"2.0","id":7,"method":"process/li')
        hub.sleep(0.005)
        g.close()
    ctx.fault(S["half_lines"])
    # A long poll (process/read waitMs, process/wait), then close; some on their own process.
    for i in range(S["long_polls"]):
        g = ctx.conn(f"poll-{i}", ttl_ms=100)
        if i % 4 == 0:
            ctx.start(g, "own", ["sleep", "60"])
            g.request("process/read", {"processId": "own", "afterSeq": 1000, "waitMs": 60000})
        elif i % 4 == 1:
            g.request("process/wait", {"processId": "target", "sessionId": sid, "until": {"regex": "never-x"},
                                       "timeoutMs": 60000})
        else:
            g.request("process/read", {"processId": "target", "sessionId": sid, "afterSeq": 1000, "waitMs": 60000})
        hub.sleep(0.02)
        g.close()
    ctx.fault(S["long_polls"])
    # Mid-stream disconnects: subscribed to a flood, read a little, close with data unread.
    n = 200_000
    ctx.start_sync(owner, "mid-flood", lines64_argv(n))
    for i in range(5):
        g = ctx.conn(f"midstream-{i}", ttl_ms=100)
        g.request("process/subscribe", {"processId": "mid-flood", "sessionId": sid, "afterSeq": 0})
        hub.run_until(lambda: g.bytes_in > 100_000 or g.dead, 5)
        g.close()
    ctx.fault(5)
    # A client that sends a large line and closes halfway.
    g = ctx.conn("half-big", ttl_ms=100)
    g.send_bytes(b'{"id":1,"method":"environment/status","params":{"pad":"' + b"x" * (4 << 20))
    hub.run_until(lambda: not g.out, 10)
    g.close()
    ctx.fault()

    # Garbage on one initialized connection: every bad line answered, the connection survives.
    gc = ctx.conn("garbage", ttl_ms=100)
    lines = _random_garbage(ctx.rng, S["garbage_lines"])
    for ln in lines:
        gc.send_bytes(ln + b"\n")
    hub.run_until(lambda: len(gc.orphans) >= len(lines) or gc.dead, 30)
    perr = [m for m in gc.orphans if (m.get("error") or {}).get("data", {}).get("kind") == "parseError"
            and m.get("id") == -1]
    ctx.check(f"{len(lines)} random-byte lines: one parseError (id -1) each", len(perr) == len(lines) and not gc.dead,
              f"{len(perr)} parse errors, {len(gc.orphans)} replies, dead={gc.dead}; e.g. {gc.orphans[:2]}")
    ctx.fault(len(lines))
    gc.orphans.clear()
    expected_minus1 = sum(1 for _, rid, _ in GARBAGE if rid == -1)
    id_calls = {}
    for raw, rid, is_err in GARBAGE:
        if rid not in (None, -1):
            id_calls[rid] = gc.calls[rid] = Call("garbage", None)
        gc.send_bytes(raw + b"\n")
    ctx.fault(len(GARBAGE))
    hub.run_until(lambda: gc.dead or (len(gc.orphans) >= expected_minus1 and all(c.done for c in id_calls.values())),
                  20)
    missing = [rid for rid, c in id_calls.items() if not c.done]
    wrong = []
    for raw, rid, is_err in GARBAGE:
        if rid in id_calls and id_calls[rid].done:
            got_err = "error" in id_calls[rid].msg
            if got_err != is_err:
                wrong.append(f"{raw[:60]!r}: {json.dumps(id_calls[rid].msg)[:160]}")
    ctx.check("malformed and invalid requests: each answered with its id (or -1), errors where due",
              not gc.dead and not missing and not wrong and len(gc.orphans) >= expected_minus1,
              f"dead={gc.dead}; no reply for ids {missing}; wrong {wrong[:3]}; {len(gc.orphans)} id -1 replies "
              f"of {expected_minus1}")
    # Lines over maxMessageBytes (16 MiB): messageTooLarge, the connection stays open.
    mmb = (gc.init_result or {}).get("capabilities", {}).get("maxMessageBytes") or (16 << 20)
    gc.orphans.clear()
    big = b'{"id":600,"method":"environment/status","params":{"pad":"' + b"y" * (mmb + 1024) + b'"}}\n'
    gc.send_bytes(big)
    gc.send_bytes(b"z" * (mmb + 10) + b"\n")
    ctx.fault(2)
    hub.run_until(lambda: gc.dead or len([m for m in gc.orphans if (m.get("error") or {}).get("data", {}).get("kind")
                                          == "messageTooLarge"]) >= 2, 60)
    tl = [m for m in gc.orphans if (m.get("error") or {}).get("data", {}).get("kind") == "messageTooLarge"]
    ctx.check(f"two lines over maxMessageBytes ({mmb}): messageTooLarge each", len(tl) == 2,
              f"{len(tl)}: {gc.orphans[:3]}")
    r = gc.call("environment/status", {})
    ctx.check("the garbage connection still works afterwards", r.ok, rpc_detail(r))
    # Garbage before initialize, then a normal handshake on the same connection.
    g2 = ctx.conn("garbage-preinit", init=False)
    for ln in _random_garbage(ctx.rng, 50):
        g2.send_bytes(ln + b"\n")
    g2.send_bytes(b'{"id":999,"method":"process/list"}\n')
    ctx.fault(51)
    try:
        g2.initialize("garbage-preinit", ttl_ms=100)
        ok = True
    except Exception as e:  # noqa: BLE001 - reported as the check's detail
        ok = repr(e)
    ctx.check("after garbage, initialize on the same connection works", ok is True, ok)
    gc.close()
    g2.close()

    r = ctx.ctl.call("environment/status", {})
    ctx.check("the daemon is healthy after the bad clients", r.ok and ctx.daemon.alive(), rpc_detail(r))
    ctx.check("the daemon answered every status probe within 2 s", probe.worst() < 2.0, f"worst {probe.worst():.2f} s")
    probe.stop()
    for pid in ("target", "mid-flood"):
        owner.request("process/terminate", {"processId": pid, "graceMs": 0})
    ctx.poll(lambda: not ctx.live_processes(), 20)
    owner.close()


def case_subscriptions(ctx):
    S = ctx.S
    hub = ctx.hub
    owner = ctx.conn("subs-owner")
    sid = owner.session_id
    P, K = S["subs_procs"], S["subs_conns"]
    calls = [ctx.start(owner, f"cat-{i}", ["cat"], pipeStdin=True) for i in range(P)]
    hub.run_until(lambda: all(c.done for c in calls), 60)
    ok = [i for i, c in enumerate(calls) if c.ok]
    if not ctx.check(f"{P} cats start", len(ok) == P, rpc_detail(next((c for c in calls if not c.ok), None))):
        return
    probe = LatencyProbe(ctx)
    conns = [ctx.conn(f"sub-{k}", ttl_ms=200) for k in range(K)]
    subs = {}
    t0 = time.monotonic()
    for k, c in enumerate(conns):
        for i in range(P):
            subs[(k, i)] = c.request("process/subscribe", {"processId": f"cat-{i}", "sessionId": sid})
    ctx.fault(len(subs))
    answered = hub.run_until(lambda: all(s.done for s in subs.values()), 120)
    dt = time.monotonic() - t0
    ctx.case.metrics["subscribe_requests"] = len(subs)
    ctx.case.metrics["subscribe_seconds"] = round(dt, 2)
    ctx.check(f"{len(subs)} process/subscribe requests all answered (no stall)", answered,
              f"{sum(1 for s in subs.values() if not s.done)} unanswered after {dt:.0f} s")
    per_proc = {i: 0 for i in range(P)}
    bad = []
    limited = 0
    for (k, i), s in subs.items():
        if s.ok:
            per_proc[i] += 1
        elif s.done:
            e = s.error or {}
            if (e.get("data") or {}).get("kind") == "limitReached" and (e.get("data") or {}).get("limit") == "subscribers":
                limited += 1
            else:
                bad.append(e)
    ctx.case.metrics["subscribe_ok"] = sum(per_proc.values())
    ctx.case.metrics["subscribe_limitReached"] = limited
    ctx.check("refused subscriptions are limitReached (limit subscribers), nothing else", not bad, bad[:3])
    most = max(per_proc.values()) + 1  # + the owner's own subscription
    ctx.check(f"subscribers per process capped at 64 (docs/protocol.md §7): limitReached past it", most <= 64,
              f"up to {most} subscribers on one process ({K} sessions asked, {limited} refused)")
    ctx.check("the daemon answered status within 2 s during the subscription storm", probe.worst() < 2.0,
              f"worst {probe.worst():.2f} s")
    # Fan-out: a line written to cat-0 reaches every accepted subscriber.
    token = f"fanout-{os.urandom(4).hex()}".encode()
    got = {}
    for k, c in enumerate(conns):
        s = subs[(k, 0)]
        if s.ok:
            got[k] = c.tr.watch((sid, "cat-0"), None, s.result["nextSeq"])
            got[k].keep_all = True
    owner.request("process/write", {"processId": "cat-0", "chunk": b64(token + b"\n")})
    hub.run_until(lambda: all(token in bytes(st.all) for st in got.values()), 20)
    miss = [k for k, st in got.items() if token not in bytes(st.all)]
    ctx.check(f"a line written to cat-0 reaches all {len(got)} subscribers", not miss, f"missing on {miss[:10]}")
    # Re-subscribing does not add subscribers.
    c0 = conns[0]
    rs = [c0.request("process/subscribe", {"processId": "cat-1", "sessionId": sid}) for _ in range(300)]
    hub.run_until(lambda: all(r.done for r in rs), 30)
    info = {p["processId"]: p for p in (ctx.all_processes() or []) if p.get("sessionId") == sid}
    n1 = info.get("cat-1", {}).get("subscribers")
    ctx.check("300 repeated subscribes from one session add no subscriber",
              n1 is not None and n1 == per_proc[1] + 1, f"cat-1 lists {n1} subscribers, expected {per_proc[1] + 1}")
    # Pending waits per connection: capped at 1024, limitReached past it, at once.
    wc = ctx.conn("waits", ttl_ms=200)
    W = S["waits"]
    waits = [wc.request("process/read", {"processId": "cat-2", "sessionId": sid, "afterSeq": 10**6,
                                          "waitMs": 60000}) for _ in range(W)]
    ctx.fault(W)
    hub.run_until(lambda: sum(1 for w in waits if w.done) >= W - 1024, 5)
    done = [w for w in waits if w.done]
    lim = [w for w in done if ((w.error or {}).get("data") or {}).get("kind") == "limitReached"]
    ctx.check(f"{W} long polls on one connection: {W - 1024} refused at once with limitReached (waits, max 1024)",
              len(lim) == W - 1024, f"{len(done)} answered within 5 s, {len(lim)} limitReached")
    r = wc.call("process/read", {"processId": "cat-2", "sessionId": sid}, 5)
    ctx.check("that connection still answers a plain process/read at once", r.ok and (r.t1 - r.t0) < 1.0,
              rpc_detail(r))
    probe.stop()
    for c in conns:
        c.close()
    wc.close()
    for i in range(P):
        owner.request("process/closeStdin", {"processId": f"cat-{i}"})
    ctx.poll(lambda: not ctx.live_processes(), 30)
    owner.close()


# ---- fd exhaustion (a private daemon with RLIMIT_NOFILE lowered) ---------------------------------

def case_fds(ctx):
    S = ctx.S
    hub = ctx.hub
    limit = S["fd_limit"]
    d, _ = _private_daemon(ctx, "fdlimit", nofile=limit)
    conns = []
    try:
        lim = open(f"/proc/{d.pid}/limits").read()
        line = [ln for ln in lim.splitlines() if ln.startswith("Max open files")]
        ctx.note(f"fd-limited daemon pid {d.pid}: {line[0] if line else '?'}")
        a = ctx.conn("fd-owner", daemon=d)
        conns.append(a)
        base_fds = fd_count(d.pid)
        failed = None
        started = []
        misses = 0
        for i in range(3 * limit):
            # Alternate pipe and tty sessions; after the first refusal only tty ones (fewer fds),
            # until three in a row fail: then no fd is left to speak of.
            tty = bool(i % 2) or failed is not None
            c = ctx.start_sync(a, f"s{i}", ["sleep", "1000"], tty=tty, timeout=10)
            if not c.done:
                failed = c
                break
            if not c.ok:
                failed = failed or c
                misses += 1
                ctx.fault()
                if misses >= 3:
                    break
                continue
            misses = 0
            started.append(f"s{i}")
        ctx.case.metrics["sessions_at_fd_limit"] = len(started)
        ctx.case.metrics["fds_at_limit"] = fd_count(d.pid)
        ctx.check("process/start at the fd limit gets an error response (not a crash or a hang)",
                  failed is not None and failed.done and failed.error is not None and d.alive(),
                  f"{len(started)} started; last {rpc_detail(failed)}; alive {d.alive()}")
        e = (failed.error if failed is not None and failed.done else None) or {}
        text = (e.get("message") or "") + " " + json.dumps(e.get("data") or {})
        ctx.case.metrics["fd_limit_error"] = e
        ctx.check("the error names the cause (open files / descriptors / EMFILE)",
                  any(w in text.lower() for w in ("open files", "descriptor", "emfile", "enfile")), e)
        r = a.call("environment/status", {}, 5)
        ctx.check("the daemon still answers at the fd limit", r.ok, rpc_detail(r))
        # A new connection while no fd is left: answered or closed at once, never hung.
        newc = []
        for k in range(3):
            nc = ctx.conn(f"fd-newconn-{k}", daemon=d, init=False)
            conns.append(nc)
            newc.append((nc, nc.request("initialize", {"clientName": "at-limit"})))
        hub.run_until(lambda: all(ic.done or nc.dead for nc, ic in newc), 5)
        ctx.check("3 new connections at the fd limit: each answered or closed at once (not left hanging)",
                  all(ic.done or nc.dead for nc, ic in newc), "no reply and still open after 5 s")
        ctx.note("new connections at the limit: " + ", ".join(
            "answered" if ic.done else "closed by the daemon" if nc.dead else "hung" for nc, ic in newc))
        share = daemon_cpu_share(d.pid, 2.0, hub)
        ctx.case.metrics["cpu_share_at_limit"] = round(share, 3)
        ctx.check("no busy loop at the fd limit (daemon CPU < 20%)", share < 0.2, f"{share * 100:.0f}% of a core")
        c = ctx.start_sync(a, "pipe-at-limit", ["true"], tty=False, timeout=10)
        ctx.check("a pipe process/start at the limit fails cleanly too", c.done and d.alive(), rpc_detail(c))
        for nc, _ in newc:
            nc.close()
        # Recovery: end half, then starting works again.
        half = started[: len(started) // 2]
        for p in half:
            a.request("process/terminate", {"processId": p, "graceMs": 0})
        hub.run_until(lambda: len([p for p in (ctx.live_processes(a) or [])]) <= len(started) - len(half), 20)
        hub.sleep(0.3)
        rec = [ctx.start_sync(a, f"again-{i}", ["sleep", "1000"], tty=bool(i % 2)) for i in range(5)]
        ctx.check("after ending half the sessions, process/start works again", all(c.ok for c in rec),
                  [rpc_detail(c) for c in rec if not c.ok][:2])
        nc2 = ctx.conn("fd-after", daemon=d, init=False)
        conns.append(nc2)
        try:
            nc2.initialize("fd-after")
            ok = True
        except Exception as ex:  # noqa: BLE001
            ok = repr(ex)
        ctx.check("and new connections are accepted again", ok is True, ok)
        nc2.close()
        for p in (ctx.live_processes(a) or []):
            a.request("process/terminate", {"processId": p["processId"], "graceMs": 0})
        ctx.poll(lambda: not ctx.live_processes(a), 20)
        # Exhaustion by connections.
        many = []
        for i in range(limit + 50):
            try:
                many.append(ctx.conn(f"many-{i}", daemon=d, init=False))
            except OSError:
                break
        ctx.fault(len(many))
        inits = [m.request("initialize", {"clientName": "many"}) for m in many]
        hub.run_until(lambda: all(ic.done or m.dead for ic, m in zip(inits, many)), 20)
        served = sum(1 for ic in inits if ic.done)
        closed = sum(1 for ic, m in zip(inits, many) if not ic.done and m.dead)
        ctx.case.metrics["connections_served_closed"] = [served, closed]
        ctx.check(f"{len(many)} connections against {limit} fds: each served or closed, none hung",
                  served + closed == len(many), f"served {served}, closed {closed}, of {len(many)}")
        for m in many:
            m.close()
        hub.sleep(0.5)
        r = a.call("environment/status", {}, 5)
        ctx.check("the daemon answers after the connection flood", r.ok and d.alive(), rpc_detail(r))
        ok = wait_for(lambda: fd_count(d.pid) == base_fds, 10)
        ctx.check(f"fd-limited daemon: fd count back to its baseline ({base_fds})", ok, f"now {fd_count(d.pid)}")
        z = zombies(d.pid)
        ctx.check("fd-limited daemon: no zombie", not z, z)
        a.close()
    finally:
        for c in conns:
            c.close()
        rc = d.stop()
        ctx.check("fd-limited daemon: SIGTERM exits 0", rc == 0, f"exit {rc}; log {d.log_tail(800)}")
        errs = d.log_grep("rror", "bort", "ssert")
        ctx.case.notes.append(f"fd-limited daemon log: {len(errs)} error-ish lines; first {errs[:3]}")


# ---- churn: memory per ended session ---------------------------------------------------------------

def _churn_round(ctx, d, n, tag):
    """n `true` sessions through connections that then go away (detachedTtlMs 100): each
    session is dropped with its processes, leaving tombstones (capped at 4096 per server)."""
    hub = ctx.hub
    per_conn = 1000
    for base in range(0, n, per_conn):
        c = ctx.conn(f"churn-{tag}-{base}", daemon=d, ttl_ms=100)
        calls = []
        for i in range(base, min(n, base + per_conn)):
            calls.append(ctx.start(c, f"t{i}", ["true"]))
            if len(calls) % 64 == 0:
                hub.run_until(lambda: sum(1 for x in calls if not x.done) < 32, 30)
        hub.run_until(lambda: all(x.done for x in calls), 60)
        bad = [x for x in calls if not x.ok]
        if bad:
            return f"{len(bad)} starts failed: {rpc_detail(bad[0])}"
        c.close()
    probe = ctx.conn(f"churn-{tag}-probe", daemon=d, ttl_ms=0)
    ctx.poll(lambda: not ctx.live_processes(probe) and (ctx.status(probe) or {}).get("sessions") == 1, 30)
    probe.close()
    hub.sleep(0.5)
    return None


def case_churn(ctx):
    """Sessions that come and go by the thousand, each through a connection that goes away: once
    past the tombstone cap (4096 per server, docs/protocol.md §5), an ended session must cost nothing."""
    S = ctx.S
    d, base_fds = _private_daemon(ctx, "churn")
    try:
        err = _churn_round(ctx, d, S["churn_warm"], "warm")
        if not ctx.check(f"{S['churn_warm']} sessions start and end (warm-up past the 4096 tombstones)", not err, err):
            return
        m0, r0 = malloc_in_use(d.pid, d.log_path), rss_kib(d.pid)
        total = 0
        for r in range(S["churn_rounds"]):
            err = _churn_round(ctx, d, S["churn_per_round"], f"r{r}")
            if not ctx.check(f"churn round {r + 1}: {S['churn_per_round']} sessions start and end", not err, err):
                return
            total += S["churn_per_round"]
        m1, r1 = malloc_in_use(d.pid, d.log_path), rss_kib(d.pid)
        ctx.case.metrics["churn_rss_kib"] = [r0, r1]
        ctx.case.metrics["churn_malloc_in_use"] = [m0, m1]
        if m0 is not None and m1 is not None:
            per, what = (m1 - m0) / total, f"malloc in-use bytes {m0} -> {m1}"
        else:
            per, what = (r1 - r0) * 1024.0 / total, f"VmRSS {r0} -> {r1} KiB (no gdb: RSS is only a rough measure)"
        ctx.case.metrics["churn_bytes_per_session"] = round(per, 1)
        ctx.note(f"churn: {what} over {total} dropped sessions ({per:.0f} B each)")
        if ctx.sanitized:
            ctx.case.notes.append("memory per session not checked (sanitizer build)")
        else:
            ctx.check(f"memory kept per ended session once past the tombstone cap: < 32 B ({total} sessions "
                      f"dropped with their connections)", per < 32, f"{what} = {per:.0f} B per session")
    finally:
        for c in [c for c in ctx.hub.conns if c is not ctx.ctl]:
            c.close()
        _finish_private(ctx, d, "churn", base_fds)


# ---- the daemon killed under load (src/holder/holder.h) -------------------------------------------

def case_crash(ctx):
    """The daemon replaced in the middle of streams, crash_rounds times, alternately by SIGKILL (a
    crash) and by SIGUSR2 to its holder (an upgrade, `uexec serve --upgrade`): the holder keeps
    every session and hands them to the next daemon; each process then ends by itself with its
    true exit code, and nothing is left: no zombie under the daemon or the holder, the new
    daemon's and the holder's fd tables back to their baselines."""
    S = ctx.S
    n = S["crash_sessions"]
    d, base_fds = _private_daemon(ctx, "crash")
    holder_fds = fd_count(d.holder)
    try:
        c = ctx.conn("crash-load", daemon=d, ttl_ms=-1)
        go = os.path.join(ctx.tmp, "crash-go")
        calls = []
        for i in range(n):
            # Output, paced, until the last crash is over; then exit with a code of its own.
            argv = ["sh", "-c", f"i=0; while [ ! -e {go} ]; do echo crash-{i}-$i; i=$((i+1)); sleep 0.02; done; "
                                f"exit {10 + i % 50}"]
            calls.append(ctx.start(c, f"c{i}", argv, tty=(i % 2 == 0), subscribe=False))
        ctx.wait(lambda: all(x.done for x in calls), 60)
        started = sum(1 for x in calls if x.ok)
        if not ctx.check(f"{n} sessions start", started == n, rpc_detail(next((x for x in calls if not x.ok), None))):
            return
        c.close()
        pids = {}
        for r in range(S["crash_rounds"]):
            ctx.hub.sleep(0.3)
            old = d.pid
            what = "upgrade" if r % 2 else "crash"
            os.kill(d.holder if r % 2 else old, signal.SIGUSR2 if r % 2 else signal.SIGKILL)
            ctx.fault()
            ok = ctx.poll(lambda: d.pid not in (None, old, d.holder) and os.path.exists(f"/proc/{old}") is False
                          and d._connectable(), 20, 0.05)
            ctx.check(f"{what} {r + 1}: the holder starts a new daemon", ok, d.log_tail(600))
            probe = ctx.conn(f"crash-probe-{r}", daemon=d, ttl_ms=0)
            procs = {p["processId"]: p for p in (ctx.all_processes(probe) or [])}
            probe.close()
            if r == 0:
                pids = {k: v.get("pid") for k, v in procs.items()}
            listed = [k for k in procs if k.startswith("c")]
            same = all(procs[k].get("pid") == pids.get(k) for k in listed)
            ctx.check(f"{what} {r + 1}: the new daemon lists every session with its pid",
                      len(listed) == n and same,
                      f"{len(listed)} of {n} listed; missing {sorted(set(pids) - set(listed))[:5]}; "
                      f"closed: {[(k, p.get('exitCode'), p.get('signal')) for k, p in procs.items() if p.get('state') == 'closed'][:5]}")
        open(go, "w").close()
        probe = ctx.conn("crash-end", daemon=d, ttl_ms=0)
        done = ctx.poll(lambda: not ctx.live_processes(probe), 60, 0.25)
        ctx.check("every session ends by itself after the crashes", bool(done), ctx.live_processes(probe))
        procs = {p["processId"]: p for p in (ctx.all_processes(probe) or [])}
        wrong = [(k, p.get("exitCode")) for k, p in procs.items()
                 if k.startswith("c") and p.get("exitCode") != 10 + int(k[1:]) % 50]
        ctx.check("every session that ended after the crashes reports its true exit code",
                  not wrong and len(procs) == n, f"{wrong[:8]} of {len(procs)}")
        probe.close()
        z = zombies(d.holder)
        ctx.check("crash: no zombie under the holder", not z, z)
        ok = wait_for(lambda: fd_count(d.holder) == holder_fds, 10)
        ctx.check(f"crash: the holder's fd count back to its baseline ({holder_fds})", ok, f"now {fd_count(d.holder)}")
    finally:
        for conn in [x for x in ctx.hub.conns if x is not ctx.ctl]:
            conn.close()
        _finish_private(ctx, d, "crash", base_fds)


# ---- backpressure faults (private daemons: a crash here must not take the main run down) --------

def _private_daemon(ctx, name, **kw):
    """A fresh daemon, warmed up (one process started and ended: the lazily made init memfd
    and friends exist), and its fd count then."""
    d = Daemon(ctx.uexec, ctx.tmp, name=name, **kw).start()
    w = ctx.conn(f"{name}-warmup", daemon=d, ttl_ms=100)
    st = w.tr.watch((w.session_id, "warm"))
    ctx.start_sync(w, "warm", ["true"])
    ctx.wait(lambda: st.closed is not None, 10)
    w.close()
    wait_for(lambda: False, 0.3)
    return d, fd_count(d.pid)


def _finish_private(ctx, d, label, base_fds=None):
    """Invariants of a private daemon, then SIGTERM."""
    alive = d.alive()
    ctx.check(f"{label}: the daemon survived", alive, f"{d.exit_text()}; log: {d.log_tail(600)}")
    if alive:
        if base_fds is not None:
            ok = wait_for(lambda: fd_count(d.pid) == base_fds, 10)
            ctx.check(f"{label}: fd count back to its baseline ({base_fds})", ok, f"now {fd_count(d.pid)}")
        z = zombies(d.pid)
        ctx.check(f"{label}: no zombie", not z, z)
    rc = d.stop()
    if alive:
        ctx.check(f"{label}: SIGTERM exits 0", rc == 0, d.exit_text())


def case_backpressure(ctx):
    """Clients that fall behind: readers that stall above the high watermark and then hang up,
    and a client that pipelines requests without reading a single reply."""
    hub = ctx.hub
    rounds = ctx.S["stall_close_rounds"]
    # 1. Subscribers stalled above the high watermark (4 MiB queued), then closed unread.
    d, base_fds = _private_daemon(ctx, "stallclose")
    try:
        a = ctx.conn("bp-owner", daemon=d)
        sid = a.session_id
        n = int(4_000_000 * (rounds * 5 + 30) / 64)
        st = a.tr.watch((sid, "flood"), Lines64(n))
        c = ctx.start_sync(a, "flood", lines64_argv(n, 4_000_000))
        ctx.check("stall-close: the flood starts", c.ok, rpc_detail(c))
        base_fds = None
        survived = 0
        for r in range(rounds):
            s = ctx.conn(f"stalled-{r}", daemon=d)
            s.call("process/subscribe", {"processId": "flood", "sessionId": sid})
            s.paused = True
            hub.sleep(4.0)          # > 4 MiB at 4 MB/s, beyond the socket buffers
            s.close()
            ctx.fault()
            hub.sleep(0.5)
            r2 = a.call("environment/status", {}, 3)
            if not (r2.ok and d.alive()):
                ctx.note(f"stall-close round {r + 1}: the daemon {'is ' + d.exit_text() if not d.alive() else 'does not answer'}")
                break
            survived += 1
        ctx.check(f"stall-close: {rounds} readers closed while above the high watermark; the daemon survives and "
                  f"answers", survived == rounds and d.alive(),
                  f"{survived} rounds survived; daemon {d.exit_text()}; log: {d.log_tail(400)}")
        if d.alive():
            a.request("process/terminate", {"processId": "flood", "graceMs": 0})
            hub.run_until(lambda: st.closed is not None, 10)
            ctx.check("stall-close: the owner's flood stream stayed exact", not st.errors, st.errors[:2])
            a.close()
    finally:
        for c in [c for c in hub.conns if c is not ctx.ctl]:
            c.close()
        _finish_private(ctx, d, "stall-close", base_fds)

    # 2. Requests pipelined by a client that reads nothing: docs/protocol.md §7 says the daemon
    #    stops reading its requests above the high watermark, which bounds its replies.
    d, base_fds = _private_daemon(ctx, "noread")
    try:
        a = ctx.conn("nr-owner", daemon=d)
        sid = a.session_id
        n = 40_000  # 2.5 MB: 1 MiB retained, each process/read reply about 1.4 MB of JSON
        st = a.tr.watch((sid, "big"), Lines64(n))
        ctx.start_sync(a, "big", lines64_argv(n))
        hub.run_until(lambda: st.closed is not None, 30)
        rss0 = rss_kib(d.pid)
        s = ctx.conn("no-reader", daemon=d)
        s.paused = True
        N = ctx.S["noread_requests"]
        for i in range(N):
            s.request("process/read", {"processId": "big", "sessionId": sid, "afterSeq": 0})
            hub.sleep(0.02)
        ctx.fault(N)
        hub.sleep(1.0)
        rss1 = rss_kib(d.pid)
        ctx.case.metrics["noread_rss_kib"] = [rss0, rss1]
        r = a.call("environment/status", {}, 5)
        ctx.check("no-reader: the daemon keeps answering others", r.ok, rpc_detail(r))
        ctx.check(f"no-reader: {N} pipelined process/read replies unread: daemon memory bounded "
                  f"(< +64 MiB; docs/protocol.md §7 stops reading requests above the high watermark)",
                  ctx.sanitized or rss1 - rss0 < 64 * 1024,
                  f"VmRSS {rss0} -> {rss1} KiB (+{(rss1 - rss0) / 1024:.0f} MiB)")
        # Read everything (so the next close is not the stall-close fault above), then close.
        s.paused = False
        hub.run_until(lambda: all(c.done for c in list(s.calls.values())) and not s.calls, 60)
        got = N - len(s.calls)
        ctx.check(f"no-reader: once it reads, all {N} replies arrive", got == N, f"{got} of {N}")
        s.close()
        hub.sleep(0.3)
        ctx.case.metrics["noread_rss_after_kib"] = rss_kib(d.pid)
        a.close()
    finally:
        for c in [c for c in hub.conns if c is not ctx.ctl]:
            c.close()
        _finish_private(ctx, d, "no-reader", base_fds)


CASES = {
    "load": case_load,
    "children": case_children,
    "forkbomb": case_forkbomb,
    "timeout": case_timeout,
    "clients": case_clients,
    "subscriptions": case_subscriptions,
    "fds": case_fds,
    "backpressure": case_backpressure,
    "churn": case_churn,
    "crash": case_crash,
}
ORDER = ["load", "children", "forkbomb", "timeout", "clients", "subscriptions", "fds", "backpressure", "churn",
         "crash"]
# Cases with daemons of their own: they run first, while the main daemon's warm-up expires.
OWN_DAEMON = {"fds", "backpressure", "churn", "crash"}
