#include "rpc/line_channel.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace uexec::rpc {

using base::Error;
using base::Result;

struct LineChannel::WriteReq {
  uv_write_t req;
  std::string data;
  LineChannel* owner;
};

LineChannel::LineChannel(loop::Loop& loop, int in_fd, int out_fd, std::size_t max_line)
    : loop_(loop), in_fd_(in_fd), out_fd_(out_fd), max_line_(max_line), file_pump_(loop), resume_(loop) {}

LineChannel::LineChannel(loop::Loop& loop, loop::UvHandle<uv_pipe_t> stream, std::size_t max_line)
    : loop_(loop), in_fd_(-1), out_fd_(-1), max_line_(max_line), file_pump_(loop), resume_(loop), adopted_(true) {
  in_pipe_ = std::move(stream);
  in_ = out_ = reinterpret_cast<uv_stream_t*>(in_pipe_.get());
}

LineChannel::~LineChannel() = default;

namespace {
enum class FdKind { kStream, kTty, kFile };
FdKind kind_of(int fd) {
  if (::isatty(fd)) return FdKind::kTty;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return FdKind::kStream;
  return FdKind::kFile;
}
}  // namespace

Result<void> LineChannel::start() {
  if (adopted_) {
    in_->data = this;
    if (int rc = uv_read_start(in_, &LineChannel::on_alloc, &LineChannel::on_read); rc < 0)
      return Error::uv(rc, "uv_read_start");
    return {};
  }
  switch (kind_of(in_fd_)) {
    case FdKind::kStream: {
      auto h = loop::make_handle<uv_pipe_t>([&](uv_pipe_t* p) { return uv_pipe_init(loop_.get(), p, 0); }, "uv_pipe_init");
      if (!h) return std::move(h).error();
      in_pipe_ = std::move(h).value();
      if (int rc = uv_pipe_open(in_pipe_.get(), in_fd_); rc < 0) return Error::uv(rc, "uv_pipe_open stdin");
      in_ = reinterpret_cast<uv_stream_t*>(in_pipe_.get());
      break;
    }
    case FdKind::kTty: {
      auto h = loop::make_handle<uv_tty_t>([&](uv_tty_t* t) { return uv_tty_init(loop_.get(), t, in_fd_, 0); },
                                           "uv_tty_init stdin");
      if (!h) return std::move(h).error();
      in_tty_ = std::move(h).value();
      in_ = reinterpret_cast<uv_stream_t*>(in_tty_.get());
      break;
    }
    case FdKind::kFile:
      file_pump_.start(std::chrono::milliseconds{0}, [this] { pump_file(); }, std::chrono::milliseconds{1});
      break;
  }
  if (in_) {
    in_->data = this;
    if (int rc = uv_read_start(in_, &LineChannel::on_alloc, &LineChannel::on_read); rc < 0)
      return Error::uv(rc, "uv_read_start stdin");
  }
  switch (kind_of(out_fd_)) {
    case FdKind::kStream: {
      auto h = loop::make_handle<uv_pipe_t>([&](uv_pipe_t* p) { return uv_pipe_init(loop_.get(), p, 0); }, "uv_pipe_init");
      if (!h) return std::move(h).error();
      out_pipe_ = std::move(h).value();
      if (int rc = uv_pipe_open(out_pipe_.get(), out_fd_); rc < 0) return Error::uv(rc, "uv_pipe_open stdout");
      out_ = reinterpret_cast<uv_stream_t*>(out_pipe_.get());
      break;
    }
    case FdKind::kTty: {
      auto h = loop::make_handle<uv_tty_t>([&](uv_tty_t* t) { return uv_tty_init(loop_.get(), t, out_fd_, 0); },
                                           "uv_tty_init stdout");
      if (!h) return std::move(h).error();
      out_tty_ = std::move(h).value();
      out_ = reinterpret_cast<uv_stream_t*>(out_tty_.get());
      break;
    }
    case FdKind::kFile:
      break;  // plain blocking writes
  }
  if (out_) out_->data = this;
  return {};
}

void LineChannel::on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) noexcept {
  auto* self = static_cast<LineChannel*>(h->data);
  if (!self) {
    *buf = uv_buf_init(nullptr, 0);
    return;
  }
  auto slab = self->loop_.read_slab();
  *buf = uv_buf_init(reinterpret_cast<char*>(slab.data()), static_cast<unsigned>(slab.size()));
}

void LineChannel::on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) noexcept {
  auto* self = static_cast<LineChannel*>(s->data);
  if (!self) return;
  if (n > 0) return self->feed(buf->base, static_cast<std::size_t>(n));
  if (n < 0) self->handle_eof();  // UV_EOF, or an error: either way the peer is gone
}

void LineChannel::pump_file() {
  if (paused_) return;
  auto slab = loop_.read_slab();
  ssize_t n = ::read(in_fd_, slab.data(), slab.size());
  if (n > 0) return feed(reinterpret_cast<const char*>(slab.data()), static_cast<std::size_t>(n));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  handle_eof();
}

void LineChannel::feed(const char* data, std::size_t n) {
  std::size_t pos = 0;
  while (pos < n && !eof_) {
    if (paused_) {  // an on_line paused us: the rest waits, in order
      stash_.append(data + pos, n - pos);
      return;
    }
    const char* nl = static_cast<const char*>(std::memchr(data + pos, '\n', n - pos));
    std::size_t end = nl ? static_cast<std::size_t>(nl - data) : n;
    if (discarding_) {
      if (nl) discarding_ = false;
    } else {
      buf_.append(data + pos, end - pos);
      if (buf_.size() > max_line_) {
        // Stop buffering; drop input up to the end of this line, then answer once.
        buf_.clear();
        buf_.shrink_to_fit();
        discarding_ = !nl;
        if (on_oversize) on_oversize(max_line_);
      } else if (nl) {
        std::string line;
        line.swap(buf_);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty() && on_line) on_line(line);
      }
    }
    pos = end + (nl ? 1 : 0);
  }
}

void LineChannel::handle_eof() {
  if (eof_) return;
  // A last line without its newline is still a line, answered before the server exits.
  if (!buf_.empty() && !discarding_ && !paused_) {
    std::string line;
    line.swap(buf_);
    if (line.back() == '\r') line.pop_back();
    if (!line.empty() && on_line) on_line(line);
  }
  eof_ = true;
  stop_reading();
  if (on_eof) on_eof();
}

void LineChannel::stop_reading() {
  stopped_ = true;
  if (in_) uv_read_stop(in_);
  file_pump_.stop();
  resume_.stop();
}

void LineChannel::pause_reading() {
  if (paused_) return;
  paused_ = true;
  resume_.stop();
  if (in_ && !eof_) uv_read_stop(in_);
}

void LineChannel::resume_reading() {
  if (!paused_) return;
  paused_ = false;
  if (stopped_ || eof_) return;
  // Not from here: the caller may be inside a write callback, or inside on_line itself.
  resume_.start(std::chrono::milliseconds{0}, [this] { drain_stash(); });
}

void LineChannel::drain_stash() {
  if (paused_ || stopped_) return;
  if (!stash_.empty()) {
    std::string s;
    s.swap(stash_);
    feed(s.data(), s.size());  // may pause again: the rest goes back to stash_
  }
  if (!paused_ && !stopped_ && stash_.empty()) restart_input();
}

void LineChannel::restart_input() {
  if (!in_ || eof_) return;  // a file is pumped by its timer, which checks paused_
  in_->data = this;
  if (int rc = uv_read_start(in_, &LineChannel::on_alloc, &LineChannel::on_read); rc < 0 && rc != UV_EALREADY) {
    UEXEC_LOG(kWarn, "uv_read_start: {}", uv_strerror(rc));
    handle_eof();
  }
}

void LineChannel::send(std::string msg) {
  msg += '\n';
  if (!out_) {
    // A regular file: blocking writes are fine and keep the order.
    const char* p = msg.data();
    std::size_t left = msg.size();
    while (left > 0) {
      ssize_t w = ::write(out_fd_, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      p += w;
      left -= static_cast<std::size_t>(w);
    }
    return;
  }
  // One write in flight at a time; what arrives meanwhile is coalesced into the next one,
  // so a burst of small notifications costs a few syscalls, not one each.
  queued_ += msg.size();
  if (writing_) {
    pending_ += msg;
    return;
  }
  start_write(std::move(msg));
}

void LineChannel::start_write(std::string data) {
  auto* w = new WriteReq{};
  w->data = std::move(data);
  w->owner = this;
  w->req.data = w;
  uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  writing_ = true;
  if (int rc = uv_write(&w->req, out_, &b, 1, &LineChannel::on_write); rc < 0) {
    queued_ -= w->data.size();
    writing_ = false;
    UEXEC_LOG(kWarn, "stdout write: {}", uv_strerror(rc));
    delete w;
  }
}

void LineChannel::on_write(uv_write_t* req, int status) noexcept {
  auto* w = static_cast<WriteReq*>(req->data);
  // The owner may be gone (closed with writes in flight); its handle's close cancels them.
  if (status != UV_ECANCELED && w->owner) {
    LineChannel* self = w->owner;
    self->queued_ -= w->data.size();
    self->writing_ = false;
    if (!self->pending_.empty()) {
      std::string next;
      next.swap(self->pending_);
      self->start_write(std::move(next));
    }
    self->flushed_check();
  }
  delete w;
}

void LineChannel::when_flushed(std::function<void()> fn) {
  flushed_ = std::move(fn);
  flushed_check();
}

void LineChannel::flushed_check() {
  if (queued_ <= below_ && below_fn_) {
    auto fn = std::move(below_fn_);
    below_fn_ = nullptr;
    fn();
  }
  if (queued_ == 0 && flushed_) {
    auto fn = std::move(flushed_);
    flushed_ = nullptr;
    fn();
  }
}

void LineChannel::when_below(std::size_t bytes, std::function<void()> fn) {
  below_ = bytes;
  below_fn_ = std::move(fn);
  flushed_check();
}

int LineChannel::peer_uid() const {
  uv_os_fd_t fd;
  if (!in_ || uv_fileno(reinterpret_cast<const uv_handle_t*>(in_), &fd) != 0) return -1;
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
  return static_cast<int>(cred.uid);
}

}  // namespace uexec::rpc
