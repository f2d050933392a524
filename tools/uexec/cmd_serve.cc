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
#include "tools/uexec/front_door.h"
#if UEXEC_HAVE_LWS
#include <fcntl.h>
#include <sys/stat.h>

#include "web/ws_server.h"
#endif

extern char** environ;

namespace uexec::cli {

int cmd_serve(const std::vector<std::string>& args) {
  std::string socket_path = rpc::default_socket_path();
  std::string ws = "127.0.0.1:8022";
  SandboxFlags sandbox;
  std::string web_root;
  bool web = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (sandbox.consume(args, i)) continue;
    if (args[i] == "--socket" && i + 1 < args.size()) {
      socket_path = args[++i];
    } else if (args[i] == "--ws" && i + 1 < args.size()) {
      ws = args[++i];
    } else if (args[i] == "--no-ws") {
      ws.clear();
    } else if (args[i] == "--web-root" && i + 1 < args.size()) {
      web_root = args[++i];
    } else if (args[i] == "--no-web") {
      web = false;
    } else if (args[i] == "-h" || args[i] == "--help") {
      std::fputs("usage: uexec serve [--socket PATH] [--ws HOST:PORT | --no-ws] [--web-root DIR | --no-web]\n"
                 "  The uexec daemon on a Unix socket (default $XDG_RUNTIME_DIR/uexec/uexec.sock or\n"
                 "  /tmp/uexec-$UID/uexec.sock) and on WebSocket ws://127.0.0.1:8022 (token in\n"
                 "  <socket dir>/token), which also serves the web terminal at http://127.0.0.1:8022/\n"
                 "  (open the URL it prints: the token rides in its #fragment). --web-root: the page's\n"
                 "  directory (default $UEXEC_WEB_ROOT, else the source tree's src/web/page).\n"
                 "  Stop it with SIGTERM or Ctrl-C. The default sandbox of exec/*:\n",
                 stdout);
      std::fputs(SandboxFlags::kHelp, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "uexec serve: unknown argument %s\n", args[i].c_str());
      return kExitUsage;
    }
  }
  if (!sandbox.finish()) {
    std::fprintf(stderr, "uexec serve: %s\n", sandbox.error.c_str());
    return kExitUsage;
  }
  std::vector<std::string> env = process_environment();
  std::string cwd = current_directory();

  loop::Loop loop;
  base::Config cfg;
  if (!containment_from_env(cfg, "uexec serve")) return kExitUsage;
  cfg.close_drain = std::chrono::milliseconds{1000};
  auto pm = std::make_unique<session::ProcessManager>(loop, cfg);
  auto exec = std::make_unique<agent::ExecService>(*pm, env, cwd);
  if (sandbox.profile) exec->set_default_sandbox(*sandbox.profile, sandbox.backend);
  rpc::ExecServerOptions opts;
  opts.daemon = true;
  auto server = std::make_unique<rpc::ExecServer>(*pm, exec.get(), env, cwd, opts);
  auto unix_server = std::make_unique<rpc::UnixServer>(loop, *server);
  if (auto r = unix_server->listen(socket_path); !r) {
    std::fprintf(stderr, "uexec serve: %s\n", r.error().message().c_str());
    return kExitInternal;
  }
  std::fprintf(stderr, "uexec serve: listening on unix:%s (pid %d)\n", socket_path.c_str(), ::getpid());
#if UEXEC_HAVE_LWS
  std::unique_ptr<web::WsServer> ws_server;
  if (!ws.empty()) {
    web::WsOptions wo;
    auto colon = ws.rfind(':');
    wo.host = colon == std::string::npos ? "127.0.0.1" : ws.substr(0, colon);
    wo.port = std::atoi(ws.substr(colon == std::string::npos ? 0 : colon + 1).c_str());
    if (wo.host != "127.0.0.1" && wo.host != "::1" && wo.host != "localhost") {
      std::fprintf(stderr, "uexec serve: refusing to listen on %s: only loopback is supported\n", wo.host.c_str());
      return kExitUsage;
    }
    // The token lives next to the socket, readable by us alone.
    wo.token = web::new_token();
    std::string token_path = socket_path.substr(0, socket_path.rfind('/')) + "/token";
    int fd = ::open(token_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::write(fd, wo.token.data(), wo.token.size()) < 0) {
      std::fprintf(stderr, "uexec serve: cannot write %s\n", token_path.c_str());
      return kExitInternal;
    }
    ::close(fd);
    if (web) wo.web_root = web_root.empty() ? web::default_web_root() : web_root;
    ws_server = std::make_unique<web::WsServer>(loop, *server, wo);
    if (auto r = ws_server->start(); !r) {
      std::fprintf(stderr, "uexec serve: %s\n", r.error().message().c_str());
      return kExitInternal;
    }
    std::fprintf(stderr, "uexec serve: listening on ws://%s:%d/ (token in %s)\n", wo.host.c_str(), ws_server->port(),
                 token_path.c_str());
    if (!wo.web_root.empty())
      std::fprintf(stderr, "uexec serve: web terminal at http://%s:%d/#token=%s\n",
                   wo.host == "::1" ? "[::1]" : wo.host.c_str(), ws_server->port(), wo.token.c_str());
  }
#endif

  bool stopping = false;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    UEXEC_LOG(kWarn, "shutting down: terminating {} processes", server->processes());
    unix_server.reset();  // no new clients; detaches the connected ones
#if UEXEC_HAVE_LWS
    if (ws_server) ws_server->stop();
#endif
    exec->shutdown([] {});
    server->shutdown(false, [&] { loop.stop(); });
  };
  auto watchers = on_stop_signals(loop, stop);
  // The listener keeps the loop alive; signal watchers are unref'd.
  loop.run();
  watchers.clear();
  unix_server.reset();
#if UEXEC_HAVE_LWS
  ws_server.reset();
#endif
  server.reset();
  exec.reset();
  pm.reset();
  std::fprintf(stderr, "uexec serve: stopped\n");
  return 0;
}

}  // namespace uexec::cli
