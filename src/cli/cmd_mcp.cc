// cmd_mcp.cc: `uexec mcp`: an MCP server on stdio, with its own ProcessManager or, with
// --connect, with its sessions in the running daemon.
//
// Alone, the server owns its sessions: on stdin EOF (the client went away), SIGTERM or SIGINT
// it terminates every session with the usual escalation, flushes what it still has to say,
// and exits 0. With --connect [SOCKET] it relays each tool call to `uexec serve` (McpRelay):
// the sessions are the daemon's, so they outlive this process and other clients of the daemon
// can find them; on stdin EOF it just closes its connection and exits 0. A daemon it cannot reach
// at start is an error (exit 125). Diagnostics go to stderr only; stdout carries protocol
// messages.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/daemon_autostart.h"
#include "cli/flags.h"
#include "cli/host.h"
#include "cli/sandbox_flags.h"
#include "cli/user_config.h"
#include "loop/loop.h"
#include "rpc/line_channel.h"
#include "rpc/mcp_relay.h"
#include "rpc/unix_server.h"

namespace uexec::cli {

namespace {

constexpr const char* kUsage =
    "usage: uexec mcp [--sandbox MODE [--writable DIR]... [--deny-read GLOB]... [--network on|off]\n"
    "                 [--approval POLICY]] [--structured-content]\n"
    "       uexec mcp --connect [SOCKET] [--structured-content]\n"
    "  An MCP server on stdin/stdout (JSON-RPC 2.0, one message per line) with the tools\n"
    "  exec_command, write_stdin, list_sessions, kill_session and read_output.\n"
    "  Register it with an MCP client, e.g.:  claude mcp add uexec -- uexec mcp --sandbox workspace-write\n"
    "  Alone it runs its own sessions and ends them when its client goes away. With --connect\n"
    "  the sessions live in the running daemon (`uexec serve`, at SOCKET, or unix:SOCKET;\n"
    "  default $UEXEC_SOCKET, else the daemon's default socket): they outlive this process, other\n"
    "  MCP clients of the daemon list them, and the daemon's own --sandbox applies to them.\n"
    "  Progress (notifications/progress) is relayed; a cancelled call's reply is dropped, but\n"
    "  the daemon's wait runs to its end.\n"
    "  Approvals (--approval, or the daemon's with --connect) are asked of the MCP client with\n"
    "  elicitation/create when it declared the `elicitation` capability; otherwise the answer is\n"
    "  denied and the tool result says that approval was needed.\n"
    "  --structured-content  tool results also carry structuredContent and tools an outputSchema\n"
    "                        (off by default: Codex and Claude Code then show the model that JSON\n"
    "                        instead of the text, and Gemini CLI ignores it)\n";

// `uexec mcp --connect`: MCP on stdio, tool calls relayed to the daemon at `socket_path`.
int run_connected(const std::string& socket_path, bool structured_content, long default_output_tokens) {
  // A daemon that closes its end under a pending write must be an EOF to handle, not a signal
  // that ends us (here no PtyProcess has set SIGPIPE aside for us).
  ::signal(SIGPIPE, SIG_IGN);
  loop::Loop loop;
  rpc::LineChannel channel(loop, 0, 1);
  rpc::McpRelay relay(loop, socket_path, [&](std::string msg) { channel.send(std::move(msg)); });
  relay.set_structured_content(structured_content);
  // The daemon reads the same config file: its default budget is this one.
  relay.set_default_output_tokens(default_output_tokens);
  int code = 0;
  bool stopping = false;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    channel.stop_reading();
    relay.stop();  // the sessions stay in the daemon
    channel.when_flushed([&] { loop.stop(); });
  };
  channel.on_line = [&](std::string_view line) { relay.handle_line(line); };
  channel.on_oversize = [&](std::size_t limit) { relay.handle_oversize(limit); };
  channel.on_eof = stop;
  auto watchers = on_stop_signals(loop, stop);
  // The client's messages are read only once the daemon has accepted us, so a daemon that is
  // not there is a start-up error, not a stream of failed calls.
  auto started = relay.start([&](base::Result<void> ready) {
    if (!ready) {
      std::fprintf(stderr, "uexec mcp: %s\n", ready.error().message().c_str());
      code = kExitInternal;
      stopping = true;
      relay.stop();
      loop.stop();
      return;
    }
    if (auto r = channel.start(); !r) {
      std::fprintf(stderr, "uexec mcp: %s\n", r.error().message().c_str());
      code = kExitInternal;
      stopping = true;
      relay.stop();
      loop.stop();
    }
  });
  if (!started) {
    std::fprintf(stderr,
                 "uexec mcp: %s\n"
                 "  Start the daemon with `uexec serve`, or name its socket: uexec mcp --connect SOCKET\n",
                 started.error().message().c_str());
    return kExitInternal;
  }
  loop.run();
  watchers.clear();
  return code;
}

}  // namespace

int cmd_mcp(const std::vector<std::string>& args) {
  // The config file first (user_config.h); the flags below override it.
  bool wants_help = false;
  for (const auto& a : args) wants_help = wants_help || a == "--help" || a == "-h";
  std::optional<UserConfig> config = wants_help ? UserConfig{} : load_user_config_or_say("uexec mcp");
  if (!config) return kExitUsage;
  SandboxFlags sandbox;
  sandbox.seed(*config);
  bool connect = false;
  bool structured_content = config->structured_content;
  std::string socket_path;
  Flags flags(Unmatched::kRefuse);
  flags.help();
  flags.on({"--structured-content"}, [&] { structured_content = true; });
  flags.optional_value("--connect", [&](std::optional<std::string> socket) {
    connect = true;
    if (socket) socket_path = *socket;
  });
  sandbox.declare(flags);
  ParsedArgs parsed = flags.parse(args);
  if (parsed.help) {
    std::fputs(kUsage, stdout);
    std::fputs(SandboxFlags::kHelp, stdout);
    std::fputs(kConfigNote, stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "uexec mcp: %s\n%s", parsed.error.c_str(), kUsage);
    return kExitUsage;
  }
  if (!sandbox.finish()) {
    std::fprintf(stderr, "uexec mcp: %s\n", sandbox.error.c_str());
    return kExitUsage;
  }
  if (connect) {
    if (sandbox.flagged) {  // the config file's [sandbox] is for the sessions of a manager of its own
      std::fputs("uexec mcp: --sandbox sets the sessions of uexec mcp's own manager; with --connect they are the "
                 "daemon's: start it with `uexec serve --sandbox MODE`\n",
                 stderr);
      return kExitUsage;
    }
    if (socket_path.rfind("ws://", 0) == 0 || socket_path.rfind("wss://", 0) == 0) {
      std::fputs("uexec mcp: --connect takes the daemon's Unix socket (PATH or unix:PATH); WebSocket is not "
                 "supported here\n",
                 stderr);
      return kExitUsage;
    }
    if (socket_path.rfind("unix:", 0) == 0) socket_path = socket_path.substr(5);
    if (socket_path.empty()) {
      const char* env = std::getenv("UEXEC_SOCKET");
      socket_path = env && *env ? env : rpc::default_socket_path();
      // The clients' own daemon is started when none runs (daemon_autostart.h); a socket
      // named on the command line is a particular daemon's, and only ever connected to.
      if (auto started = ensure_daemon(socket_path); !started) {
        std::fprintf(stderr, "uexec mcp: %s\n", started.error().message().c_str());
        return kExitInternal;
      }
    }
    return run_connected(socket_path, structured_content, config->max_output_tokens);
  }
  HostOptions ho;
  ho.who = "uexec mcp";
  ho.sessions_end_with_host = true;
  ho.sandbox = &sandbox;
  ho.config = &*config;
  auto host = Host::create(ho);
  if (!host) return kExitUsage;
  if (auto r = host->serve_mcp_stdio(structured_content); !r) {
    std::fprintf(stderr, "uexec mcp: %s\n", r.error().message().c_str());
    return kExitInternal;
  }
  host->run();
  return 0;
}

}  // namespace uexec::cli
