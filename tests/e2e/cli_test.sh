#!/usr/bin/env bash
# cli_test.sh UEXEC: end-to-end checks of `uexec run` as people use it.
set -u
uexec=$1
fail=0
pass=0
check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then pass=$((pass + 1)); else echo "FAIL: $1: expected [$2], got [$3]"; fail=$((fail + 1)); fi
}
contains() {  # contains NAME NEEDLE HAYSTACK
  case "$3" in *"$2"*) pass=$((pass + 1)) ;; *) echo "FAIL: $1: [$2] not in [$3]"; fail=$((fail + 1)) ;; esac
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The top level: a version, and an unknown command as one line that points to --help (the
# 60-line usage used to follow it and scroll the error away).
out=$("$uexec" --version); rc=$?
check "--version: exit code" 0 "$rc"
if [[ "$out" =~ ^uexec\ [0-9]+\.[0-9]+ ]]; then pass=$((pass + 1)); else echo "FAIL: --version: [$out]"; fail=$((fail + 1)); fi
check "version: the same" "$out" "$("$uexec" version)"
# Start-up: libwebsockets (and OpenSSL with it) is loaded only when a WebSocket listener
# starts (web/lws_api.h); linked, it cost every uexec process ~6 ms here.
libs=$(LD_TRACE_LOADED_OBJECTS=1 "$uexec" 2>&1)
case "$libs" in
  *libwebsockets*|*libssl*|*libcrypto*) echo "FAIL: loaded at exec: $(printf '%s\n' "$libs" | grep -E 'websockets|ssl|crypto' | tr '\n' ' ')"; fail=$((fail + 1)) ;;
  *libc.so*) pass=$((pass + 1)) ;;
  *) echo "FAIL: LD_TRACE_LOADED_OBJECTS gave no library list: [$libs]"; fail=$((fail + 1)) ;;
esac
"$uexec" no-such-command >"$tmp/out" 2>"$tmp/err"; rc=$?
check "unknown command: exit code" 2 "$rc"
check "unknown command: one line" 1 "$(wc -l <"$tmp/err")"
contains "unknown command: names it and --help" "unknown command 'no-such-command' (\`uexec --help\` lists them)" "$(cat "$tmp/err")"

# The daemon's clients: per-command help on stdout, an unknown option refused with the usage
# (`start --help` used to try to run a program called --help; `attach --help` looked for a
# process of that name; `ls --bogus` was ignored). None of these needs a daemon.
for c in ls start send kill logs attach stop; do
  out=$(UEXEC_SOCKET="$tmp/none.sock" "$uexec" "$c" --help 2>"$tmp/err"); rc=$?
  check "$c --help: exit code" 0 "$rc"
  contains "$c --help: its usage" "usage: uexec $c" "$out"
done
UEXEC_SOCKET="$tmp/none.sock" "$uexec" start --bogus -- true >"$tmp/out" 2>"$tmp/err"; rc=$?
check "start --bogus: exit code" 2 "$rc"
contains "start --bogus: names it" "uexec start: unknown option --bogus" "$(cat "$tmp/err")"
UEXEC_SOCKET="$tmp/none.sock" "$uexec" ls --bogus >"$tmp/out" 2>"$tmp/err"; rc=$?
check "ls --bogus: exit code" 2 "$rc"
contains "ls --bogus: names it" "uexec ls: unknown argument --bogus" "$(cat "$tmp/err")"

out=$("$uexec" run -- sh -c 'printf hello; exit 7'); rc=$?
check "printf hello; exit 7: stdout" hello "$out"
check "printf hello; exit 7: exit code" 7 "$rc"

"$uexec" run -- /nonexistent >"$tmp/out" 2>"$tmp/err"; rc=$?
check "/nonexistent: exit code" 127 "$rc"
contains "/nonexistent: message" "uexec: cannot run '/nonexistent'" "$(cat "$tmp/err")"
contains "/nonexistent: errno" "No such file or directory (ENOENT)" "$(cat "$tmp/err")"
check "/nonexistent: no stdout" "" "$(cat "$tmp/out")"

touch "$tmp/noexec"
"$uexec" run -- "$tmp/noexec" 2>"$tmp/err"; rc=$?
check "not executable: exit code" 126 "$rc"
contains "not executable: errno" "EACCES" "$(cat "$tmp/err")"

"$uexec" run --cwd /no/such/dir -- true 2>"$tmp/err"; rc=$?
check "bad cwd: exit code" 125 "$rc"
contains "bad cwd: message" "chdir /no/such/dir" "$(cat "$tmp/err")"

"$uexec" run -- sh -c 'kill -TERM $$'; rc=$?
check "SIGTERM: 128+15" 143 "$rc"
"$uexec" run --tty -- sh -c 'kill -KILL $$'; rc=$?
check "SIGKILL on a tty: 128+9" 137 "$rc"

"$uexec" run -- sh -c 'echo out; echo err >&2' >"$tmp/out" 2>"$tmp/err"
check "stdout stays stdout" out "$(cat "$tmp/out")"
check "stderr stays stderr" err "$(cat "$tmp/err")"

check "stdin is forwarded" "piped" "$(echo piped | "$uexec" run -- cat)"
check "stdin from a file" "$(head -c 100000 /etc/services | wc -c)" "$(head -c 100000 /etc/services > "$tmp/in"; "$uexec" run -- cat < "$tmp/in" | wc -c)"
check "--env" "bar" "$("$uexec" run --env FOO=bar -- sh -c 'echo $FOO')"
check "--cwd" "/usr" "$("$uexec" run --cwd /usr -- pwd)"
check "--tty gives a terminal" "yes" "$("$uexec" run --tty -- sh -c 'test -t 0 && test -t 1 && printf yes')"
check "--tty --size" "30 90" "$("$uexec" run --tty --size 30x90 -- stty size | tr -d '\r')"
check "pipes mode has no terminal" "no" "$("$uexec" run -- sh -c 'test -t 1 && printf yes || printf no')"
check "output larger than the ring arrives whole" 5000000 "$("$uexec" run -- head -c 5000000 /dev/zero | wc -c)"
check "a closed reader ends the command" 0 "$("$uexec" run -- yes | head -c 1000 >/dev/null; echo $?)"

"$uexec" run --bogus -- true 2>/dev/null; check "unknown option: usage error" 2 "$?"
"$uexec" run 2>/dev/null; check "no command: usage error" 2 "$?"
"$uexec" nonsense 2>/dev/null; check "unknown subcommand: usage error" 2 "$?"
"$uexec" --help >/dev/null; check "--help" 0 "$?"

# The Seatbelt policy within reach (issue 20): on any host, --backend seatbelt --print prints the
# macOS command these flags run, as one shell command whose words come back exactly.
(cd "$tmp" && "$uexec" sandbox --backend seatbelt --print --deny-read '*.pem' -- echo "it's \$HOME") \
  >"$tmp/sb.sh" 2>"$tmp/err"; rc=$?
check "seatbelt --print: exit 0" 0 "$rc"
check "seatbelt --print: a shell script" "#!/bin/sh" "$(head -n 1 "$tmp/sb.sh")"
contains "seatbelt --print: sandbox-exec with the policy text" "exec /usr/bin/sandbox-exec -p '(version 1)" "$(cat "$tmp/sb.sh")"
contains "seatbelt --print: the deny-read glob as a regex denial" '/[^/]*\.pem$"))' "$(grep '^(deny file-read\* (regex' "$tmp/sb.sh")"
contains "seatbelt --print: the writable root as a parameter" "-DWRITABLE_ROOT_" "$(cat "$tmp/sb.sh")"
# Run the script with sandbox-exec replaced by a printer of its words.
sed 's|^exec /usr/bin/sandbox-exec|printf "<%s>\\n"|' "$tmp/sb.sh" >"$tmp/words.sh"
words=$(sh "$tmp/words.sh")
check "seatbelt --print: the command's words survive the quoting" "<-->|<echo>|<it's \$HOME>" \
  "$(printf '%s\n' "$words" | tail -n 3 | paste -sd '|')"
check "seatbelt --print: -p carries the whole policy" "<(version 1)" "$(printf '%s\n' "$words" | sed -n 2p)"
"$uexec" sandbox --print -- true >/dev/null 2>"$tmp/err"; rc=$?
check "--print without --backend seatbelt: usage error" 2 "$rc"
contains "--print without --backend seatbelt: says so" "give --backend seatbelt" "$(cat "$tmp/err")"

here=$(dirname "$0")
if python3 "$here/cli_tty_test.py" "$uexec"; then pass=$((pass + 1)); else echo "FAIL: cli_tty_test.py"; fail=$((fail + 1)); fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
