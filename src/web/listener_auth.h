// listener_auth.h: the pure pieces of who may use the WebSocket listener (docs/protocol.md §8),
// kept apart from libwebsockets so they build and test everywhere.
//
// The Host check (against DNS rebinding): a page of evil.example whose name is made to resolve
// to 127.0.0.1 reaches our port with `Host: evil.example:8022`; an upgrade is served only when
// Host names a loopback address (127.0.0.1 and the rest of 127/8, localhost, [::1]) or a host
// the server was configured with (its own listen address, the hosts of --allow-origin
// entries, --allow-host entries), with or without a port, compared without case.
//
//   "127.0.0.1:8022" "localhost" "[::1]:8022" "LOCALHOST."   → allowed
//   "evil.example:8022" "" "[::1" "a b" "host:port:x"       → refused
//
// The subprotocol check: libwebsockets (4.1) picks the first offered WebSocket subprotocol it
// serves and, when none matches, just closes the connection; it also closes it when the
// Sec-WebSocket-Protocol list is 127 bytes or longer, or when a name before the match is 64
// bytes or longer (what it copies them into). The listener answers those upgrades with an
// HTTP status first: `uexec.auth.<token>` alone, without `uexec.v1`, then says what to offer.
//
// The token file (--token-file PATH): the listener's token, read once at start; the file must
// exist, belong to the server's user, not be readable or writable by group or others, and hold
// a non-empty token (one trailing newline, "\n" or "\r\n", is stripped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace uexec::web {

// True for a loopback address or name: 127.0.0.0/8, ::1 and ::ffff:127.x (bracketed or
// not), localhost; case-insensitive.
bool is_loopback_host(std::string_view host);

// The host of a Host header value ("example.com:8022" → "example.com", "[::1]:80" → "::1"),
// lower case, without a trailing dot; an Error for an empty or malformed value.
[[nodiscard]] base::Result<std::string> parse_host_header(std::string_view value);

// An --allow-host value as the server compares it: a host name or address, with an optional
// port that is ignored ("tools.example", "tools.example:8022", "[fd00::1]"); lower case. `*`
// and values with a scheme, path or spaces get an Error saying why.
[[nodiscard]] base::Result<std::string> parse_allowed_host(std::string_view host);

// Whether an upgrade whose Host header is `value` may proceed: a loopback name or address, or
// one of `allowed` (as parse_allowed_host returns them).
bool host_allowed(std::string_view value, const std::vector<std::string>& allowed);

// Why libwebsockets would drop an upgrade offering the subprotocols `value` (the
// Sec-WebSocket-Protocol header; empty: none offered, which is fine) when it serves `served`:
// a sentence for the client, or empty when the upgrade can proceed.
std::string subprotocol_problem(std::string_view value, std::string_view served);

// The token in `path` (see above); an Error naming the file and the problem.
[[nodiscard]] base::Result<std::string> read_token_file(const std::string& path);

}  // namespace uexec::web
