// cmd_serve.cc: `uexec serve`: the daemon. Sessions outlive client connections.
//
// Listens on a Unix socket (mode 0600, in a 0700 directory under $XDG_RUNTIME_DIR or
// /tmp/uexec-$UID) speaking the native protocol; the CLI clients (`uexec ls | start |
// attach | send | kill | logs`) and any Codex exec-server client talk to it there.
// SIGTERM/SIGINT terminate every process with the usual escalation, then it exits 0 with
// nothing left running. Logs go to stderr (UEXEC_LOG sets the level).
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agent/exec_service.h"
#include "base/log.h"
#include "loop/loop.h"
#include "loop/signal_watcher.h"
#include "rpc/exec_server.h"
#include "rpc/unix_server.h"
#include "session/process_manager.h"
#include "tools/uexec/commands.h"

extern char** environ;

namespace uexec::cli {

int cmd_serve(const std::vector<std::string>& args) {
  std::string socket_path = rpc::default_socket_path();
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--socket" && i + 1 < args.size()) {
      socket_path = args[++i];
    } else if (args[i] == "-h" || args[i] == "--help") {
      std::fputs("usage: uexec serve [--socket PATH]\n"
                 "  The uexec daemon on a Unix socket (default $XDG_RUNTIME_DIR/uexec/uexec.sock or\n"
                 "  /tmp/uexec-$UID/uexec.sock). Stop it with SIGTERM or Ctrl-C.\n",
                 stdout);
      return 0;
    } else {
      std::fprintf(stderr, "uexec serve: unknown argument %s\n", args[i].c_str());
      return kExitUsage;
    }
  }
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  char cwd_buf[PATH_MAX];
  std::string cwd = ::getcwd(cwd_buf, sizeof cwd_buf) ? cwd_buf : "/";

  loop::Loop loop;
  base::Config cfg;
  cfg.close_drain = std::chrono::milliseconds{1000};
  auto pm = std::make_unique<session::ProcessManager>(loop, cfg);
  auto exec = std::make_unique<agent::ExecService>(*pm, env, cwd);
  rpc::ExecServerOptions opts;
  opts.daemon = true;
  auto server = std::make_unique<rpc::ExecServer>(*pm, exec.get(), env, cwd, opts);
  auto unix_server = std::make_unique<rpc::UnixServer>(loop, *server);
  if (auto r = unix_server->listen(socket_path); !r) {
    std::fprintf(stderr, "uexec serve: %s\n", r.error().message().c_str());
    return kExitInternal;
  }
  std::fprintf(stderr, "uexec serve: listening on unix:%s (pid %d)\n", socket_path.c_str(), ::getpid());

  bool stopping = false;
  std::vector<std::unique_ptr<loop::SignalWatcher>> watchers;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    UEXEC_LOG(kWarn, "shutting down: terminating {} processes", server->processes());
    unix_server.reset();  // no new clients; detaches the connected ones
    exec->shutdown([] {});
    server->shutdown(false, [&] { loop.stop(); });
  };
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    auto w = std::make_unique<loop::SignalWatcher>(loop);
    if (w->start(sig, [&](int) { stop(); })) watchers.push_back(std::move(w));
  }
  // The listener keeps the loop alive; signal watchers are unref'd.
  loop.run();
  watchers.clear();
  unix_server.reset();
  server.reset();
  exec.reset();
  pm.reset();
  std::fprintf(stderr, "uexec serve: stopped\n");
  return 0;
}

}  // namespace uexec::cli
