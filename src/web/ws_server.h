// ws_server.h: the WebSocket transport: libwebsockets on *our* libuv loop (foreign-loop
// mode, no second thread), one JSON-RPC message per text frame into an ordinary
// rpc::ExecServer::Connection.
//
// Security (docs/protocol.md §8): the front doors bind it to loopback unless given --allow-remote
// (is_loopback_host). An upgrade is checked before it happens, in
// LWS_CALLBACK_HTTP_CONFIRM_UPGRADE, while it is still plain HTTP and can get a real answer:
//   a Host that is not ours         → 403 Forbidden (DNS rebinding; listener_auth.h)
//   an Origin that is not ours      → 403 Forbidden, naming the origin
//   no token, or the wrong one      → 401 Unauthorized, saying how to send it and where it is
// "Ours" is http://127.0.0.1:<port>, http://localhost:<port>, http://[::1]:<port> and the
// exact --allow-origin entries; a client without Origin (not a browser) needs only the token.
// The token rides as `Authorization: Bearer <token>`, or as the subprotocol
// `uexec.auth.<token>` that browsers can send next to `uexec.v1`; it is compared in constant
// time. `GET /readyz` answers `200 ok` without a token. The web terminal's page (src/web/page:
// index.html, app.js, style.css and the xterm.js files from its node_modules) is served from a
// fixed list of paths, without a token: it holds no secret, and the WebSocket it opens needs
// one. Fragments are reassembled; a binary message gets a parse error and the connection
// stays open. Outbound messages wait in a per-connection queue that the ExecServer sees
// through Peer::queued, so its watermarks apply here too: above the high one the peer's
// messages are not read (lws_rx_flow_control), and a peer stalled there is closed.
//
// The listening socket is uexec's own (tcp_listener.h), each connection handed to lws as it is
// accepted, so that an upgrade passes the socket to the next daemon (listener_fd).
// Lifecycle: start() creates the lws context on the loop; stop() starts lws's staged
// teardown (safe inside a callback); the destructor turns the loop and completes it, so it
// must run outside any loop callback, before the Loop's leak check. Loop thread only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "loop/loop.h"
#include "rpc/exec_server.h"
#include "web/listener_auth.h"  // is_loopback_host
#include "web/tcp_listener.h"

struct lws_context;

namespace uexec::web {

struct WsOptions {
  std::string host = "127.0.0.1";
  int port = 8022;                 // 0: pick a free port (see port())
  std::string token;               // empty: no token required (exec-server on loopback)
  std::string token_hint;          // where a client finds the token, for the 401 text
  std::vector<std::string> allowed_origins;  // exact origins beyond loopback (parse_allowed_origin)
  std::vector<std::string> allowed_hosts;    // Host values beyond loopback (parse_allowed_host)
  std::size_t max_message_bytes = 16u << 20;
  std::string web_root;            // the web page's directory (index.html, node_modules/…); empty: none
};

// Where the page's files are when no --web-root is given: $UEXEC_WEB_ROOT; else, when this
// executable is the installed one (<prefix>/<bindir>/uexec), the installed page
// (<prefix>/<datadir>/uexec/web); else the source tree's src/web/page while it exists (all three
// set at build time).
std::string default_web_root();

class WsServer {
 public:
  WsServer(loop::Loop& loop, rpc::ExecServer& server, WsOptions options);
  ~WsServer();
  WsServer(const WsServer&) = delete;
  WsServer& operator=(const WsServer&) = delete;

  // Listens (on `inherited`, an upgraded daemon's listener, when it is on host:port; else on a
  // socket of its own) and serves on the loop.
  [[nodiscard]] base::Result<void> start(base::UniqueFd inherited = {});
  void stop();
  // The listening socket, borrowed (-1 before start or after stop): an upgrade passes it on.
  int listener_fd() const noexcept;
  int port() const noexcept { return port_; }
  std::size_t connections() const noexcept { return connections_; }

  // Internal, for the lws callback trampoline.
  struct Conn;
  rpc::ExecServer& exec_server() noexcept { return server_; }
  const WsOptions& options() const noexcept { return opts_; }
  void count(int delta) noexcept { connections_ = static_cast<std::size_t>(static_cast<long>(connections_) + delta); }

 private:
  loop::Loop& loop_;
  rpc::ExecServer& server_;
  WsOptions opts_;
  std::unique_ptr<TcpListener> listener_;
  lws_context* ctx_ = nullptr;
  bool stopping_ = false;
  int port_ = 0;
  std::size_t connections_ = 0;
};

// A fresh random token: 256 bits, base64url without padding.
std::string new_token();

// An --allow-origin value as the server compares it: `scheme://host[:port]`, scheme http or
// https, lower case, no path. `*`, `null` and anything else get an Error saying why.
[[nodiscard]] base::Result<std::string> parse_allowed_origin(std::string_view origin);

// Whether a browser page at `origin` may open this server's WebSocket: one of the loopback
// origins on `port`, or an exact entry of `allowed` (as parse_allowed_origin returns them).
bool origin_allowed(std::string_view origin, int port, const std::vector<std::string>& allowed);

}  // namespace uexec::web
