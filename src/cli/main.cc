// main.cc: the `uexec` entry point. Raises RLIMIT_NOFILE, then dispatches a subcommand.
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "session/owner_lifeline.h"

namespace {

constexpr const char* kUsage = R"(uexec: a PTY session manager

usage:
  uexec run [--tty] [--cwd DIR] [--env NAME=VALUE]... [--size ROWSxCOLS] -- CMD [ARG...]
      Run one command as a session and stream its output as it arrives. Exits with the
      command's exit code, or 128+N when signal N killed it. Without --tty, stdout and
      stderr stay separate and stdin is forwarded through a pipe; with --tty the command
      gets a PTY, and when stdin is a terminal it is put in raw mode and forwarded, with
      the window size, until the command ends.
      When the command cannot start: 127 (not found), 126 (found, cannot run), 125 (other).
      --sandbox MODE runs it sandboxed (the options of `uexec sandbox`).
  uexec sandbox [--mode MODE] [--writable DIR]... [--deny-read GLOB]... [--network on|off]
                [--backend auto|namespaces|landlock|bwrap] [--log-denials] -- CMD [ARG...]
      Run CMD under a sandbox policy on this terminal, like `codex sandbox`: read-only,
      workspace-write (default: the cwd and /tmp writable, .git/.codex/.uexec read-only,
      no network) or danger-full-access. `uexec sandbox --check` shows what this host has.
  uexec mcp [--sandbox MODE [--approval POLICY] ...] | uexec mcp --connect [SOCKET]
      An MCP server on stdio for AI agents: exec_command, write_stdin, list_sessions,
      kill_session, read_output. On stdin EOF it ends its sessions and exits 0; with
      --connect the sessions live in the daemon and outlive it. Approvals (--approval, or
      the daemon's) are asked with elicitation/create when the client declared elicitation;
      otherwise they are denied and the tool result says that approval was needed.
  uexec exec-server [--listen stdio|ws://IP:PORT] [--shutdown-grace-ms N] [--sandbox MODE
                    [--approval POLICY] ...] [--allow-origin ORIGIN]... [--allow-host HOST]...
                    [--allow-remote] [--token-file PATH]
      Codex exec-server's JSON-RPC protocol on stdio (process/*, environment/*), plus
      uexec's extensions (resize, list, subscribe, wait, limits, approvals, exec/*). A
      drop-in for `codex exec-server --listen stdio`.
  uexec serve [--socket PATH] [--ws HOST:PORT | --no-ws] [--web-root DIR | --no-web]
              [--allow-origin ORIGIN]... [--allow-host HOST]... [--allow-remote]
              [--token-file PATH] [--sandbox MODE [--approval POLICY] ...]
      The daemon: sessions that outlive their clients, on a Unix socket (mode 0600 in a
      0700 directory under $XDG_RUNTIME_DIR, else /tmp/uexec-$UID) and the web terminal on
      ws://127.0.0.1:8022 (a token in the runtime dir, kept across restarts, or the one in --token-file
      PATH: yours, mode 0600, one line). A WebSocket upgrade whose Host is not loopback or
      an --allow-host/--allow-origin host gets 403. SIGTERM ends it cleanly.
  uexec start [--tty] [--cwd DIR] -- CMD...    start a process in the daemon; prints its ID
  uexec ls                                     the daemon's processes
  uexec attach ID                              a terminal on a process (Ctrl-] detaches)
  uexec send ID TEXT [--no-newline]            type TEXT and Enter into a process
  uexec kill ID [--signal NAME]                terminate it (or send one signal)
  uexec logs ID [--follow]                     its retained output (--follow: and live)
  uexec stop                                   stop the daemon (its sessions end) and wait for it
  uexec url                                    the daemon's web terminal URL, with its token
      The clients find the daemon at $UEXEC_SOCKET, else the default socket path.
  uexec config [--path | --sample]
      The settings serve, exec-server and mcp start from (~/.config/uexec/config.toml, TOML),
      each with its effective value and where it came from; --sample prints a commented file.
      A flag on those commands overrides its key.
  uexec demo
      An interactive login shell ($SHELL -l) through the session core.
  uexec help | --help | -h
      This text.
  uexec version | --version | -V
      The version of uexec.

environment:
  UEXEC_LOG=error|warn|info|debug   log level for uexec's own messages (stderr; default warn)
)";

// Many sessions need many fds; Debian's soft limit is often 1024 with a far higher hard one.
void raise_nofile_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

int main(int argc, char** argv) {
  raise_nofile_limit();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return uexec::cli::kExitUsage;
  }
  std::string cmd = args.front();
  args.erase(args.begin());
  if (cmd == "run") return uexec::cli::cmd_run(args);
  if (cmd == "sandbox") return uexec::cli::cmd_sandbox(args);
  if (cmd == "demo") return uexec::cli::cmd_demo(args);
  if (cmd == "mcp") return uexec::cli::cmd_mcp(args);
  if (cmd == "exec-server") return uexec::cli::cmd_exec_server(args);
  if (cmd == "serve") return uexec::cli::cmd_serve(args);
  if (cmd == "fs-helper") return uexec::cli::cmd_fs_helper(args);
  if (cmd == "lifeline") return uexec::session::run_lifeline_watcher(3);
  if (cmd == "config") return uexec::cli::cmd_config(args);
  if (cmd == "ls" || cmd == "start" || cmd == "send" || cmd == "kill" || cmd == "logs" || cmd == "attach" ||
      cmd == "stop" || cmd == "url")
    return uexec::cli::cmd_client(cmd, args);
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "version" || cmd == "--version" || cmd == "-V") {
    std::printf("uexec %s\n", UEXEC_VERSION);
    return 0;
  }
  // One line, so the error does not scroll away behind the whole usage text.
  std::fprintf(stderr, "uexec: unknown command '%s' (`uexec --help` lists them)\n", cmd.c_str());
  return uexec::cli::kExitUsage;
}
