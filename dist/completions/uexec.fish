# fish completion for uexec (installed in <datadir>/fish/vendor_completions.d).
# tests/docs/man_in_step_test.py keeps the options in step with `uexec COMMAND --help`.

function __uexec_ids
    UEXEC_AUTOSTART=0 timeout 2 uexec ls 2>/dev/null | awk 'NR > 1 { print $1; if ($2 != "-") print $2 }'
end

set -l commands run sandbox serve start ls attach send kill logs stop url mcp exec-server config demo help version
complete -c uexec -f
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a run -d 'Run one command, streaming its output'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a sandbox -d 'Run a command under a sandbox policy'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a serve -d 'The daemon, with the web terminal'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a start -d 'Start a process in the daemon'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a ls -d "The daemon's processes"
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a attach -d 'A terminal on a process'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a send -d 'Type text into a process'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a kill -d 'Terminate a process, or signal it'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a logs -d "A process's retained output"
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a stop -d 'Stop the daemon'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a url -d "The web terminal's URL"
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a mcp -d 'An MCP server for agents on stdio'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a exec-server -d "Codex exec-server's protocol"
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a config -d "The config file's effective settings"
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a demo -d 'A login shell through the session core'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a help -d 'The usage'
complete -c uexec -n "not __fish_seen_subcommand_from $commands" -a version -d 'The version'

# Process ids and names for the commands that take one.
complete -c uexec -n "__fish_seen_subcommand_from attach send kill logs" -a '(__uexec_ids)'

# Options shared by the sandboxing commands.
complete -c uexec -n "__fish_seen_subcommand_from sandbox" -l mode -x -a 'read-only workspace-write danger-full-access'
complete -c uexec -n "__fish_seen_subcommand_from run serve mcp exec-server" -l sandbox -x -a 'read-only workspace-write danger-full-access'
complete -c uexec -n "__fish_seen_subcommand_from run sandbox serve mcp exec-server" -l writable -r -a '(__fish_complete_directories)'
complete -c uexec -n "__fish_seen_subcommand_from run sandbox serve mcp exec-server" -l deny-read -x
complete -c uexec -n "__fish_seen_subcommand_from run sandbox serve mcp exec-server" -l network -x -a 'on off'
complete -c uexec -n "__fish_seen_subcommand_from run sandbox serve mcp exec-server" -l backend -x -a 'auto namespaces landlock bwrap seatbelt'
complete -c uexec -n "__fish_seen_subcommand_from run sandbox serve mcp exec-server" -l approval -x -a 'never on-failure on-request untrusted'
complete -c uexec -n "__fish_seen_subcommand_from run sandbox" -l private-tmp
complete -c uexec -n "__fish_seen_subcommand_from run sandbox" -l log-denials
complete -c uexec -n "__fish_seen_subcommand_from sandbox" -l check -d 'What this host supports'
complete -c uexec -n "__fish_seen_subcommand_from sandbox" -l print -d 'Print the Seatbelt command (--backend seatbelt)'

# run, start
complete -c uexec -n "__fish_seen_subcommand_from run start" -l tty -d 'Give it a PTY'
complete -c uexec -n "__fish_seen_subcommand_from run sandbox start" -l cwd -r -a '(__fish_complete_directories)'
complete -c uexec -n "__fish_seen_subcommand_from run sandbox" -l env -x
complete -c uexec -n "__fish_seen_subcommand_from run" -l size -x
complete -c uexec -n "__fish_seen_subcommand_from start" -l name -x

# serve, exec-server
complete -c uexec -n "__fish_seen_subcommand_from serve" -l socket -r
complete -c uexec -n "__fish_seen_subcommand_from serve" -l ws -x
complete -c uexec -n "__fish_seen_subcommand_from serve" -l no-ws
complete -c uexec -n "__fish_seen_subcommand_from serve" -l web-root -r -a '(__fish_complete_directories)'
complete -c uexec -n "__fish_seen_subcommand_from serve" -l no-web
complete -c uexec -n "__fish_seen_subcommand_from serve" -l replace -d 'Stop the running daemon and take over'
complete -c uexec -n "__fish_seen_subcommand_from serve" -l retain-exited -x -a '30s 10m 24h 7d forever'
complete -c uexec -n "__fish_seen_subcommand_from serve" -l journal -d 'keep output and ends on disk'
complete -c uexec -n "__fish_seen_subcommand_from serve" -l no-journal -d 'no on-disk journal'
complete -c uexec -n "__fish_seen_subcommand_from serve" -l no-holder -d 'one process: a crash ends the sessions'
complete -c uexec -n "__fish_seen_subcommand_from serve" -l upgrade -d 'replace the running daemon with the binary on disk, keeping every session'
complete -c uexec -n "__fish_seen_subcommand_from serve" -l new-token
complete -c uexec -n "__fish_seen_subcommand_from serve exec-server" -l allow-origin -x
complete -c uexec -n "__fish_seen_subcommand_from serve exec-server" -l allow-host -x
complete -c uexec -n "__fish_seen_subcommand_from serve exec-server" -l allow-remote
complete -c uexec -n "__fish_seen_subcommand_from serve exec-server" -l token-file -r
complete -c uexec -n "__fish_seen_subcommand_from exec-server" -l listen -x -a 'stdio'
complete -c uexec -n "__fish_seen_subcommand_from exec-server" -l shutdown-grace-ms -x
complete -c uexec -n "__fish_seen_subcommand_from config" -l path -d "The file's path only"
complete -c uexec -n "__fish_seen_subcommand_from config" -l sample -d "A commented sample file"

# the daemon's clients, mcp
complete -c uexec -n "__fish_seen_subcommand_from ls" -l all
complete -c uexec -n "__fish_seen_subcommand_from send" -l no-newline
complete -c uexec -n "__fish_seen_subcommand_from kill" -l signal -x -a 'INT TERM KILL HUP QUIT TSTP CONT'
complete -c uexec -n "__fish_seen_subcommand_from logs" -l follow
complete -c uexec -n "__fish_seen_subcommand_from logs" -l asciicast -d "An asciicast v2 recording"
complete -c uexec -n "__fish_seen_subcommand_from mcp" -l connect -r
complete -c uexec -n "__fish_seen_subcommand_from mcp" -l structured-content
complete -c uexec -n "__fish_seen_subcommand_from $commands" -s h -l help
