#!/usr/bin/env python3
"""uexec soak and fault suite (issue 6 item 5). See tools/soak/README.md.

    tools/soak/soak.py [UEXEC_BINARY | BUILD_DIR] [--size ci|full] [--cases a,b] [--json PATH]

Starts a private `uexec serve --socket <tmp>/uexec.sock --no-ws` (log in <tmp>/daemon/serve.log),
warms it up, takes a baseline (fds, libuv handles, VmRSS) once the warm-up has expired, then
runs each case followed by the invariant checks, prints a summary table and exits 1 on any
failure (2 on a usage error). Python 3 standard library only.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from soak_cases import CASES, ORDER, OWN_DAEMON, warmup  # noqa: E402
from soak_ctx import CaseResult, Ctx, drain, invariants, take_baseline  # noqa: E402
from soak_proc import Daemon, children, cmdline_has, fd_count, kill_marked, marked, rss_kib, wait_for  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def find_binary(arg):
    cands = []
    if arg:
        if os.path.isdir(arg):
            cands += [os.path.join(arg, "src", "uexec"), os.path.join(arg, "uexec")]
        else:
            cands.append(arg)
    else:
        cands.append(os.path.join(ROOT, "build", "src", "uexec"))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    sys.exit(f"soak: no uexec binary at {' or '.join(cands)}")


def run_case(ctx, name, fn, with_invariants=True):
    case = CaseResult(name)
    ctx.case = case
    ctx.cases.append(case)
    print(f"\n== {name} ==", flush=True)
    faults0, sessions0, bytes0 = ctx.stats["faults"], ctx.stats["sessions"], ctx.stats["bytes"]
    try:
        fn(ctx)
    except Exception as e:  # noqa: BLE001 - a crash of the suite is a failed case, not an abort
        traceback.print_exc()
        ctx.check("the case ran to its end", False, f"{type(e).__name__}: {e}")
    finally:
        ctx.hub.hooks.clear()
        ctx.close_conns()
    if with_invariants and ctx.daemon is not None:
        try:
            invariants(ctx)
            if ctx.S["drain_each"]:
                if drain(ctx):
                    invariants(ctx, drained=True)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            ctx.check("the invariant checks ran", False, f"{type(e).__name__}: {e}")
    case.t1 = time.monotonic()
    case.metrics["faults"] = ctx.stats["faults"] - faults0
    case.metrics["sessions"] = ctx.stats["sessions"] - sessions0
    case.metrics["bytes"] = ctx.stats["bytes"] - bytes0
    n, bad = len(case.checks), len(case.failed)
    print(f"== {name}: {'PASS' if case.ok else 'FAIL'} ({n - bad}/{n} checks, {case.t1 - case.t0:.1f} s)", flush=True)
    return case


def final_shutdown(ctx):
    d = ctx.daemon
    t = time.monotonic()
    kids_before = [c[0] for c in children(d.pid)]
    rc = d.stop(timeout=20)
    ctx.check("SIGTERM: the daemon exits 0", rc == 0, f"exit {rc} after {time.monotonic() - t:.1f} s")
    ctx.check("SIGTERM: the daemon exits within 10 s", time.monotonic() - t < 10, f"{time.monotonic() - t:.1f} s")
    left = wait_for(lambda: not marked(ctx.marker), 5) or marked(ctx.marker)
    ctx.check("no process of the run is left after the daemon's SIGTERM", left is True or not left, left)
    kids = [p for p in kids_before if os.path.exists(f"/proc/{p}")]
    ctx.check("none of the daemon's last children survives it", not kids, kids)
    stray = cmdline_has(ctx.tmp)
    ctx.check("no process mentions the run's temp dir (socket path) any more", not stray, stray[:5])
    ctx.check("the socket is removed", not os.path.exists(d.sock), d.sock)


def human_bytes(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1000.0
    return str(n)


def summary(ctx, wall, size, cases_run):
    t = ctx.totals
    base = ctx.base.get("rss")
    final = t.get("rss_final")
    rss = "n/a"
    if base and final:
        rss = f"{base} KiB -> {final} KiB ({100.0 * (final - base) / base:+.1f}%)"
        fg = t.get("rss_file_growth")
        if fg is not None:
            rss += f", {100.0 * (final - fg - base) / base:+.1f}% less {fg} KiB of newly mapped code"
        if t.get("trimmed"):
            rss += f", {t['rss_after_malloc_trim']} KiB after malloc_trim (diagnosis)"
        peak = max([v for _, v in ctx.rss_samples] or [0])
        rss += f"; highest after a case {peak} KiB"
    handles = ("not checked (environment/status has no `handles`)" if ctx.base.get("handles") is None
               else "not measured (no drained check)" if t.get("handle_leak") is None else str(t["handle_leak"]))
    fds = "not measured" if t.get("fd_leak") is None else str(t["fd_leak"])
    rows = [("sessions started", str(ctx.stats["sessions"])),
            ("bytes streamed", f"{human_bytes(ctx.stats['bytes'])} ({ctx.stats['bytes']} B)"),
            ("faults injected", str(ctx.stats["faults"])),
            ("zombies", str(t["zombies"])),
            ("leaked fds", fds),
            ("leaked handles", handles),
            ("daemon RSS before/after", rss)]
    print("\n" + "=" * 78)
    print(f"uexec soak: size {size}, seed {ctx.seed}, wall {wall:.0f} s ({wall / 60:.1f} min)")
    print("-" * 78)
    print(f"{'case':<16}{'result':<8}{'time':>8}  {'checks':>7}  {'sessions':>8}  {'faults':>7}  bytes")
    for c in ctx.cases:
        n, bad = len(c.checks), len(c.failed)
        res = "SKIP" if c.skipped else ("PASS" if c.ok else "FAIL")
        print(f"{c.name:<16}{res:<8}{(c.t1 or time.monotonic()) - c.t0:>7.1f}s  {n - bad:>3}/{n:<3}  "
              f"{c.metrics.get('sessions', 0):>8}  {c.metrics.get('faults', 0):>7}  "
              f"{human_bytes(c.metrics.get('bytes', 0))}")
    print("-" * 78)
    for k, v in rows:
        print(f"{k:<26}{v}")
    for w in ctx.warnings:
        print(f"WARNING: {w}")
    failed = [(c.name, n, d) for c in ctx.cases for n, ok, d in c.checks if not ok]
    if failed:
        print("-" * 78)
        print(f"{len(failed)} failed check(s):")
        for cname, n, d in failed:
            print(f"  [{cname}] {n}" + (f"\n      {d[:600]}" if d else ""))
    print("=" * 78, flush=True)
    return {
        "size": size, "seed": ctx.seed, "wall_seconds": round(wall, 1), "uexec": ctx.uexec,
        "cases_requested": cases_run,
        "totals": {"sessions_started": ctx.stats["sessions"], "bytes_streamed": ctx.stats["bytes"],
                   "faults_injected": ctx.stats["faults"], "zombies": t["zombies"], "leaked_fds": t.get("fd_leak"),
                   "leaked_handles": t.get("handle_leak"), "handles_checked": ctx.base.get("handles") is not None,
                   "rss_kib_fresh": ctx.base.get("rss_fresh"), "rss_kib_baseline": base, "rss_kib_final": final,
                   "rss_kib_after_malloc_trim": t.get("rss_after_malloc_trim"),
                   "rss_change_pct": None if not (base and final) else round(100.0 * (final - base) / base, 2),
                   "rss_samples": ctx.rss_samples},
        "warnings": ctx.warnings,
        "cases": [c.to_json() for c in ctx.cases],
        "ok": not failed and all(c.ok or c.skipped for c in ctx.cases),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("uexec", nargs="?", help="the uexec binary or a build dir (default: <repo>/build/src/uexec)")
    ap.add_argument("--size", choices=["ci", "full"], default="ci")
    ap.add_argument("--cases", default="all", help=f"comma-separated subset of: {','.join(ORDER)}")
    ap.add_argument("--json", help="write the summary as JSON here")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (daemon logs) even on success")
    ap.add_argument("--no-drain", action="store_true", help="skip the final drained check (saves ~15 s)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the selected cases N times on the same daemon, with a drained check after each "
                         "round (a leak shows as a trend)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a size parameter (see SIZES in soak_ctx.py), e.g. --set sessions=2000; "
                         "stall_s=0 leaves the staller out of `load`")
    ap.add_argument("--daemon-env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for the main daemon (experiments, e.g. GLIBC_TUNABLES=...)")
    ap.add_argument("--no-trim", action="store_true",
                    help="do not call malloc_trim(0) through gdb when the drained VmRSS check fails")
    ap.add_argument("-v", "--verbose", action="store_true", help="print passing checks too")
    args = ap.parse_args()
    uexec = find_binary(args.uexec)
    names = ORDER if args.cases == "all" else [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; known: {ORDER}")
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    tmp = tempfile.mkdtemp(prefix="uexec-soak-")
    os.chmod(tmp, 0o700)
    ctx = Ctx(uexec, tmp, args.size, seed, args.verbose)
    for kv in args.set:
        k, _, v = kv.partition("=")
        if k not in ctx.S:
            ap.error(f"--set {kv}: unknown parameter; known: {', '.join(sorted(ctx.S))}")
        ctx.S = dict(ctx.S)
        ctx.S[k] = type(ctx.S[k])(int(v) if isinstance(ctx.S[k], bool) else v)
    ctx.trim_diagnose = not args.no_trim
    try:
        ldd = subprocess.run(["ldd", uexec], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        ldd = ""
    if "libasan" in ldd or "libtsan" in ldd:
        ctx.sanitized = True
        ctx.warn("sanitizer build: memory (VmRSS, malloc) checks are skipped, the allocator is not glibc's")
    t0 = time.monotonic()
    print(f"uexec soak: {uexec}, size {args.size}, cases {','.join(names)}, seed {seed}, tmp {tmp}"
          + (f", overrides {' '.join(args.set)}" if args.set else ""), flush=True)
    result = None
    try:
        denv = dict(os.environ)
        denv.update(kv.split("=", 1) for kv in args.daemon_env)
        ctx.daemon = Daemon(uexec, tmp, env=denv).start()
        setup = CaseResult("setup")
        ctx.case = setup
        ctx.cases.append(setup)
        ctx.ctl = ctx.conn("soak-control")
        ctx.check("the daemon starts and answers initialize", ctx.ctl.session_id is not None)
        ctx.base["rss_fresh"] = rss_kib(ctx.daemon.pid)
        ctx.log(f"daemon pid {ctx.daemon.pid}: fresh VmRSS {ctx.base['rss_fresh']} KiB, {fd_count(ctx.daemon.pid)} fds")
        main_cases = [n for n in names if n not in OWN_DAEMON]
        own = [n for n in names if n in OWN_DAEMON]
        if main_cases:
            warmup(ctx)
        setup.t1 = time.monotonic()
        # Cases with a daemon of their own run while the warm-up's processes expire.
        t_own = time.monotonic()
        for n in own:
            run_case(ctx, n, CASES[n], with_invariants=False)
        setup.t0 += time.monotonic() - t_own  # the setup row counts its own time only
        if main_cases:
            ctx.case = setup
            drain(ctx)
            take_baseline(ctx)
            setup.metrics["baseline"] = {k: v for k, v in ctx.base.items() if k != "fd_map"}
            setup.t1 = time.monotonic()
            for r in range(args.repeat):
                sfx = f"#{r + 1}" if args.repeat > 1 else ""
                for n in main_cases:
                    run_case(ctx, n + sfx, CASES[n])
                last = r == args.repeat - 1
                if not ctx.S["drain_each"] and (args.repeat > 1 or not args.no_drain) and (last or args.repeat > 1):
                    fin = CaseResult("drained" + sfx)
                    ctx.case = fin
                    ctx.cases.append(fin)
                    print(f"\n== drained{sfx}: every retained process expired ==", flush=True)
                    if drain(ctx):
                        invariants(ctx, drained=True)
                    fin.t1 = time.monotonic()
        ctx.case = CaseResult("shutdown")
        ctx.cases.append(ctx.case)
        ctx.ctl.close()
        final_shutdown(ctx)
        ctx.case.t1 = time.monotonic()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        c = CaseResult("suite")
        c.checks.append(("the suite ran", False, f"{type(e).__name__}: {e}"))
        ctx.cases.append(c)
    finally:
        if ctx.daemon is not None and ctx.daemon.alive():
            ctx.daemon.proc.send_signal(signal.SIGKILL)
        kill_marked(ctx.marker)
        wall = time.monotonic() - t0
        result = summary(ctx, wall, args.size, names)
        log_tail = ctx.daemon.log_tail(4000) if ctx.daemon else ""
        result["daemon_log_tail"] = log_tail
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        if not result["ok"]:
            print("---- daemon log (tail) ----\n" + log_tail[-2500:])
        if result["ok"] and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"soak: logs kept in {tmp}")
    sys.exit(0 if result and result["ok"] else 1)


if __name__ == "__main__":
    main()
