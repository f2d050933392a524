#include "rpc/unix_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/log.h"

namespace uexec::rpc {

using base::Error;
using base::Result;

std::string default_socket_path() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg && *xdg) return std::string(xdg) + "/uexec/uexec.sock";
  return "/tmp/uexec-" + std::to_string(::getuid()) + "/uexec.sock";
}

std::string socket_dir_of(const std::string& socket_path) {
  auto slash = socket_path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : socket_path.substr(0, slash);
}

Result<void> prepare_socket_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Error::sys("mkdir " + dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return Error::sys("lstat " + dir);
  if (!S_ISDIR(st.st_mode)) return Error::invalid(dir + " is not a directory (a symlink?); refusing to use it");
  if (st.st_uid != ::getuid()) return Error::invalid(dir + " is owned by another user; refusing to use it");
  if ((st.st_mode & 0077) != 0) return Error::invalid(dir + " is accessible by other users (mode must be 0700)");
  return {};
}

UnixServer::~UnixServer() {
  listener_.close();
  conns_.clear();
  graveyard_.clear();
  if (!path_.empty()) ::unlink(path_.c_str());
}

Result<void> UnixServer::listen(const std::string& path) {
  if (auto r = prepare_socket_dir(socket_dir_of(path)); !r) return r;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Error::invalid(path + " exists and is not a socket");
    ::unlink(path.c_str());  // stale: a live daemon holds the lock serve takes first (daemon_lock.h)
  }
  auto h = loop::make_handle<uv_pipe_t>([&](uv_pipe_t* p) { return uv_pipe_init(loop_.get(), p, 0); }, "uv_pipe_init");
  if (!h) return std::move(h).error();
  listener_ = std::move(h).value();
  listener_.get()->data = this;
  mode_t old = ::umask(0177);  // the socket is born 0600
  int rc = uv_pipe_bind(listener_.get(), path.c_str());
  ::umask(old);
  if (rc < 0) return Error::uv(rc, "bind " + path);
  path_ = path;
  ::chmod(path.c_str(), 0600);
  if (int l = uv_listen(reinterpret_cast<uv_stream_t*>(listener_.get()), 128, &UnixServer::on_connection); l < 0)
    return Error::uv(l, "listen " + path);
  return {};
}

Result<void> UnixServer::listen_inherited(base::UniqueFd fd, const std::string& path) {
  int listening = 0;
  socklen_t len = sizeof listening;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening)
    return Error::invalid("the inherited fd for " + path + " is not a listening socket");
  auto h = loop::make_handle<uv_pipe_t>([&](uv_pipe_t* p) { return uv_pipe_init(loop_.get(), p, 0); }, "uv_pipe_init");
  if (!h) return std::move(h).error();
  listener_ = std::move(h).value();
  listener_.get()->data = this;
  if (int rc = uv_pipe_open(listener_.get(), fd.get()); rc < 0) return Error::uv(rc, "the inherited listener of " + path);
  fd.release();  // the handle's now
  path_ = path;
  if (int l = uv_listen(reinterpret_cast<uv_stream_t*>(listener_.get()), 128, &UnixServer::on_connection); l < 0)
    return Error::uv(l, "listen " + path);
  return {};
}

int UnixServer::listener_fd() const noexcept {
  uv_os_fd_t fd = -1;
  if (!listener_ || uv_fileno(reinterpret_cast<const uv_handle_t*>(listener_.get()), &fd) != 0) return -1;
  return fd;
}

void UnixServer::on_connection(uv_stream_t* s, int status) noexcept {
  auto* self = static_cast<UnixServer*>(s->data);
  if (!self || status < 0) return;
  self->accept();
}

void UnixServer::accept() {
  auto h = loop::make_handle<uv_pipe_t>([&](uv_pipe_t* p) { return uv_pipe_init(loop_.get(), p, 0); }, "uv_pipe_init");
  if (!h) return;
  auto client = std::move(h).value();
  if (uv_accept(reinterpret_cast<uv_stream_t*>(listener_.get()), reinterpret_cast<uv_stream_t*>(client.get())) != 0)
    return;
  conns_.push_back({});
  Conn* c = &conns_.back();
  c->channel = std::make_unique<LineChannel>(loop_, std::move(client));
  int uid = c->channel->peer_uid();
  if (uid != static_cast<int>(::getuid())) {
    UEXEC_LOG(kWarn, "closing a connection from uid {}", uid);
    return close_later(c);
  }
  LineChannel* ch = c->channel.get();
  c->rpc = server_.connect({[ch](std::string m) { ch->send(std::move(m)); }, [ch] { return ch->queued_bytes(); },
                            [ch](std::size_t n, std::function<void()> fn) { ch->when_below(n, std::move(fn)); },
                            [ch](bool on) { on ? ch->resume_reading() : ch->pause_reading(); },
                            [this, c] { close_later(c); }});
  ExecServer::Connection* rpc = c->rpc.get();
  ch->on_line = [rpc](std::string_view line) { rpc->handle_line(line); };
  ch->on_oversize = [rpc](std::size_t limit) { rpc->handle_oversize(limit); };
  ch->on_eof = [this, c] { close_later(c); };
  if (auto r = ch->start(); !r) close_later(c);
}

void UnixServer::close_later(Conn* c) {
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (&*it != c) continue;
    if (it->channel) {  // nothing may call into the connection once it is gone
      it->channel->on_line = nullptr;
      it->channel->on_oversize = nullptr;
      it->channel->on_eof = nullptr;
      it->channel->when_below(0, nullptr);
      it->channel->stop_reading();
    }
    it->rpc.reset();  // detaches the session now; the channel goes on the next turn
    graveyard_.splice(graveyard_.end(), conns_, it);
    break;
  }
  if (!sweep_.active()) sweep_.start(std::chrono::milliseconds{0}, [this] { graveyard_.clear(); });
}

}  // namespace uexec::rpc
