// cmd_exec_server.cc: `uexec exec-server --listen stdio`: the drop-in for Codex's
// `codex exec-server --listen stdio`, speaking the native protocol (a superset).
//
// On stdin EOF every process group of the session gets SIGKILL, as Codex does (with
// --shutdown-grace-ms N: SIGTERM first, then N ms), the children are reaped and the server
// exits 0. SIGTERM/SIGINT end everything with the default grace. stdout carries only
// protocol messages; diagnostics go to stderr.
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "agent/exec_service.h"
#include "loop/loop.h"
#include "loop/signal_watcher.h"
#include "rpc/exec_server.h"
#include "rpc/line_channel.h"
#include "session/process_manager.h"
#include "tools/uexec/commands.h"

extern char** environ;

namespace uexec::cli {

int cmd_exec_server(const std::vector<std::string>& args) {
  std::string listen = "stdio";
  long grace_ms = -1;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--listen" && i + 1 < args.size()) {
      listen = args[++i];
    } else if (args[i] == "--shutdown-grace-ms" && i + 1 < args.size()) {
      grace_ms = std::atol(args[++i].c_str());
    } else if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(
          "usage: uexec exec-server [--listen stdio] [--shutdown-grace-ms N]\n"
          "  The Codex exec-server protocol (process/*, environment/*) plus uexec's extensions,\n"
          "  one JSON-RPC message per line on stdin/stdout. A Codex client works unchanged.\n",
          stdout);
      return 0;
    } else {
      std::fprintf(stderr, "uexec exec-server: unknown argument %s\n", args[i].c_str());
      return kExitUsage;
    }
  }
  if (listen != "stdio") {
    std::fprintf(stderr, "uexec exec-server: --listen %s is not supported yet (stdio only; `uexec serve` listens on a Unix socket)\n",
                 listen.c_str());
    return kExitUsage;
  }
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  char cwd_buf[PATH_MAX];
  std::string cwd = ::getcwd(cwd_buf, sizeof cwd_buf) ? cwd_buf : "/";

  loop::Loop loop;
  base::Config cfg;
  cfg.close_drain = std::chrono::milliseconds{1000};  // protocol closeDrainMs
  if (grace_ms > 0) cfg.terminate_grace = std::chrono::milliseconds{grace_ms};
  auto pm = std::make_unique<session::ProcessManager>(loop, cfg);
  auto exec = std::make_unique<agent::ExecService>(*pm, env, cwd);
  auto server = std::make_unique<rpc::ExecServer>(*pm, exec.get(), env, cwd, rpc::ExecServerOptions{});
  rpc::LineChannel channel(loop, 0, 1);
  auto conn = server->connect({[&](std::string m) { channel.send(std::move(m)); },
                               [&] { return channel.queued_bytes(); },
                               [&](std::size_t n, std::function<void()> fn) { channel.when_below(n, std::move(fn)); }});
  bool stopping = false;
  auto stop = [&](bool kill_now) {
    if (stopping) return;
    stopping = true;
    channel.stop_reading();
    exec->shutdown([] {});
    server->shutdown(kill_now, [&] { channel.when_flushed([&] { loop.stop(); }); });
  };
  channel.on_line = [&](std::string_view line) { conn->handle_line(line); };
  channel.on_oversize = [&](std::size_t limit) { conn->handle_oversize(limit); };
  channel.on_eof = [&] { stop(grace_ms <= 0); };
  std::vector<std::unique_ptr<loop::SignalWatcher>> watchers;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    auto w = std::make_unique<loop::SignalWatcher>(loop);
    if (w->start(sig, [&](int) { stop(false); })) watchers.push_back(std::move(w));
  }
  if (auto r = channel.start(); !r) {
    std::fprintf(stderr, "uexec exec-server: %s\n", r.error().message().c_str());
    return kExitInternal;
  }
  loop.run();
  watchers.clear();
  conn.reset();
  server.reset();
  exec.reset();
  pm.reset();
  return 0;
}

}  // namespace uexec::cli
