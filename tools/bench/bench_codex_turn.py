#!/usr/bin/env python3
"""bench_codex_turn: one scripted Codex turn through `uexec exec-server` against through Codex's own
`codex exec-server --listen stdio` (issue 18's agent row), and where the turn's time goes.

usage: bench_codex_turn.py UEXEC CODEX [--quick] [--json PATH]

The turn is tests/e2e/agents' "rich" scenario, as the codex-agent test plays it: the real Codex CLI
0.169.0 (`codex exec`) against the scripted stand-in for the OpenAI Responses API, with the
exec-server as its whole environment over stdio (environments.toml): 11 model requests and 10 tool
calls (apply_patch three times: add, update + add + delete, and one that escapes the workspace; a
command reading back what they wrote; a tty session driven by write_stdin; a write outside the
workspace; a failing command; one naming its parent), plus Codex's
own fs/* and environmentConfig/read traffic. Every run must pass the test's checks, or the
program fails.

Rows (ratios per round; rounds alternate which server goes first):
  A-turn         wall time of the whole `codex exec`, uexec / codex; target <= 0.8
  A-turn-server  the same turns' time spent inside the exec-server (each request's response
                 time, summed, long polls' waits included; measured through the test's logging
                 relay in a separate pair of runs per round, so the timed runs carry no relay),
                 uexec / codex (info)
  A-turn-share   that server time as a share of Codex's own turn through Codex's server (info):
                 the most any exec-server could take off the turn

Prints a Markdown table; --json writes the rows in bench_util's shape.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e", "agents"))
import codex_env_test  # noqa: E402  (the scripted turn and its checks)


def run(uexec, codex, server, tee):
    ws = tempfile.mkdtemp(prefix=f"bench-codex-turn-{server}-", dir="/var/tmp")
    opts = codex_env_test.Options(server=server, scenario="rich", no_tee=not tee, timeout=120.0)
    report = codex_env_test.run_one(opts, uexec, codex, ws)
    if not report["all_ok"]:
        codex_env_test.print_report(report)
        sys.exit(f"bench_codex_turn: the {server} turn failed its checks (logs in {ws})")
    server_s = server_time(os.path.join(ws, "proto.jsonl")) if tee else None
    shutil.rmtree(ws, ignore_errors=True)
    return report["elapsed_s"], server_s, report["protocol_requests"]


def server_time(proto_log):
    """Seconds between each request Codex sent and the server's response to it, summed."""
    sent, total = {}, 0.0
    with open(proto_log) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("dir") not in ("c2s", "s2c"):
                continue
            try:
                msg = json.loads(rec["line"])
            except ValueError:
                continue
            if not isinstance(msg, dict) or "id" not in msg:
                continue
            key = json.dumps(msg["id"])
            if rec["dir"] == "c2s" and "method" in msg:
                sent[key] = rec["t"]
            elif rec["dir"] == "s2c" and ("result" in msg or "error" in msg) and key in sent:
                total += rec["t"] - sent.pop(key)
    return total


def row(rid, name, ratios, target, cmp, absolute, absolute_text):
    med = statistics.median(ratios)
    met = None if cmp == "info" else (med <= target if cmp == "le" else med >= target)
    return {"id": rid, "name": name, "ratios": ratios, "rounds": len(ratios), "ratio_min": min(ratios),
            "ratio_median": med, "ratio_max": max(ratios),
            "target": "info" if cmp == "info" else f"{'<=' if cmp == 'le' else '>='} {target}",
            "met": met, "absolute": absolute, "absolute_text": absolute_text}


def abs3(unit, xs, digits):
    return "/".join(f"{x:.{digits}f}" for x in (min(xs), statistics.median(xs), max(xs))) + f" {unit}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("uexec")
    ap.add_argument("codex")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.access(a.codex, os.X_OK):
        print(f"bench_codex_turn: no Codex binary at {a.codex}; skipped", file=sys.stderr)
        return 0
    uexec, a.codex = os.path.abspath(a.uexec), os.path.abspath(a.codex)
    rounds = 2 if a.quick else 5
    wall_u, wall_c, srv_u, srv_c, share = [], [], [], [], []
    r_wall, r_srv = [], []
    requests = {}
    for r in range(rounds):
        order = ("uexec", "codex") if r % 2 == 0 else ("codex", "uexec")
        wall, srv = {}, {}
        for server in order:
            wall[server], _, _ = run(uexec, a.codex, server, tee=False)
        for server in order:
            _, srv[server], requests[server] = run(uexec, a.codex, server, tee=True)
        wall_u.append(wall["uexec"])
        wall_c.append(wall["codex"])
        srv_u.append(srv["uexec"])
        srv_c.append(srv["codex"])
        r_wall.append(wall["uexec"] / wall["codex"])
        r_srv.append(srv["uexec"] / srv["codex"] if srv["codex"] > 0 else float("nan"))
        share.append(srv["codex"] / wall["codex"])
        print(f"  round {r + 1}/{rounds}: turn uexec {wall['uexec']:.2f} s codex {wall['codex']:.2f} s; "
              f"in the server uexec {srv['uexec'] * 1000:.0f} ms codex {srv['codex'] * 1000:.0f} ms", file=sys.stderr)
    rows = [
        row("A-turn", "scripted Codex turn (10 tool calls: 3 apply_patch, 6 exec_command incl. a tty session, write_stdin), wall time, uexec exec-server / codex exec-server",
            r_wall, 0.8, "le", {"uexec_s": wall_u, "codex_s": wall_c},
            f"uexec {abs3('s', wall_u, 2)}; codex {abs3('s', wall_c, 2)}"),
        row("A-turn-server", "time inside the exec-server during the turn (responses summed), uexec / codex (info)",
            r_srv, 0, "info", {"uexec_s": srv_u, "codex_s": srv_c, "requests": requests},
            f"uexec {abs3('ms', [x * 1000 for x in srv_u], 0)}; codex {abs3('ms', [x * 1000 for x in srv_c], 0)}"),
        row("A-turn-share", "Codex's server time / Codex's whole turn: the most a server could save (info)",
            share, 0, "info", {}, f"{abs3('%', [x * 100 for x in share], 1)}"),
    ]
    print("\n### bench_codex_turn (the Codex CLI 0.169.0, scripted turn)\n")
    print("| id | name | ratio min | ratio median | ratio max | target | met | absolute |")
    print("|---|---|---|---|---|---|---|---|")
    for x in rows:
        met = "(info)" if x["met"] is None else ("yes" if x["met"] else "**no**")
        print(f"| {x['id']} | {x['name']} | {x['ratio_min']:.3f} | {x['ratio_median']:.3f} | {x['ratio_max']:.3f} | "
              f"{x['target']} | {met} | {x['absolute_text']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
