# bash completion for uexec (installed as <datadir>/bash-completion/completions/uexec).
# Commands, each command's options (tests/docs/man_in_step_test.py keeps them in step with
# `uexec COMMAND --help`), and the daemon's process ids and names where a command takes an ID.

_uexec_ids() {  # the ids and names `uexec ls` prints (nothing, quickly, when no daemon runs)
  UEXEC_AUTOSTART=0 timeout 2 "${1:-uexec}" ls 2>/dev/null |
    awk 'NR > 1 { print $1; if ($2 != "-") print $2 }'
}

_uexec() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
  fi
  local commands="run sandbox serve start ls attach send kill logs stop url mcp exec-server config demo help version"
  local sandbox_opts="--mode --writable --deny-read --network --backend --private-tmp --log-denials --approval --cwd --env --check --print"
  local policy_opts="--sandbox --writable --deny-read --network --backend --approval"
  local ws_opts="--allow-origin --allow-host --allow-remote --token-file"
  if [ "$cword" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  local cmd=${words[1]} i
  # After `--` the rest is a command line of its own.
  for ((i = 2; i < cword; i++)); do
    if [ "${words[i]}" = "--" ]; then
      COMPREPLY=($(compgen -c -- "$cur" | sort -u))
      return
    fi
  done
  case $prev in
    --cwd|--writable|--web-root) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --socket|--token-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --mode|--sandbox) COMPREPLY=($(compgen -W "read-only workspace-write danger-full-access" -- "$cur")); return ;;
    --network) COMPREPLY=($(compgen -W "on off" -- "$cur")); return ;;
    --backend) COMPREPLY=($(compgen -W "auto namespaces landlock bwrap seatbelt" -- "$cur")); return ;;
    --approval) COMPREPLY=($(compgen -W "never on-failure on-request untrusted" -- "$cur")); return ;;
    --signal) COMPREPLY=($(compgen -W "INT TERM KILL HUP QUIT TSTP CONT" -- "$cur")); return ;;
    --listen) COMPREPLY=($(compgen -W "stdio ws://127.0.0.1:0" -- "$cur")); return ;;
    --retain-exited) COMPREPLY=($(compgen -W "30s 10m 24h 7d forever" -- "$cur")); return ;;
    --env|--size|--deny-read|--name|--ws|--allow-origin|--allow-host|--shutdown-grace-ms) return ;;
  esac
  local opts=""
  case $cmd in
    run) opts="--tty --cwd --env --size --sandbox --private-tmp --log-denials $sandbox_opts" ;;
    sandbox) opts="$sandbox_opts" ;;
    serve) opts="--socket --ws --no-ws --web-root --no-web --replace --retain-exited --new-token --journal --no-journal --no-holder --upgrade $ws_opts $policy_opts" ;;
    start) opts="--tty --cwd --name" ;;
    ls) opts="--all" ;;
    send) opts="--no-newline" ;;
    kill) opts="--signal" ;;
    logs) opts="--follow --asciicast" ;;
    mcp) opts="--connect --structured-content $policy_opts" ;;
    exec-server) opts="--listen --shutdown-grace-ms $ws_opts $policy_opts" ;;
    config) opts="--path --sample" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
    return
  fi
  case $cmd in
    attach|send|kill|logs)
      # The ID is the first word that is not an option.
      local n=0
      for ((i = 2; i < cword; i++)); do [[ ${words[i]} == -* ]] || n=$((n + 1)); done
      if [ "$n" -eq 0 ]; then COMPREPLY=($(compgen -W "$(_uexec_ids "${words[0]}")" -- "$cur")); fi
      ;;
    run|sandbox|start) COMPREPLY=($(compgen -c -- "$cur" | sort -u)) ;;
  esac
}
complete -F _uexec uexec
