// tcp_listener.h: the WebSocket server's listening socket, owned by uexec rather than by
// libwebsockets, so that an upgrade can pass it on.
//
// bind() makes it (SO_REUSEADDR, a backlog of 128); inherit() takes one the daemon before an
// upgrade was listening on, when it listens where this daemon would (otherwise the caller
// binds anew). Either way the socket stays open across the upgrade: a browser connecting
// meanwhile waits in its backlog instead of being refused. start() watches it on the loop and
// hands every accepted connection (non-blocking, close-on-exec) to on_accept; WsServer gives it
// to lws_adopt_socket_vhost, which serves it as if lws had accepted it itself.
//
// The host is a numeric address (127.0.0.1, ::1, 0.0.0.0, ...) or, as libwebsockets took it,
// an interface name (its first IPv4 address). Failures name the address and the cause (the port
// in use, an address this machine does not have, a port below 1024) and have Errc::kLimit.
// Out of fds (EMFILE), accepting pauses 100 ms rather than spinning. Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "loop/uv_handle.h"

namespace uexec::web {

class TcpListener {
 public:
  // Binds and listens on host:port (0: a free port, see port()).
  [[nodiscard]] static base::Result<std::unique_ptr<TcpListener>> bind(loop::Loop& loop, const std::string& host,
                                                                       int port);
  // Takes `fd` when it is a TCP socket listening on host:port (port 0: any port of host);
  // otherwise returns an Error saying how it differs (and `fd` is closed).
  [[nodiscard]] static base::Result<std::unique_ptr<TcpListener>> inherit(loop::Loop& loop, base::UniqueFd fd,
                                                                          const std::string& host, int port);
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  // Watches for connections; each accepted one goes to `on_accept`, which owns it.
  [[nodiscard]] base::Result<void> start(std::function<void(base::UniqueFd)> on_accept);
  int port() const noexcept { return port_; }
  // The listening socket, borrowed: an upgrade hands it to the next daemon.
  int fd() const noexcept { return fd_.get(); }

 private:
  TcpListener(loop::Loop& loop, base::UniqueFd fd, int port);
  static void on_readable(uv_poll_t* h, int status, int events) noexcept;
  void accept_all();

  loop::Loop& loop_;
  base::UniqueFd fd_;
  int port_ = 0;
  loop::UvHandle<uv_poll_t> poll_;
  loop::Timer resume_;  // after EMFILE
  std::function<void(base::UniqueFd)> on_accept_;
};

}  // namespace uexec::web
