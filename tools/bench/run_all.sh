#!/usr/bin/env bash
# run_all.sh: runs every uexec benchmark one after another (never in parallel: the machines
# have 2 noisy cores and the benchmarks compare ratios within a run), merges their results
# into BUILD_DIR/bench/results.json and prints every table again at the end.
#
#   tools/bench/run_all.sh [--quick] [--peers] [BUILD_DIR]     (BUILD_DIR defaults to build)
#
# --quick   few rounds and small sizes: the whole suite in well under a minute
# --peers   also measure peers (T3): installs @lydell/node-pty into BUILD_DIR/peers with
#           npm when it is missing, and uses tmux from PATH; rows are skipped, with a
#           message, when a peer is unavailable
#
# Exits non-zero only when a benchmark program fails, not when a target is missed.
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

quick=()
peers=()
build=build
for arg in "$@"; do
  case "$arg" in
    --quick) quick=(--quick) ;;
    --peers) peers=(--peers) ;;
    -h|--help) usage 0 ;;
    -*) echo "run_all.sh: unknown option $arg" >&2; usage 2 ;;
    *) build="$arg" ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bench_dir="$build/tools/bench"
out="$build/bench"
programs=(bench_drain bench_spawn bench_echo bench_scale bench_agent bench_rpc bench_sandbox bench_slow_reader)

for p in "${programs[@]}"; do
  if [[ ! -x "$bench_dir/$p" ]]; then
    echo "run_all.sh: $bench_dir/$p is missing; build first: ninja -C $build" >&2
    exit 1
  fi
done
mkdir -p "$out"

if [[ ${#peers[@]} -gt 0 ]]; then
  export UEXEC_BENCH_PEERS="$build/peers"
  if [[ ! -f "$UEXEC_BENCH_PEERS/node_modules/@lydell/node-pty/package.json" ]]; then
    if command -v npm >/dev/null 2>&1; then
      echo "run_all.sh: installing @lydell/node-pty into $UEXEC_BENCH_PEERS" >&2
      mkdir -p "$UEXEC_BENCH_PEERS"
      npm install --prefix "$UEXEC_BENCH_PEERS" --no-audit --no-fund @lydell/node-pty >&2 ||
        echo "run_all.sh: npm install failed; node-pty rows will be skipped" >&2
    else
      echo "run_all.sh: npm not found; node-pty rows will be skipped" >&2
    fi
  fi
  command -v tmux >/dev/null 2>&1 || echo "run_all.sh: tmux not found; tmux rows will be skipped" >&2
fi

# What was measured: the commit (with "-dirty" when the tree differs from it), when, where
# and how. Every row of results.json carries it as "run", and results.md starts with it, so a
# number is never read without the commit it belongs to.
commit="$(git -C "$root" describe --always --dirty --abbrev=10 2>/dev/null || echo unknown)"
started="$(date -u '+%Y-%m-%dT%H:%M:%SZ')"
machine="$(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
mode="${quick[*]:-full} ${peers[*]:-}"
echo "run_all.sh: measuring commit $commit ($mode) from $started" >&2

failed=0
for p in "${programs[@]}"; do
  rm -f "$out/$p.json" "$out/$p.md"
  echo "== $p ${quick[*]:-} ${peers[*]:-}" >&2
  if ! "$bench_dir/$p" "${quick[@]}" "${peers[@]}" --json "$out/$p.json" >"$out/$p.md"; then
    echo "run_all.sh: $p failed" >&2
    failed=1
  fi
  cat "$out/$p.md"
done

# B1, the web terminal: one browser attached to a flood (node + Debian chromium; tools/dev
# bench installs both and tests/e2e/web's npm packages).
merged=("${programs[@]}")
rm -f "$out/bench_web.json" "$out/bench_web.md"
if command -v node >/dev/null 2>&1 && [[ -x /usr/bin/chromium ]]; then
  echo "== bench_web ${quick[*]:-}" >&2
  if node "$root/tools/bench/bench_web.mjs" "${quick[@]}" --build "$build" --json "$out/bench_web.json" >"$out/bench_web.md"; then
    merged+=(bench_web)
  else
    echo "run_all.sh: bench_web failed" >&2
    failed=1
  fi
  cat "$out/bench_web.md"
else
  echo "run_all.sh: node or /usr/bin/chromium missing; B1 (bench_web) skipped" >&2
fi

# A-turn, a scripted Codex turn through uexec's exec-server and through Codex's own (the Codex
# CLI from tests/e2e/conformance, which tools/dev bench installs).
codex_bin=("$root"/tests/e2e/conformance/node_modules/@openai/codex-linux-*/vendor/*/bin/codex)
rm -f "$out/bench_codex_turn.json" "$out/bench_codex_turn.md"
if [[ -x "${codex_bin[0]}" ]]; then
  echo "== bench_codex_turn ${quick[*]:-}" >&2
  if python3 "$root/tools/bench/bench_codex_turn.py" "$build/src/uexec" "${codex_bin[0]}" "${quick[@]}" \
       --json "$out/bench_codex_turn.json" >"$out/bench_codex_turn.md"; then
    merged+=(bench_codex_turn)
  else
    echo "run_all.sh: bench_codex_turn failed" >&2
    failed=1
  fi
  cat "$out/bench_codex_turn.md"
else
  echo "run_all.sh: no Codex CLI in tests/e2e/conformance; A-turn (bench_codex_turn) skipped" >&2
fi

finished="$(date -u '+%Y-%m-%dT%H:%M:%SZ')"
python3 - "$out" "$commit" "$started" "$finished" "$machine" "$mode" "${merged[@]}" <<'PY'
import json, os, sys
out, commit, started, finished, machine, mode = sys.argv[1:7]
programs = sys.argv[7:]
run = {"commit": commit, "started": started, "finished": finished, "machine": machine,
       "command": "tools/bench/run_all.sh " + mode.strip()}
merged = []
for p in programs:
    path = os.path.join(out, p + ".json")
    if os.path.exists(path):
        with open(path) as f:
            for row in json.load(f):
                row["program"] = p
                row["run"] = run
                merged.append(row)
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(merged, f, indent=2)
    f.write("\n")
with open(os.path.join(out, "results.md"), "w") as f:
    f.write("Measured at commit `%s`, %s to %s; %s; `%s`.\n" %
            (commit, started, finished, machine, run["command"]))
    for p in programs:
        path = os.path.join(out, p + ".md")
        if os.path.exists(path):
            f.write(open(path).read())
PY

echo
echo "=================== all results ($out/results.json) ==================="
cat "$out/results.md"
exit "$failed"
