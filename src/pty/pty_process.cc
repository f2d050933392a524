#include "pty/pty_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "base/log.h"
#include "pty/pty_pair.h"

namespace uexec::pty {

using base::Errc;
using base::Error;
using base::Result;
using base::UniqueFd;

const char* stream_name(Stream s) noexcept {
  switch (s) {
    case Stream::kPty: return "pty";
    case Stream::kStdout: return "stdout";
    case Stream::kStderr: return "stderr";
  }
  return "?";
}

namespace {

// A first read shorter than this ends a wake-up's drain (handle_readable): interactive echo,
// not a flood (a flooding PTY hands out ~4 KiB per read, a pipe up to 64 KiB).
constexpr std::size_t kShortRead = 256;

// A child's stdin pipe whose reader is gone must fail our write with EPIPE, not kill the
// manager with SIGPIPE. The child gets SIG_DFL back in spawn.
void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
}

struct PipeEnds {
  UniqueFd read, write;
};

Result<PipeEnds> make_pipe(const char* what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::sys(what);
  PipeEnds p{base::above_stdio(UniqueFd(fds[0])), base::above_stdio(UniqueFd(fds[1]))};
  if (!p.read || !p.write) return Error::sys(what);
  return p;
}

Result<void> set_nonblocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return Error::sys("fcntl O_NONBLOCK");
  return {};
}

}  // namespace

PtyProcess::PtyProcess(loop::Loop& loop, ChildReaper& reaper, const ProcessOptions& opts,
                       ProcessListener& listener)
    : loop_(&loop), reaper_(&reaper), opts_(opts), listener_(&listener) {}

Result<std::unique_ptr<PtyProcess>> PtyProcess::start(loop::Loop& loop, ChildReaper& reaper,
                                                      const SpawnSpec& spec,
                                                      const ProcessOptions& opts,
                                                      ProcessListener& listener) {
  ignore_sigpipe_once();
  std::unique_ptr<PtyProcess> self(new PtyProcess(loop, reaper, opts, listener));
  Result<Spawned> spawned = Error::invalid("unreachable");
  if (opts.tty) {
    auto pair = open_pty(opts.size);
    if (!pair) return std::move(pair).error();
    ChildStdio stdio;
    stdio.tty = pair->slave.get();
    spawned = spawn(spec, stdio);
    pair->slave.reset();  // ours must go now, or the master never sees EOF
    self->outputs_[0].fd = std::move(pair->master);
    self->outputs_[0].stream = Stream::kPty;
    self->open_outputs_ = 1;
  } else {
    auto out = make_pipe("pipe stdout");
    if (!out) return std::move(out).error();
    auto err = make_pipe("pipe stderr");
    if (!err) return std::move(err).error();
    UniqueFd child_in;
    if (opts.stdin_pipe) {
      auto in = make_pipe("pipe stdin");
      if (!in) return std::move(in).error();
      child_in = std::move(in->read);
      self->stdin_ = std::move(in->write);
      if (auto r = set_nonblocking(self->stdin_.get()); !r) return std::move(r).error();
    } else {
      child_in = base::above_stdio(UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)));
      if (!child_in) return Error::sys("open /dev/null");
    }
    ChildStdio stdio;
    stdio.in = child_in.get();
    stdio.out = out->write.get();
    stdio.err = err->write.get();
    spawned = spawn(spec, stdio);
    // The child's ends close here, when these UniqueFds go out of scope.
    for (auto* p : {&out->read, &err->read})
      if (auto r = set_nonblocking(p->get()); !r) return std::move(r).error();
    self->outputs_[0].fd = std::move(out->read);
    self->outputs_[0].stream = Stream::kStdout;
    self->outputs_[1].fd = std::move(err->read);
    self->outputs_[1].stream = Stream::kStderr;
    self->open_outputs_ = 2;
  }
  if (!spawned) return std::move(spawned).error();
  self->pid_ = spawned->pid;
  self->status_ = std::move(spawned->status);
  if (spec.seccomp_listener_channel >= 0) {
    auto l = SeccompListener::watch(loop, spec.seccomp_listener_channel, spec.file_records);
    if (!l) return std::move(l).error();  // the destructor kills and reaps the child
    self->seccomp_ = std::move(*l);
  }
  self->keep_ = spec.keep;  // a sandbox's stubs and plan live as long as its process
  PtyProcess* raw = self.get();
  if (auto r = reaper.watch(raw->pid_, std::move(spawned->pidfd),
                            [raw](const ExitStatus& st) { raw->handle_exit(st); });
      !r) {
    return std::move(r).error();  // the destructor kills and reaps the child
  }
  if (auto r = self->watch_outputs(); !r) return std::move(r).error();
  return self;
}

Result<std::unique_ptr<PtyProcess>> PtyProcess::adopt(loop::Loop& loop, ChildReaper& reaper, pid_t pid,
                                                      AdoptedFds fds, const ProcessOptions& opts,
                                                      ProcessListener& listener) {
  ignore_sigpipe_once();
  std::unique_ptr<PtyProcess> self(new PtyProcess(loop, reaper, opts, listener));
  self->pid_ = pid;
  for (int i = 0; i < 2; ++i) {
    if (!fds.out[i]) continue;
    // Non-blocking by uv_poll_init (watch_outputs), as after an upgrade it was already.
    self->outputs_[i].fd = std::move(fds.out[i]);
    self->outputs_[i].stream = opts.tty ? Stream::kPty : (i == 0 ? Stream::kStdout : Stream::kStderr);
    ++self->open_outputs_;
  }
  self->stdin_ = std::move(fds.stdin_pipe);
  self->status_ = std::move(fds.status);
  self->adopted_mask_requests_ = std::move(fds.mask_requests);
  if (fds.listener) {
    auto l = SeccompListener::adopt(loop, std::move(fds.listener), std::move(fds.files));
    if (!l) return std::move(l).error();
    self->seccomp_ = std::move(*l);
  }
  PtyProcess* raw = self.get();
  if (auto r = reaper.watch_reaped_elsewhere(pid, std::move(fds.pidfd),
                                             [raw](const ExitStatus& st) { raw->handle_exit(st); });
      !r) {
    self->pid_ = -1;  // not ours to kill
    return std::move(r).error();
  }
  if (auto r = self->watch_outputs(); !r) return std::move(r).error();
  if (self->open_outputs_ == 0) listener.on_eof();  // its output had ended already
  return self;
}

HeldFds PtyProcess::held_fds() const noexcept {
  HeldFds h;
  for (int i = 0; i < 2; ++i) h.out[i] = outputs_[i].closed ? -1 : outputs_[i].fd.get();
  h.stdin_pipe = stdin_.get();
  h.status = status_.get();
  h.pidfd = exited_ ? -1 : reaper_->pidfd_of(pid_);
  h.listener = seccomp_ ? seccomp_->listener_fd() : -1;
  return h;
}

PtyProcess::~PtyProcess() {
  kill_timer_.reset();
  if (pid_ > 0 && !exited_) {
    reaper_->unwatch(pid_);
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    // SIGKILL cannot be caught, so this wait is short; it keeps the promise of no zombie.
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

Result<void> PtyProcess::watch_outputs() {
  for (auto& out : outputs_) {
    if (!out.fd) continue;
    int fd = out.fd.get();
    auto poll = loop::make_handle<uv_poll_t>(
        [&](uv_poll_t* p) { return uv_poll_init(loop_->get(), p, fd); }, "uv_poll_init output");
    if (!poll) return std::move(poll).error();
    out.poll = std::move(poll).value();
    out.poll.get()->data = this;
  }
  update_poll_events();
  return {};
}

// Re-arms only what changed: libuv 1.44 turns every uv_poll_start into an epoll_ctl pair,
// and this runs on every keystroke written.
void PtyProcess::update_poll_events() {
  bool want_write = queued_input() > 0;
  for (auto& out : outputs_) {
    if (!out.poll) continue;
    int events = paused_ != 0 ? 0 : UV_READABLE;
    if (opts_.tty && want_write) events |= UV_WRITABLE;
    if (events == out.armed) continue;
    if (events == 0) {
      uv_poll_stop(out.poll.get());
    } else if (int rc = uv_poll_start(out.poll.get(), events, &PtyProcess::on_poll); rc < 0) {
      UEXEC_LOG(kError, "uv_poll_start: {}", uv_strerror(rc));
      continue;
    }
    out.armed = events;
  }
  if (!opts_.tty && stdin_) {
    if (want_write && !stdin_poll_) {
      int fd = stdin_.get();
      auto poll = loop::make_handle<uv_poll_t>(
          [&](uv_poll_t* p) { return uv_poll_init(loop_->get(), p, fd); }, "uv_poll_init stdin");
      if (poll) {
        stdin_poll_ = std::move(poll).value();
        stdin_poll_.get()->data = this;
        stdin_armed_ = false;
      }
    }
    if (stdin_poll_ && want_write != stdin_armed_) {
      if (want_write)
        uv_poll_start(stdin_poll_.get(), UV_WRITABLE, &PtyProcess::on_stdin_poll);
      else
        uv_poll_stop(stdin_poll_.get());
      stdin_armed_ = want_write;
    }
  }
}

void PtyProcess::on_poll(uv_poll_t* h, int status, int events) noexcept {
  auto* self = static_cast<PtyProcess*>(h->data);
  if (!self) return;
  Output* out = nullptr;
  for (auto& o : self->outputs_)
    if (o.poll.get() == h) out = &o;
  if (!out) return;
  if (status < 0) {
    // libuv stops a poll handle on POLLERR. Read what is there, then treat it as the end.
    out->armed = 0;  // libuv stopped the handle
    self->handle_readable(*out, self->opts_.read_burst_bytes, Drain::kFinal);
    if (out->fd) {
      UEXEC_LOG(kWarn, "poll error on {} output: {}", stream_name(out->stream), uv_strerror(status));
      self->close_output(*out);
    }
    return;
  }
  if (events & UV_READABLE) self->handle_readable(*out, self->opts_.read_burst_bytes, Drain::kWakeUp);
  if ((events & UV_WRITABLE) && self->opts_.tty && self->outputs_[0].fd) self->flush_input();
}

void PtyProcess::on_stdin_poll(uv_poll_t* h, int /*status*/, int /*events*/) noexcept {
  if (auto* self = static_cast<PtyProcess*>(h->data)) self->flush_input();
}

void PtyProcess::handle_readable(Output& out, std::size_t budget, Drain drain) {
  std::span<std::byte> slab = loop_->read_slab();
  std::size_t total = 0;
  bool eio_once = false;
  while (out.fd && !out.closed && paused_ == 0) {  // a listener may pause us mid-burst
    ssize_t n = ::read(out.fd.get(), slab.data(), slab.size());
    if (n > 0) {
      eio_once = false;
      listener_->on_output(out.stream, slab.first(static_cast<std::size_t>(n)));
      total += static_cast<std::size_t>(n);
      if (total >= budget) return;  // level-triggered: the poll fires again next turn
      // A small first read is a keystroke's echo or a prompt: the next read would almost
      // always be EAGAIN, one system call per keystroke for nothing (W1). Level-triggered,
      // the poll fires again next turn if more came meanwhile. Bulk output keeps draining.
      if (drain == Drain::kWakeUp && total < kShortRead) return;
      continue;
    }
    if (n == 0) return close_output(out, opts_.tty && !exited_);  // pipes: the last writer closed
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return;
    // Linux reports a hung-up slave as EIO on the master, not as a zero-byte read. For a
    // PTY that is the normal end, so it becomes EOF here and nowhere else. The child may
    // still be alive with its fds closed (`head` does that): closing the last master fd
    // now would hang the terminal up and SIGHUP it, so the master stays open until the reap.
    // EOF needs two EIOs in a row: each read first flushes the tty's pending buffer work,
    // and a second read picks up anything that work pushed after the first one gave up
    // (a rare loss seen once in thousands of fast exits).
    if (errno == EIO && !eio_once) {
      eio_once = true;
      continue;
    }
    if (errno != EIO) UEXEC_LOG(kWarn, "read {}: {}", stream_name(out.stream), std::strerror(errno));
    return close_output(out, opts_.tty && !exited_);
  }
}

void PtyProcess::close_output(Output& out, bool keep_fd) {
  if (out.closed || !out.fd) {
    if (!keep_fd) out.fd.reset();
    return;
  }
  out.closed = true;
  out.poll.close();
  out.armed = 0;
  if (!keep_fd) out.fd.reset();
  if (--open_outputs_ > 0) return;
  if (opts_.tty) {
    // The master was also the input side: nothing queued can be delivered any more.
    pending_in_.clear();
    pending_off_ = 0;
  }
  if (exited_ && kill_timer_) kill_timer_->stop();
  listener_->on_eof();
}

void PtyProcess::hang_up() {
  paused_ = 0;  // the last drain happens even for a slow consumer or a rate limit (the ring bounds it)
  for (auto& out : outputs_) {
    // A final bounded drain: bytes already in the kernel buffer are output too.
    handle_readable(out, opts_.read_burst_bytes, Drain::kFinal);
    close_output(out);
  }
}

void PtyProcess::pause_reading(PauseReason why) {
  unsigned was = paused_;
  paused_ |= why;
  if (was == 0) update_poll_events();
}

void PtyProcess::resume_reading(PauseReason why) {
  if ((paused_ & why) == 0) return;
  paused_ &= ~static_cast<unsigned>(why);
  if (paused_ == 0) update_poll_events();
}

int PtyProcess::input_fd() const noexcept {
  if (opts_.tty) return outputs_[0].closed ? -1 : outputs_[0].fd.get();
  return stdin_.get();
}

Result<void> PtyProcess::write(std::span<const std::byte> bytes) {
  if (input_fd() < 0 || stdin_closing_)
    return Error{Errc::kClosed, 0, opts_.tty ? "write: the terminal is closed" : "write: stdin is closed"};
  if (queued_input() + bytes.size() > opts_.stdin_queue_max)
    return Error{Errc::kLimit, 0, "write: stdin queue is full"};
  if (bytes.empty()) return {};
  bool was_idle = queued_input() == 0;
  pending_in_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (was_idle) flush_input();
  return {};
}

void PtyProcess::flush_input() {
  int fd = input_fd();
  while (fd >= 0 && queued_input() > 0) {
    ssize_t n = ::write(fd, pending_in_.data() + pending_off_, queued_input());
    if (n > 0) {
      pending_off_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    // EPIPE (the child closed its stdin) or EIO (hung up): the input has nowhere to go.
    UEXEC_LOG(kInfo, "stdin write: {}; dropping {} queued bytes", std::strerror(errno), queued_input());
    pending_off_ = pending_in_.size();
    if (!opts_.tty) {
      stdin_poll_.close();
      stdin_.reset();
    }
    break;
  }
  if (queued_input() == 0) {
    pending_in_.clear();
    pending_off_ = 0;
    if (stdin_closing_ && !opts_.tty) {
      stdin_poll_.close();
      stdin_.reset();
    }
  } else if (pending_off_ > 64 * 1024 && pending_off_ * 2 > pending_in_.size()) {
    pending_in_.erase(0, pending_off_);  // keep the queue's memory proportional to what is left
    pending_off_ = 0;
  }
  update_poll_events();
}

Result<void> PtyProcess::close_stdin() {
  if (opts_.tty) return Error{Errc::kUnsupported, 0, "close_stdin: a tty has no separate stdin; send EOF (ctrl-d)"};
  if (!stdin_ || stdin_closing_) return Error{Errc::kClosed, 0, "close_stdin: stdin is already closed"};
  stdin_closing_ = true;
  if (queued_input() == 0) {
    stdin_poll_.close();
    stdin_.reset();
  }
  return {};
}

Result<void> PtyProcess::resize(base::PtySize size) {
  if (!opts_.tty) return Error{Errc::kUnsupported, 0, "resize: not a tty session"};
  if (!outputs_[0].fd || outputs_[0].closed) return Error{Errc::kClosed, 0, "resize: the terminal is closed"};
  return set_size(outputs_[0].fd.get(), size);
}

Result<void> PtyProcess::signal(int sig, SignalTarget target) {
  pid_t dest = -pid_;
  if (target == SignalTarget::kLeader) {
    if (exited_) return Error::sys("kill leader", ESRCH);
    dest = pid_;
  } else if (target == SignalTarget::kForeground && opts_.tty && outputs_[0].fd) {
    pid_t fg = ::tcgetpgrp(outputs_[0].fd.get());
    if (fg > 0) dest = -fg;
  }
  if (::kill(dest, sig) != 0) return Error::sys("kill " + signal_name(sig));
  return {};
}

void PtyProcess::kill_now(int sig) {
  pid_t fg = (opts_.tty && outputs_[0].fd) ? ::tcgetpgrp(outputs_[0].fd.get()) : -1;
  ::kill(-pid_, sig);
  if (fg > 0 && fg != pid_) ::kill(-fg, sig);
}

void PtyProcess::terminate(std::chrono::milliseconds grace) {
  if (exited_ && eof()) return;
  // An interactive bash ignores SIGTERM, but on SIGHUP it hangs up all its jobs.
  if (opts_.tty) kill_now(SIGHUP);
  kill_now(SIGTERM);
  kill_now(SIGCONT);  // a stopped job cannot act on SIGTERM until it runs
  if (!kill_timer_) kill_timer_ = std::make_unique<loop::Timer>(*loop_);
  if (!kill_timer_->active())
    kill_timer_->start(grace, [this] {
      if (!(exited_ && eof())) kill_now(SIGKILL);
    });
}

void PtyProcess::handle_exit(const ExitStatus& reaped) {
  exited_ = true;
  ExitStatus st = reaped;
  if (status_) {
    // A supervised spawn: we reaped the namespace's init. Its records, then the command's own
    // status, are in the pipe (supervisor_protocol.h). Nothing there (init was killed
    // first): keep init's own status.
    uexec_sup_record rec{};
    while (::read(status_.get(), &rec, sizeof rec) == static_cast<ssize_t>(sizeof rec)) {
      bool listed = rec.type == UEXEC_SUP_DENY || rec.type == UEXEC_SUP_WRITE || rec.type == UEXEC_SUP_READ;
      if (listed && supervisor_records_.size() < UEXEC_SUP_MAX_RECORDS) {
        rec.path[UEXEC_SUP_PATH_MAX - 1] = '\0';
        supervisor_records_.push_back(rec);
      } else if (rec.type == UEXEC_SUP_STAT) {
        supervisor_records_dropped_ += rec.count;
        int raw = rec.status;
        st = ExitStatus{};
        if (WIFEXITED(raw)) {
          st.code = WEXITSTATUS(raw);
        } else if (WIFSIGNALED(raw)) {
          st.signal = WTERMSIG(raw);
          st.core_dumped = WCOREDUMP(raw);
        }
        break;
      }
    }
    status_.reset();
  }
  if (seccomp_) {
    // Calls still queued from the command's last moments are answered and counted too.
    seccomp_->drain();
    supervisor_records_dropped_ += seccomp_->dropped();
    for (const auto& rec : seccomp_->records()) {
      if (supervisor_records_.size() < UEXEC_SUP_MAX_RECORDS) supervisor_records_.push_back(rec);
      else ++supervisor_records_dropped_;
    }
  }
  // A master kept open past EOF (see handle_readable) can go now: nobody is left to SIGHUP.
  if (opts_.tty && outputs_[0].closed) outputs_[0].fd.reset();
  if (eof() && kill_timer_) kill_timer_->stop();
  listener_->on_exit(st);
}

}  // namespace uexec::pty
