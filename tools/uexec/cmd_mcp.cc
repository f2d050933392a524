// cmd_mcp.cc: `uexec mcp`: an MCP server on stdio with its own ProcessManager.
//
// The server owns its sessions: on stdin EOF (the client went away), SIGTERM or SIGINT it
// terminates every session with the usual escalation, flushes what it still has to say,
// and exits 0. Diagnostics go to stderr only; stdout carries protocol messages.
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agent/exec_service.h"
#include "loop/loop.h"
#include "loop/signal_watcher.h"
#include "rpc/mcp_server.h"
#include "rpc/line_channel.h"
#include "session/process_manager.h"
#include "tools/uexec/commands.h"
#include "tools/uexec/front_door.h"

extern char** environ;

namespace uexec::cli {

int cmd_mcp(const std::vector<std::string>& args) {
  SandboxFlags sandbox;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(
          "usage: uexec mcp [--sandbox MODE [--writable DIR]... [--deny-read GLOB]... [--network on|off]]\n"
          "  An MCP server on stdin/stdout (JSON-RPC 2.0, one message per line) with the tools\n"
          "  exec_command, write_stdin, list_sessions, kill_session and read_output.\n"
          "  Register it with an MCP client, e.g.:  claude mcp add uexec -- uexec mcp --sandbox workspace-write\n",
          stdout);
      std::fputs(SandboxFlags::kHelp, stdout);
      return 0;
    }
    if (sandbox.consume(args, i)) continue;
    std::fprintf(stderr, "uexec mcp: unknown option %s (--connect comes with the daemon)\n", a.c_str());
    return kExitUsage;
  }
  if (!sandbox.finish()) {
    std::fprintf(stderr, "uexec mcp: %s\n", sandbox.error.c_str());
    return kExitUsage;
  }
  std::vector<std::string> env = process_environment();
  std::string cwd = current_directory();

  loop::Loop loop;
  base::Config cfg;
  if (!containment_from_env(cfg, "uexec mcp")) return kExitUsage;
  cfg.close_drain = std::chrono::milliseconds{1000};  // agent-semantics §1.1
  auto pm = std::make_unique<session::ProcessManager>(loop, cfg);
  auto exec = std::make_unique<agent::ExecService>(*pm, std::move(env), cwd);
  if (sandbox.profile) exec->set_default_sandbox(*sandbox.profile, sandbox.backend);
  rpc::LineChannel channel(loop, 0, 1);
  rpc::McpServer server(*exec, [&](std::string msg) { channel.send(std::move(msg)); });

  bool stopping = false;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    channel.stop_reading();
    exec->shutdown([&] { channel.when_flushed([&] { loop.stop(); }); });
  };
  channel.on_line = [&](std::string_view line) { server.handle_line(line); };
  channel.on_oversize = [&](std::size_t limit) { server.handle_oversize(limit); };
  channel.on_eof = stop;
  auto watchers = on_stop_signals(loop, stop);
  if (auto r = channel.start(); !r) {
    std::fprintf(stderr, "uexec mcp: %s\n", r.error().message().c_str());
    return kExitInternal;
  }
  loop.run();
  watchers.clear();
  exec.reset();
  pm.reset();
  return 0;
}

}  // namespace uexec::cli
