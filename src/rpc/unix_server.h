// unix_server.h: the daemon's Unix-socket listener: one ExecServer::Connection per peer.
//
// The socket lives in a directory that must be ours, mode 0700 and not a symlink (uexec
// refuses to start otherwise); the socket itself is 0600, and every peer is checked with
// SO_PEERCRED: another uid is closed at once. A closed connection detaches its session
// (ExecServer keeps the processes within the TTL); so does the ExecServer's stall timeout
// (Peer::close), and its high watermark pauses the channel's reading (Peer::set_reading).
// Connections are destroyed on the next loop turn, never inside their own callbacks.
//
// Rules: as UvHandle (uv_handle.h). Loop thread only.
#pragma once

#include <list>
#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "loop/uv_handle.h"
#include "rpc/exec_server.h"
#include "rpc/line_channel.h"

namespace uexec::rpc {

// $XDG_RUNTIME_DIR/uexec/uexec.sock, else /tmp/uexec-$UID/uexec.sock.
std::string default_socket_path();

// The directory a socket path lives in: "." for a bare name, "/" for one at the root.
std::string socket_dir_of(const std::string& socket_path);

// Makes `dir` (mode 0700) or checks it: ours, 0700, a real directory (not a symlink); anything
// else could let another user see or hijack the socket.
[[nodiscard]] base::Result<void> prepare_socket_dir(const std::string& dir);

class UnixServer {
 public:
  UnixServer(loop::Loop& loop, ExecServer& server) : loop_(loop), server_(server), sweep_(loop) {}
  ~UnixServer();
  UnixServer(const UnixServer&) = delete;
  UnixServer& operator=(const UnixServer&) = delete;

  // Prepares the directory, replaces a stale socket, binds and listens.
  [[nodiscard]] base::Result<void> listen(const std::string& path);
  // Listens on `fd`, a socket already bound to `path` and listening (an upgraded daemon's):
  // connections that queued meanwhile are accepted now.
  [[nodiscard]] base::Result<void> listen_inherited(base::UniqueFd fd, const std::string& path);
  // The listening socket, borrowed (-1 before listen): an upgrade hands it to the next daemon.
  int listener_fd() const noexcept;
  std::size_t connections() const noexcept { return conns_.size(); }

 private:
  struct Conn {
    std::unique_ptr<LineChannel> channel;
    std::unique_ptr<ExecServer::Connection> rpc;
  };
  static void on_connection(uv_stream_t* s, int status) noexcept;
  void accept();
  void close_later(Conn* c);

  loop::Loop& loop_;
  ExecServer& server_;
  loop::UvHandle<uv_pipe_t> listener_;
  std::string path_;
  std::list<Conn> conns_;
  std::list<Conn> graveyard_;
  loop::Timer sweep_;
};

}  // namespace uexec::rpc
