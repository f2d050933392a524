// cmd_exec_server.cc: `uexec exec-server --listen stdio`: the drop-in for Codex's
// `codex exec-server --listen stdio`, speaking the native protocol (a superset).
//
// On stdin EOF every process group of the session gets SIGKILL, as Codex does (with
// --shutdown-grace-ms N: SIGTERM first, then N ms), the children are reaped and the server
// exits 0. SIGTERM/SIGINT end everything with the default grace. stdout carries only
// protocol messages; diagnostics go to stderr.
//
// `--listen ws://IP:PORT` serves the same over WebSocket (Codex's `--listen ws://`): loopback
// only unless --allow-remote, which needs a token (UEXEC_WS_TOKEN or --token-file); browser
// origins are the loopback ones plus --allow-origin entries, Host names the loopback ones plus
// the configured hosts (--allow-host); a dropped connection detaches its session.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/host.h"
#include "policy/control_registry.h"
#include "cli/sandbox_flags.h"
#include "cli/user_config.h"
#include "cli/ws_listener_flags.h"

namespace uexec::cli {

int cmd_exec_server(const std::vector<std::string>& args) {
  std::string listen = "stdio";
  long grace_ms = -1;
  // The config file first (user_config.h); the flags below override it.
  bool wants_help = false;
  for (const auto& a : args) wants_help = wants_help || a == "--help" || a == "-h";
  std::optional<UserConfig> config = wants_help ? UserConfig{} : load_user_config_or_say("uexec exec-server");
  if (!config) return kExitUsage;
  SandboxFlags sandbox;
  sandbox.seed(*config);
  WsListenerFlags ws_flags;
  Flags flags(Unmatched::kRefuse, "argument");
  flags.help();
  sandbox.declare(flags);
  ws_flags.declare(flags);
  flags.value({"--listen"}, [&](const std::string& v) {
    listen = v;
    return Flags::Verdict{};
  });
  flags.value({"--shutdown-grace-ms"}, [&](const std::string& v) {
    grace_ms = std::atol(v.c_str());
    return Flags::Verdict{};
  });
  ParsedArgs parsed = flags.parse(args);
  if (parsed.help) {
    std::fputs(
        "usage: uexec exec-server [--listen stdio | --listen ws://IP:PORT [--allow-origin ORIGIN]...\n"
        "                         [--allow-host HOST]... [--allow-remote] [--token-file PATH]]\n"
        "                         [--shutdown-grace-ms N] [--sandbox MODE ...]\n"
        "  The Codex exec-server protocol (process/*, environment/*) plus uexec's extensions,\n"
        "  one JSON-RPC message per line on stdin/stdout. A Codex client works unchanged.\n"
        "  --listen ws://IP:PORT serves it over WebSocket instead (port 0 picks one; the URL is\n"
        "  printed on stdout). Set UEXEC_WS_TOKEN, or give --token-file PATH (it wins), to require\n"
        "  that token (`Authorization: Bearer <token>` or the subprotocol `uexec.auth.<token>`;\n"
        "  without it: 401; from a page of another origin, or under a Host name that is not\n"
        "  ours: 403). With --listen ws://:\n",
        stdout);
    std::fputs(WsListenerFlags::kHelp, stdout);
    std::fputs("  process/start takes its own `sandbox`; these set the default for exec/* (the agent tools):\n",
               stdout);
    std::fputs(SandboxFlags::kHelp, stdout);
    std::fputs(kConfigNote, stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "uexec exec-server: %s\n", parsed.error.c_str());
    return kExitUsage;
  }
  if (!sandbox.finish()) {
    std::fprintf(stderr, "uexec exec-server: %s\n", sandbox.error.c_str());
    return kExitUsage;
  }
  bool ws = listen.rfind("ws://", 0) == 0;
  if (listen != "stdio" && !ws) {
    std::fprintf(stderr, "uexec exec-server: --listen takes stdio or ws://IP:PORT, not %s\n", listen.c_str());
    return kExitUsage;
  }
  if (!ws && ws_flags.any()) {
    std::fputs("uexec exec-server: --allow-origin, --allow-host, --allow-remote and --token-file apply to --listen "
               "ws:// only\n",
               stderr);
    return kExitUsage;
  }
#if !UEXEC_HAVE_LWS
  if (ws) {
    std::fputs("uexec exec-server: this build has no WebSocket support (libwebsockets-dev was missing)\n", stderr);
    return kExitUsage;
  }
#else
  // The WebSocket listener's address, token and flags are checked before anything starts.
  web::WsOptions wo;
  if (ws) {
    if (!split_host_port(listen.substr(5), 0, &wo.host, &wo.port)) {
      std::fprintf(stderr, "uexec exec-server: --listen takes ws://IP:PORT (e.g. ws://127.0.0.1:0), not %s\n",
                   listen.c_str());
      return kExitUsage;
    }
    if (const char* t = std::getenv("UEXEC_WS_TOKEN")) wo.token = t;
    wo.token_hint = "It is the UEXEC_WS_TOKEN that `uexec exec-server` was started with.";
    if (!ws_flags.load_token_file(wo, "uexec exec-server")) return kExitUsage;  // it wins over UEXEC_WS_TOKEN
    if (sandbox.profile && wo.token.empty()) {
      // A sandboxed command with the network on could reach this port and start itself a
      // process without the sandbox: a sandbox needs an authenticated listener.
      std::fputs(sandbox.flagged ? "uexec exec-server: --sandbox with --listen ws:// needs a token (UEXEC_WS_TOKEN or --token-file)\n"
                                 : "uexec exec-server: the config's sandbox.mode with --listen ws:// needs a token "
                                   "(UEXEC_WS_TOKEN or --token-file)\n",
                 stderr);
      return kExitUsage;
    }
    if (!ws_flags.apply(wo, "uexec exec-server")) return kExitUsage;
  }
#endif
  HostOptions ho;
  ho.who = "uexec exec-server";
  ho.sessions_end_with_host = true;
  ho.sandbox = &sandbox;
  ho.config = &*config;
  if (grace_ms > 0) ho.terminate_grace = std::chrono::milliseconds{grace_ms};
  ho.exec_server.emplace();
  ho.exec_server->daemon = ws;  // over WebSocket a dropped connection detaches its session (resume within the TTL)
  auto host = Host::create(ho);
  if (!host) return kExitUsage;
#if UEXEC_HAVE_LWS
  if (ws) {
    auto port = host->listen_ws(wo);
    if (!port) {
      std::fprintf(stderr, "uexec exec-server: %s\n", port.error().message().c_str());
      return kExitInternal;
    }
    // Hidden from every sandbox of this user, whoever starts it (policy/control_registry.h).
    policy::ControlPlane plane;
    if (!ws_flags.token_file.empty()) plane.token_files.push_back(ws_flags.token_file);
    plane.tcp_ports.push_back(*port);
    auto registration = policy::ControlRegistration::add(plane);
    if (!registration)
      std::fprintf(stderr, "uexec exec-server: warning: other uexec processes' sandboxes will not hide this listener: %s\n",
                   registration.error().message().c_str());
    // Codex prints its URL on stdout; so do we, for clients that read it.
    bool v6 = wo.host.find(':') != std::string::npos;
    std::printf("ws://%s%s%s:%d\n", v6 ? "[" : "", wo.host.c_str(), v6 ? "]" : "", *port);
    std::fflush(stdout);
    warn_if_remote(wo, *port, "uexec exec-server");
    host->run();
    return 0;
  }
#endif
  if (auto r = host->serve_stdio(grace_ms <= 0); !r) {
    std::fprintf(stderr, "uexec exec-server: %s\n", r.error().message().c_str());
    return kExitInternal;
  }
  host->run();
  return 0;
}

}  // namespace uexec::cli
