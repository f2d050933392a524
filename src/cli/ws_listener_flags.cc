// ws_listener_flags.cc: the WebSocket listener's flags and checks (ws_listener_flags.h).
#include "cli/ws_listener_flags.h"

#include <unistd.h>

#include <cstdio>

#include "web/listener_auth.h"

namespace uexec::cli {

void WsListenerFlags::declare(Flags& flags) {
  flags.on({"--allow-remote"}, [this] { allow_remote = true; });
  flags.value({"--allow-host"}, [this](const std::string& v) {
    allow_hosts.push_back(v);
    return Flags::Verdict{};
  }, [this] {
    error = "--allow-host needs a host, e.g. --allow-host devbox.example";
    return Flags::Verdict{};
  });
  flags.value({"--token-file"}, [this](const std::string& v) {
    token_file = v;
    return Flags::Verdict{};
  }, [this] {
    error = "--token-file needs a path";
    return Flags::Verdict{};
  });
  flags.value({"--allow-origin"}, [this](const std::string& v) {
    allow_origins.push_back(v);
    return Flags::Verdict{};
  }, [this] {
    error = "--allow-origin needs an origin, e.g. --allow-origin https://example.com";
    return Flags::Verdict{};
  });
}

bool split_host_port(std::string hostport, int default_port, std::string* host, int* port) {
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
bool WsListenerFlags::load_token_file(web::WsOptions& wo, const char* who) const {
  if (token_file.empty()) return true;
  auto t = web::read_token_file(token_file);
  if (!t) {
    std::fprintf(stderr, "%s: %s\n", who, t.error().message().c_str());
    return false;
  }
  wo.token = std::move(*t);
  wo.token_hint = "It is in the file given to --token-file (" + token_file + ").";
  return true;
}

bool WsListenerFlags::apply(web::WsOptions& wo, const char* who) const {
  if (!error.empty()) {
    std::fprintf(stderr, "%s: %s\n", who, error.c_str());
    return false;
  }
  for (const auto& o : allow_origins) {
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
  for (const auto& h : allow_hosts) {
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
  if (!allow_remote) {
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

void warn_if_remote(const web::WsOptions& wo, int port, const char* who) {
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
