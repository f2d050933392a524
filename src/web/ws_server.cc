#include "web/ws_server.h"

#include <unistd.h>

#include <fmt/core.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <random>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "base/unique_fd.h"
#include "web/listener_auth.h"
#include "web/lws_api.h"

namespace uexec::web {

using base::Error;
using base::Result;

struct WsServer::Conn {
  WsServer* owner = nullptr;
  struct lws* wsi = nullptr;
  std::deque<std::string> out;
  std::size_t queued = 0;
  std::string in;
  bool oversize = false;
  std::size_t below = 0;
  std::function<void()> below_fn;
  std::unique_ptr<rpc::ExecServer::Connection> rpc;
};

namespace {

// libwebsockets, loaded by the first start() (lws_api.h); every call below happens after it.
const LwsApi* g_lws = nullptr;

constexpr char kSubprotocol[] = "uexec.v1";  // the one WebSocket subprotocol served

struct Pss {
  WsServer::Conn* conn;
};

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::string header(struct lws* wsi, enum lws_token_indexes h) {
  int len = g_lws->hdr_total_length(wsi, h);
  if (len <= 0) return {};
  std::string s(static_cast<std::size_t>(len) + 1, '\0');
  if (g_lws->hdr_copy(wsi, s.data(), len + 1, h) < 0) return {};
  s.resize(static_cast<std::size_t>(len));
  return s;
}

// The web page's files: a fixed list (no path from the request ever reaches the file system).
struct PageFile {
  const char* uri;
  const char* path;  // under the web root
  const char* mime;
};
constexpr PageFile kPageFiles[] = {
    {"/", "index.html", "text/html; charset=utf-8"},
    {"/index.html", "index.html", "text/html; charset=utf-8"},
    {"/app.js", "app.js", "text/javascript; charset=utf-8"},
    {"/style.css", "style.css", "text/css; charset=utf-8"},
    {"/vendor/xterm/xterm.js", "node_modules/@xterm/xterm/lib/xterm.js", "text/javascript; charset=utf-8"},
    {"/vendor/xterm/xterm.css", "node_modules/@xterm/xterm/css/xterm.css", "text/css; charset=utf-8"},
    {"/vendor/addon-fit/addon-fit.js", "node_modules/@xterm/addon-fit/lib/addon-fit.js", "text/javascript; charset=utf-8"},
};

int http_text(struct lws* wsi, unsigned status, std::string_view body) {
  unsigned char buf[LWS_PRE + 2048];
  unsigned char* p = buf + LWS_PRE;
  unsigned char* end = buf + sizeof buf;
  if (g_lws->add_http_common_headers(wsi, status, "text/plain; charset=utf-8", body.size(), &p, end)) return 1;
  if (g_lws->finalize_write_http_header(wsi, buf + LWS_PRE, &p, end)) return 1;
  std::vector<unsigned char> out(LWS_PRE + body.size());
  std::memcpy(out.data() + LWS_PRE, body.data(), body.size());
  g_lws->write(wsi, out.data() + LWS_PRE, body.size(), LWS_WRITE_HTTP_FINAL);
  return g_lws->http_transaction_completed(wsi) ? -1 : 0;
}

// Answers a refused upgrade with `status` and a plain-text `body` while the request is still
// HTTP (LWS_CALLBACK_HTTP_CONFIRM_UPGRADE): 1 when sent (lws then completes the transaction),
// -1 to just hang up when even that failed.
int refuse_upgrade(struct lws* wsi, unsigned status, std::string_view body, bool bearer_challenge) {
  unsigned char buf[LWS_PRE + 1024];
  unsigned char* p = buf + LWS_PRE;
  unsigned char* end = buf + sizeof buf;
  if (g_lws->add_http_common_headers(wsi, status, "text/plain; charset=utf-8", body.size(), &p, end)) return -1;
  if (bearer_challenge) {
    static constexpr std::string_view kChallenge = "Bearer realm=\"uexec\"";
    if (g_lws->add_http_header_by_token(wsi, WSI_TOKEN_HTTP_WWW_AUTHENTICATE,
                                     reinterpret_cast<const unsigned char*>(kChallenge.data()),
                                     static_cast<int>(kChallenge.size()), &p, end))
      return -1;
  }
  if (g_lws->finalize_write_http_header(wsi, buf + LWS_PRE, &p, end)) return -1;
  std::vector<unsigned char> out(LWS_PRE + body.size());
  std::memcpy(out.data() + LWS_PRE, body.data(), body.size());
  if (g_lws->write(wsi, out.data() + LWS_PRE, body.size(), LWS_WRITE_HTTP_FINAL) < static_cast<int>(body.size()))
    return -1;
  return 1;
}

// Why an upgrade is refused: an HTTP status and the text that says so (status 0: not refused).
struct Refusal {
  unsigned status = 0;
  std::string body;
};

bool token_ok(struct lws* wsi, const std::string& token) {
  if (token.empty()) return true;
  std::string auth = header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
  if (auth.rfind("Bearer ", 0) == 0 && constant_time_equal(auth.substr(7), token)) return true;
  std::string protos = header(wsi, WSI_TOKEN_PROTOCOL);
  std::size_t pos = 0;
  while (pos < protos.size()) {
    std::size_t comma = protos.find(',', pos);
    std::string p = protos.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!p.empty() && p.front() == ' ') p.erase(0, 1);
    while (!p.empty() && p.back() == ' ') p.pop_back();
    if (p.rfind("uexec.auth.", 0) == 0 && constant_time_equal(p.substr(11), token)) return true;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return false;
}

// Who may open the WebSocket (docs/protocol.md §8): a request under one of our Host names (403
// otherwise), from a browser page of an accepted origin (403 otherwise; checked before the
// token, as the browser's own identity), then anyone with the token (401).
Refusal check_upgrade(struct lws* wsi, const WsServer& server) {
  const WsOptions& o = server.options();
  // DNS rebinding (listener_auth.h): a page that reaches us under its own name gets nothing.
  std::string host = header(wsi, WSI_TOKEN_HOST);
  if (!host_allowed(host, o.allowed_hosts)) {
    std::string shown = host.empty() ? "(none)" : host.substr(0, 200);
    std::string names = "127.0.0.1, localhost, [::1]";
    for (const auto& h : o.allowed_hosts) names += ", " + h;
    return {HTTP_STATUS_FORBIDDEN,
            fmt::format("403 Forbidden: this uexec WebSocket does not answer to the Host {}.\n"
                        "It answers to {} (with any port).\n"
                        "To reach it under that name, restart the server with --allow-host {}\n",
                        shown, names, host.empty() ? "HOST" : shown)};
  }
  std::string origin = header(wsi, WSI_TOKEN_ORIGIN);
  if (!origin.empty() && !origin_allowed(origin, server.port(), o.allowed_origins)) {
    // The origin is the peer's text: cut it, it goes into our log and our answer.
    std::string shown = origin.substr(0, 200);
    std::string accepted = fmt::format("http://127.0.0.1:{0}, http://localhost:{0}, http://[::1]:{0}", server.port());
    for (const auto& a : o.allowed_origins) accepted += ", " + a;
    return {HTTP_STATUS_FORBIDDEN,
            fmt::format("403 Forbidden: this uexec WebSocket does not accept pages from the origin {}.\n"
                        "Accepted origins: {}.\n"
                        "To let that page in, restart the server with --allow-origin {}\n",
                        shown, accepted, shown)};
  }
  if (!token_ok(wsi, o.token)) {
    bool sent = g_lws->hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION) > 0 ||
                header(wsi, WSI_TOKEN_PROTOCOL).find("uexec.auth.") != std::string::npos;
    return {HTTP_STATUS_UNAUTHORIZED,
            fmt::format("401 Unauthorized: {}.\n"
                        "Send the token as the header `Authorization: Bearer <token>`, or (from a browser) offer the\n"
                        "WebSocket subprotocols `uexec.v1` and `uexec.auth.<token>`.\n"
                        "{}\n",
                        sent ? "the token sent does not match this server's" : "this uexec WebSocket needs a token",
                        o.token_hint.empty() ? "The token is the one this server was started with." : o.token_hint)};
  }
  // Checked last, so that a wrong token is a 401 whatever else was offered.
  if (std::string why = subprotocol_problem(header(wsi, WSI_TOKEN_PROTOCOL), kSubprotocol); !why.empty())
    return {HTTP_STATUS_BAD_REQUEST, fmt::format("400 Bad Request: {}.\n", why)};
  return {};
}

void flush_below(WsServer::Conn* c) {
  if (c->below_fn && c->queued <= c->below) {
    auto fn = std::move(c->below_fn);
    c->below_fn = nullptr;
    fn();
  }
}

int callback(struct lws* wsi, enum lws_callback_reasons reason, void* user, void* in, size_t len) {
  auto* pss = static_cast<Pss*>(user);
  auto* self = static_cast<WsServer*>(g_lws->context_user(g_lws->get_context(wsi)));
  switch (reason) {
    case LWS_CALLBACK_HTTP: {
      std::string uri(static_cast<const char*>(in), len);
      if (uri == "/readyz") return http_text(wsi, HTTP_STATUS_OK, "ok");
      for (const auto& f : kPageFiles) {
        if (uri != f.uri) continue;
        const std::string& root = self->options().web_root;
        if (root.empty()) return http_text(wsi, HTTP_STATUS_NOT_FOUND, "this uexec serves no web page (--no-web)\n");
        std::string path = root + "/" + f.path;
        if (::access(path.c_str(), R_OK) != 0)
          return http_text(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE,
                           "the web page's files are missing: " + path +
                               "\n(tools/dev build installs them with npm ci in src/web/page; or pass --web-root DIR)\n");
        // xterm.js injects <style> elements (theme, cell size), so styles may be inline;
        // scripts come from our own files only.
        static const std::string kHeaders =
            "content-security-policy: default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; font-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
            "form-action 'none'\x0d\x0a"
            "x-content-type-options: nosniff\x0d\x0a"
            "x-frame-options: deny\x0d\x0a"
            "referrer-policy: no-referrer\x0d\x0a"
            "cache-control: no-store\x0d\x0a";
        int n = g_lws->serve_http_file(wsi, path.c_str(), f.mime, kHeaders.data(), static_cast<int>(kHeaders.size()));
        if (n < 0) return -1;
        if (n > 0 && g_lws->http_transaction_completed(wsi)) return -1;
        return 0;
      }
      return http_text(wsi, HTTP_STATUS_NOT_FOUND, "not found\n");
    }
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
      // Still HTTP here, so a refusal gets a status line and a reason instead of a reset.
      Refusal r = check_upgrade(wsi, *self);
      if (r.status == 0) return 0;
      UEXEC_LOG(kWarn, "refusing a WebSocket upgrade ({}): {}", r.status, r.body.substr(0, r.body.find('\n')));
      return refuse_upgrade(wsi, r.status, r.body, r.status == HTTP_STATUS_UNAUTHORIZED);
    }
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
      // The same checks again, should an upgrade ever arrive by a path without CONFIRM_UPGRADE:
      // too late for an answer, so the connection is just dropped.
      return check_upgrade(wsi, *self).status == 0 ? 0 : 1;
    case LWS_CALLBACK_ESTABLISHED: {
      auto* c = new WsServer::Conn();
      c->owner = self;
      c->wsi = wsi;
      pss->conn = c;
      self->count(1);
      c->rpc = self->exec_server().connect(
          {[c](std::string m) {
             c->queued += m.size();
             c->out.push_back(std::move(m));
             g_lws->callback_on_writable(c->wsi);
           },
           [c] { return c->queued; },
           [c](std::size_t n, std::function<void()> fn) {
             c->below = n;
             c->below_fn = std::move(fn);
             flush_below(c);
           },
           // Above the high watermark the peer's messages wait in the kernel (lws rx flow
           // control); a stalled peer is closed at lws's next timeout check.
           [c](bool on) { g_lws->rx_flow_control(c->wsi, on ? 1 : 0); },
           [c] { g_lws->set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC); }});
      return 0;
    }
    case LWS_CALLBACK_RECEIVE: {
      WsServer::Conn* c = pss ? pss->conn : nullptr;
      if (!c) return 0;
      if (!c->oversize) {
        c->in.append(static_cast<const char*>(in), len);
        if (c->in.size() > self->options().max_message_bytes) {
          c->in.clear();
          c->oversize = true;
        }
      }
      if (!g_lws->is_final_fragment(wsi) || g_lws->remaining_packet_payload(wsi) > 0) return 0;
      std::string msg;
      msg.swap(c->in);
      if (c->oversize) {
        c->oversize = false;
        c->rpc->handle_oversize(self->options().max_message_bytes);
      } else if (g_lws->frame_is_binary(wsi)) {
        c->rpc->handle_line("binary message");  // not JSON: answered with a parse error
      } else {
        c->rpc->handle_line(msg);
      }
      return 0;
    }
    case LWS_CALLBACK_SERVER_WRITEABLE: {
      WsServer::Conn* c = pss ? pss->conn : nullptr;
      if (!c || c->out.empty()) return 0;
      std::string& m = c->out.front();
      std::vector<unsigned char> buf(LWS_PRE + m.size());
      std::memcpy(buf.data() + LWS_PRE, m.data(), m.size());
      int n = g_lws->write(wsi, buf.data() + LWS_PRE, m.size(), LWS_WRITE_TEXT);
      if (n < static_cast<int>(m.size())) return -1;
      c->queued -= m.size();
      c->out.pop_front();
      if (!c->out.empty()) g_lws->callback_on_writable(wsi);
      flush_below(c);
      return 0;
    }
    case LWS_CALLBACK_CLOSED: {
      WsServer::Conn* c = pss ? pss->conn : nullptr;
      if (!c) return 0;
      pss->conn = nullptr;
      self->count(-1);
      delete c;  // its rpc Connection detaches the session
      return 0;
    }
    default:
      break;
  }
  return g_lws->callback_http_dummy(wsi, reason, user, in, len);
}

const struct lws_protocols kProtocols[] = {
    {kSubprotocol, callback, sizeof(Pss), 65536, 0, nullptr, 0},
    {nullptr, nullptr, 0, 0, 0, nullptr, 0},
};

}  // namespace

std::string default_web_root() {
  if (const char* env = std::getenv("UEXEC_WEB_ROOT"); env && *env) return env;
#if defined(UEXEC_WEB_ROOT_SOURCE) && defined(UEXEC_WEB_ROOT_INSTALLED) && defined(UEXEC_INSTALLED_BINARY)
  // The kernel's path of this executable, symlinks resolved (/bin/uexec is /usr/bin/uexec).
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && self == std::filesystem::path(UEXEC_INSTALLED_BINARY)) return UEXEC_WEB_ROOT_INSTALLED;
  // A build tree's binary serves the page it was built with, while that tree is there.
  if (std::filesystem::is_directory(UEXEC_WEB_ROOT_SOURCE, ec)) return UEXEC_WEB_ROOT_SOURCE;
  return UEXEC_WEB_ROOT_INSTALLED;
#else
  return {};
#endif
}

std::string new_token() {
  std::random_device rd;
  std::string raw;
  for (int i = 0; i < 32; ++i) raw += static_cast<char>(rd() & 0xFF);
  static const char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  unsigned bits = 0, acc = 0;
  for (unsigned char ch : raw) {
    acc = (acc << 8) | ch;
    bits += 8;
    while (bits >= 6) {
      out += kUrl[(acc >> (bits - 6)) & 63];
      bits -= 6;
    }
  }
  if (bits > 0) out += kUrl[(acc << (6 - bits)) & 63];
  return out;
}

Result<std::string> parse_allowed_origin(std::string_view origin) {
  std::string o(origin);
  if (o == "*")
    return Error::invalid(
        "--allow-origin * is not accepted: the Origin check is what keeps the web pages open in your browser "
        "from driving this server (cross-site WebSocket hijacking), so each origin must be named exactly, "
        "e.g. --allow-origin https://example.com");
  if (o == "null")
    return Error::invalid("--allow-origin null is not accepted: sandboxed iframes and file:// pages of any site "
                          "send `null`, so it would let any of them in");
  for (auto& ch : o) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::string scheme;
  if (o.rfind("http://", 0) == 0) scheme = "http";
  else if (o.rfind("https://", 0) == 0) scheme = "https";
  else return Error::invalid("--allow-origin " + std::string(origin) + ": an origin is http://HOST[:PORT] or https://HOST[:PORT]");
  std::string authority = o.substr(scheme.size() + 3);
  if (!authority.empty() && authority.back() == '/') authority.pop_back();  // "https://example.com/"
  if (authority.empty() || authority.find_first_of("/?#@ \\") != std::string::npos)
    return Error::invalid("--allow-origin " + std::string(origin) +
                          ": an origin is only scheme://HOST[:PORT], without a path, query or user");
  std::string host = authority, port;
  auto colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port) == 0 || std::stoi(port) > 65535)
      return Error::invalid("--allow-origin " + std::string(origin) + ": the port must be 1-65535");
  }
  if (host.empty()) return Error::invalid("--allow-origin " + std::string(origin) + ": no host");
  // Browsers leave the scheme's default port out of Origin.
  if ((scheme == "http" && port == "80") || (scheme == "https" && port == "443")) port.clear();
  return scheme + "://" + host + (port.empty() ? "" : ":" + port);
}

bool origin_allowed(std::string_view origin, int port, const std::vector<std::string>& allowed) {
  auto o = parse_allowed_origin(origin);
  if (!o) return false;
  for (const auto& a : allowed)
    if (*o == a) return true;
  std::string suffix = port == 80 ? "" : ":" + std::to_string(port);
  return *o == "http://127.0.0.1" + suffix || *o == "http://localhost" + suffix || *o == "http://[::1]" + suffix;
}

WsServer::WsServer(loop::Loop& loop, rpc::ExecServer& server, WsOptions options)
    : loop_(loop), server_(server), opts_(std::move(options)) {}

WsServer::~WsServer() {
  if (!ctx_) return;
  // With libuv, lws tears down in stages: the first destroy starts closing its handles, the
  // loop must turn for their close callbacks, and a second destroy frees the context.
  stop();
  loop_.settle();
  g_lws->context_destroy(ctx_);
  ctx_ = nullptr;
  loop_.settle();
}

Result<void> WsServer::start(base::UniqueFd inherited) {
  auto api = lws_api();
  if (!api) return std::move(api).error();
  g_lws = *api;
  static bool log_set = false;
  if (!log_set) {
    const char* lv = std::getenv("UEXEC_LWS_LOG");  // lws log bits, for debugging
    g_lws->set_log_level(lv ? std::atoi(lv) : LLL_ERR, nullptr);
    log_set = true;
  }
  if (opts_.host == "localhost") opts_.host = "127.0.0.1";
  // The listening socket is ours (tcp_listener.h): an upgraded daemon's when it listens where
  // this one would, else a new one. A failed bind is refused here, before lws is involved.
  if (inherited) {
    auto l = TcpListener::inherit(loop_, std::move(inherited), opts_.host, opts_.port);
    if (l) listener_ = std::move(*l);
    else UEXEC_LOG(kWarn, "{}; listening anew", l.error().message());
  }
  if (!listener_) {
    auto l = TcpListener::bind(loop_, opts_.host, opts_.port);
    if (!l) return std::move(l).error();
    listener_ = std::move(*l);
  }
  port_ = listener_->port();
  lws_context_creation_info info;
  std::memset(&info, 0, sizeof info);
  void* loops[] = {loop_.get()};
  info.port = CONTEXT_PORT_NO_LISTEN_SERVER;  // its "default" vhost serves what we accept
  info.protocols = kProtocols;
  // Security headers are ours (see the page files): lws's defaults forbid the inline styles
  // xterm.js needs.
  info.options = LWS_SERVER_OPTION_LIBUV;
  info.foreign_loops = loops;
  info.user = this;
  info.pt_serv_buf_size = 32 * 1024;
  ctx_ = g_lws->create_context(&info);
  if (!ctx_) return Error::invalid("could not start the WebSocket server on " + opts_.host + ":" + std::to_string(port_));
  struct lws_vhost* vh = g_lws->get_vhost_by_name(ctx_, "default");
  if (!vh) return Error::invalid("the WebSocket server on " + opts_.host + ":" + std::to_string(port_) + " has no vhost");
  return listener_->start([vh](base::UniqueFd conn) {
    // lws serves it as if it had accepted it: HTTP first, a WebSocket on upgrade. On failure
    // it has closed the fd itself.
    if (!g_lws->adopt_socket_vhost(vh, conn.release()))
      UEXEC_LOG(kWarn, "WebSocket listener: libwebsockets refused a connection");
  });
}

int WsServer::listener_fd() const noexcept { return listener_ ? listener_->fd() : -1; }

void WsServer::stop() {
  listener_.reset();  // no more connections
  if (!ctx_ || stopping_) return;
  // Starts the teardown: connections close, listeners stop. The context is freed by the
  // destructor, which must run outside any loop callback (uv_run does not nest).
  stopping_ = true;
  g_lws->context_destroy(ctx_);
}

}  // namespace uexec::web
