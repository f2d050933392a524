// front_door.h: what every long-running front door (`mcp`, `exec-server`, `serve`) sets up
// the same way: the environment and directory it hands to its sessions, the signals that end
// it cleanly, the agent tools' default sandbox flags, and the WebSocket listener's flags
// (--allow-origin, --allow-host, --allow-remote, --token-file) with the checks that go with
// them (protocol.md §8).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "loop/loop.h"
#include "loop/signal_watcher.h"
#include "policy/profile.h"
#include "policy/orchestrator.h"
#include "policy/sandbox_attempt.h"
#include "web/listener_auth.h"
#if UEXEC_HAVE_LWS
#include "web/ws_server.h"
#endif

extern char** environ;

namespace uexec::cli {

inline std::vector<std::string> process_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

inline std::string current_directory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? buf : "/";
}

// UEXEC_CONTAINMENT=auto|cgroup|tracked|off picks how sessions' descendants are contained
// (session/containment.h); unset means auto. False, with a message, for another value.
inline bool containment_from_env(base::Config& cfg, const char* who) {
  const char* v = std::getenv("UEXEC_CONTAINMENT");
  if (!v || !*v) return true;
  std::string m = v;
  if (m == "auto") cfg.containment = base::ContainmentMode::kAuto;
  else if (m == "cgroup") cfg.containment = base::ContainmentMode::kCgroup;
  else if (m == "tracked") cfg.containment = base::ContainmentMode::kTracked;
  else if (m == "off") cfg.containment = base::ContainmentMode::kOff;
  else {
    std::fprintf(stderr, "%s: UEXEC_CONTAINMENT must be auto, cgroup, tracked or off (not \"%s\")\n", who, v);
    return false;
  }
  return true;
}

// SIGTERM, SIGINT and SIGHUP run `stop` on the loop; keep the result alive while it runs.
inline std::vector<std::unique_ptr<loop::SignalWatcher>> on_stop_signals(loop::Loop& loop, std::function<void()> stop) {
  std::vector<std::unique_ptr<loop::SignalWatcher>> watchers;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    auto w = std::make_unique<loop::SignalWatcher>(loop);
    if (w->start(sig, [stop](int) { stop(); })) watchers.push_back(std::move(w));
  }
  return watchers;
}

// The agent tools' default sandbox, from a front door's flags: --sandbox MODE, then
// --writable DIR, --deny-read GLOB, --network on|off, --backend B (each may repeat where it
// makes sense). consume() takes the flag at args[i] (and its value) and returns true, or
// returns false for a flag that is not one of these; `error` says what was wrong.
struct SandboxFlags {
  std::optional<policy::PermissionProfile> profile;
  policy::Backend backend = policy::Backend::kAuto;
  std::vector<std::string> writable, deny_read;
  std::optional<bool> network;
  policy::ApprovalPolicy approval = policy::ApprovalPolicy::kNever;
  std::string error;

  static constexpr const char* kHelp =
      "  --sandbox MODE      run every exec_command under read-only | workspace-write |\n"
      "                      danger-full-access\n"
      "  --writable DIR, --deny-read GLOB, --network on|off, --backend auto|namespaces|landlock|bwrap\n"
      "  --approval POLICY   never (default: denials are reported) | on-failure | on-request |\n"
      "                      untrusted: clients that declare `approvals` get approval/request;\n"
      "                      under `uexec mcp`, clients that declare `elicitation` get\n"
      "                      elicitation/create (others: denied, and the result says so)\n";

  bool consume(const std::vector<std::string>& args, std::size_t& i) {
    const std::string& a = args[i];
    if (a != "--sandbox" && a != "--writable" && a != "--deny-read" && a != "--network" && a != "--backend" &&
        a != "--approval")
      return false;
    if (i + 1 >= args.size()) {
      error = a + " needs a value";
      return true;
    }
    const std::string& v = args[++i];
    if (a == "--sandbox") {
      auto m = policy::parse_sandbox_mode(v);
      if (!m) error = m.error().context;
      else profile = policy::PermissionProfile::for_mode(*m);
    } else if (a == "--writable") {
      writable.push_back(v);
    } else if (a == "--deny-read") {
      deny_read.push_back(v);
    } else if (a == "--approval") {
      auto p = policy::parse_approval_policy(v);
      if (!p) error = p.error().context;
      else approval = *p;
    } else if (a == "--network") {
      if (v != "on" && v != "off") error = "--network needs on or off";
      network = v == "on";
    } else {
      auto b = policy::parse_backend(v);
      if (!b) error = b.error().context;
      else backend = *b;
    }
    return true;
  }

  // After all flags: the profile, or an error for sandbox flags without --sandbox.
  bool finish() {
    if (!error.empty()) return false;
    if (!profile) {
      if (!writable.empty() || !deny_read.empty() || network || approval != policy::ApprovalPolicy::kNever)
        error = "sandbox options need --sandbox MODE";
      return error.empty();
    }
    profile->writable_roots = writable;
    profile->deny_read = deny_read;
    if (network) profile->network = *network;
    return true;
  }
};

// The WebSocket listener's flags: --allow-origin ORIGIN (repeatable) adds an exact browser
// origin to the loopback ones; --allow-host HOST (repeatable) a Host name to answer to besides
// the loopback ones; --allow-remote lets it listen on a non-loopback address, which needs a
// token; --token-file PATH gives that token. consume() takes the flag at args[i] (and its
// value) and returns true, or returns false for another flag; `error` says what was wrong.
struct WsFlags {
  std::vector<std::string> allow_origins;
  std::vector<std::string> allow_hosts;
  bool allow_remote = false;
  std::string token_file;
  std::string error;

  bool any() const { return allow_remote || !allow_origins.empty() || !allow_hosts.empty() || !token_file.empty(); }

  static constexpr const char* kHelp =
      "  --allow-origin ORIGIN\n"
      "                      also accept WebSocket upgrades from this browser origin, exactly\n"
      "                      (http[s]://HOST[:PORT]; repeatable; `*` is refused). Default: only\n"
      "                      http://127.0.0.1:PORT, http://localhost:PORT, http://[::1]:PORT\n"
      "  --allow-host HOST   also answer WebSocket upgrades whose Host header names HOST (a name or\n"
      "                      address; any port; repeatable; `*` is refused). Default: only\n"
      "                      127.0.0.1, localhost and [::1], the listen address itself and the\n"
      "                      hosts of --allow-origin entries; others get 403 (DNS rebinding)\n"
      "  --allow-remote      allow a non-loopback listen address (e.g. 0.0.0.0:8022); the token\n"
      "                      stays required, and ws:// is not encrypted: trusted networks only\n"
      "  --token-file PATH   read the token from PATH (one line; a trailing newline is stripped)\n"
      "                      instead of making one; PATH must be yours and mode 0600 or stricter\n";

  bool consume(const std::vector<std::string>& args, std::size_t& i) {
    const std::string& a = args[i];
    if (a == "--allow-remote") {
      allow_remote = true;
      return true;
    }
    if (a == "--allow-host") {
      if (i + 1 >= args.size()) error = "--allow-host needs a host, e.g. --allow-host devbox.example";
      else allow_hosts.push_back(args[++i]);
      return true;
    }
    if (a == "--token-file") {
      if (i + 1 >= args.size()) error = "--token-file needs a path";
      else token_file = args[++i];
      return true;
    }
    if (a != "--allow-origin") return false;
    if (i + 1 >= args.size()) error = "--allow-origin needs an origin, e.g. --allow-origin https://example.com";
    else allow_origins.push_back(args[++i]);
    return true;
  }
};

// Splits a listen address: "127.0.0.1:8022", "[::1]:0", "0.0.0.0" (port `default_port`).
// The host comes back without brackets; false for a port that is not a number.
inline bool split_host_port(std::string hostport, int default_port, std::string* host, int* port) {
  while (!hostport.empty() && hostport.back() == '/') hostport.pop_back();
  std::string h = hostport, p;
  if (!hostport.empty() && hostport.front() == '[') {
    auto close = hostport.find(']');
    if (close == std::string::npos) return false;
    h = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') return false;
      p = hostport.substr(close + 2);
    }
  } else if (auto colon = hostport.rfind(':'); colon != std::string::npos && hostport.find(':') == colon) {
    h = hostport.substr(0, colon);
    p = hostport.substr(colon + 1);
  }
  if (h.empty()) h = "127.0.0.1";
  if (p.empty()) {
    *port = default_port;
  } else {
    if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos || std::stoi(p) > 65535) return false;
    *port = std::stoi(p);
  }
  *host = h;
  return true;
}

#if UEXEC_HAVE_LWS
// --token-file: the token and the 401's hint come from the file. True when there is none, or
// after reading it; false after saying why on stderr (prefixed with `who`).
inline bool load_token_file(const WsFlags& f, web::WsOptions& wo, const char* who) {
  if (f.token_file.empty()) return true;
  auto t = web::read_token_file(f.token_file);
  if (!t) {
    std::fprintf(stderr, "%s: %s\n", who, t.error().message().c_str());
    return false;
  }
  wo.token = std::move(*t);
  wo.token_hint = "It is in the file given to --token-file (" + f.token_file + ").";
  return true;
}

// Applies WsFlags to a listener whose host and token are set: the origins are checked and
// added; a non-loopback host needs --allow-remote and a token. False after saying why on
// stderr (prefixed with `who`); a remote listener gets its warning when it starts
// (warn_if_remote).
inline bool apply_ws_flags(const WsFlags& f, web::WsOptions& wo, const char* who) {
  if (!f.error.empty()) {
    std::fprintf(stderr, "%s: %s\n", who, f.error.c_str());
    return false;
  }
  for (const auto& o : f.allow_origins) {
    auto parsed = web::parse_allowed_origin(o);
    if (!parsed) {
      std::fprintf(stderr, "%s: %s\n", who, parsed.error().context.c_str());
      return false;
    }
    wo.allowed_origins.push_back(*parsed);
    // A host named in an allowed origin is one we answer to (the page's own server, proxied).
    std::string authority = parsed->substr(parsed->find("://") + 3);
    if (auto h = web::parse_host_header(authority); h && !web::is_loopback_host(*h)) wo.allowed_hosts.push_back(*h);
  }
  for (const auto& h : f.allow_hosts) {
    auto parsed = web::parse_allowed_host(h);
    if (!parsed) {
      std::fprintf(stderr, "%s: %s\n", who, parsed.error().context.c_str());
      return false;
    }
    wo.allowed_hosts.push_back(*parsed);
  }
  // The address it listens on is a name it answers to, unless it is a wildcard (a page can
  // reach 0.0.0.0 as well as 127.0.0.1: that name proves nothing).
  if (auto h = web::parse_allowed_host(wo.host.find(':') != std::string::npos ? "[" + wo.host + "]" : wo.host);
      h && *h != "0.0.0.0" && *h != "::" && !web::is_loopback_host(*h))
    wo.allowed_hosts.push_back(*h);
  if (web::is_loopback_host(wo.host)) return true;
  if (!f.allow_remote) {
    std::fprintf(stderr,
                 "%s: refusing to listen on %s: it is not a loopback address, so other machines could connect.\n"
                 "  Pass --allow-remote to mean it (the token stays required).\n",
                 who, wo.host.c_str());
    return false;
  }
  if (wo.token.empty()) {
    std::fprintf(stderr,
                 "%s: --allow-remote needs a token: without one anybody who reaches %s could run commands as "
                 "you.\n  Set UEXEC_WS_TOKEN to a long random secret, e.g. "
                 "UEXEC_WS_TOKEN=$(head -c32 /dev/urandom | base64), or give --token-file PATH.\n",
                 who, wo.host.c_str());
    return false;
  }
  return true;
}

// The warning a listener on a non-loopback address logs once it listens.
inline void warn_if_remote(const web::WsOptions& wo, int port, const char* who) {
  if (web::is_loopback_host(wo.host)) return;
  bool v6 = wo.host.find(':') != std::string::npos;
  std::fprintf(stderr,
               "%s: WARNING: listening on ws://%s%s%s:%d/, reachable from other machines (--allow-remote). Anyone "
               "with the token can run commands as uid %d; ws:// is not encrypted, so use it only on a trusted "
               "network or behind a TLS proxy or SSH tunnel.\n",
               who, v6 ? "[" : "", wo.host.c_str(), v6 ? "]" : "", port, static_cast<int>(::getuid()));
}
#endif

}  // namespace uexec::cli
