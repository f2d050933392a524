#!/bin/sh
# Codex exec-server conformance: runs codex_conformance.py against uexec and, when the pinned npm package is
# installed (npm ci in this directory), against Codex itself.
# Usage: tests/e2e/conformance/run.sh UEXEC
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ]; then
    echo "usage: $0 UEXEC" >&2
    exit 2
fi
uexec=$1
python=${PYTHON:-python3}
total_pass=0
total_fail=0
status=0

run_peer() {
    name=$1
    shift
    echo "== peer: $name ($*)"
    out=$("$python" "$here/codex_conformance.py" "$@" exec-server --listen stdio)
    rc=$?
    printf '%s\n' "$out"
    summary=$(printf '%s\n' "$out" | sed -n 's/^conformance: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' | tail -n 1)
    if [ -z "$summary" ]; then
        summary="0 1"
        rc=1
    fi
    set -- $summary
    total_pass=$((total_pass + $1))
    total_fail=$((total_fail + $2))
    [ "$rc" -eq 0 ] || status=1
}

run_peer uexec "$uexec"

# Codex peer: the npm launcher needs node; without node, use the platform package's vendor binary directly.
codex=""
if [ -x "$here/node_modules/.bin/codex" ] && command -v node >/dev/null 2>&1; then
    codex="$here/node_modules/.bin/codex"
else
    for c in "$here"/node_modules/@openai/codex-linux-*/vendor/*/bin/codex; do
        if [ -x "$c" ]; then
            codex=$c
            break
        fi
    done
fi
if [ -n "$codex" ]; then
    run_peer codex "$codex"
else
    echo "== peer: codex skipped (run 'npm ci --ignore-scripts' in $here to install @openai/codex)"
fi

echo "conformance: $total_pass passed, $total_fail failed"
exit $status
