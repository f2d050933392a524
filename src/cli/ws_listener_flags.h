// ws_listener_flags.h: the WebSocket listener's flags (`serve --ws`, `exec-server --listen
// ws://`) and the checks that go with them (docs/protocol.md §8).
//
// --allow-origin ORIGIN (repeatable) adds an exact browser origin to the loopback ones;
// --allow-host HOST (repeatable) a Host name to answer to besides the loopback ones;
// --allow-remote lets it listen on a non-loopback address, which needs a token; --token-file
// PATH gives that token. Like SandboxFlags, a flag's error is recorded and judged after the
// parse, by apply(), and only when there is a listener to apply it to.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"
#if UEXEC_HAVE_LWS
#include "web/ws_server.h"
#endif

namespace uexec::cli {

struct WsListenerFlags {
  std::vector<std::string> allow_origins;
  std::vector<std::string> allow_hosts;
  bool allow_remote = false;
  std::string token_file;
  std::string error;

  // True when any of the four flags was given.
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

  // Declares the four flags on `flags`; their values land here.
  void declare(Flags& flags);

#if UEXEC_HAVE_LWS
  // --token-file: the token and the 401's hint come from the file. True when there is none, or
  // after reading it; false after saying why on stderr (prefixed with `who`).
  bool load_token_file(web::WsOptions& wo, const char* who) const;
  // Applies the flags to a listener whose host and token are set: the origins are checked and
  // added; a non-loopback host needs --allow-remote and a token. False after saying why on
  // stderr (prefixed with `who`).
  bool apply(web::WsOptions& wo, const char* who) const;
#endif
};

// Splits a listen address: "127.0.0.1:8022", "[::1]:0", "0.0.0.0" (port `default_port`).
// The host comes back without brackets; false for a port that is not a number.
bool split_host_port(std::string hostport, int default_port, std::string* host, int* port);

#if UEXEC_HAVE_LWS
// The warning a listener on a non-loopback address logs once it listens on `port`.
void warn_if_remote(const web::WsOptions& wo, int port, const char* who);
#endif

}  // namespace uexec::cli
