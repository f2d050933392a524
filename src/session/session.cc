#include "session/session.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/check.h"
#include "base/log.h"
#include "policy/seccomp.h"

namespace uexec::session {

using base::Errc;
using base::Error;
using base::Result;

Session::Session(loop::Loop& loop, pty::ChildReaper& reaper, const base::Config& config, SessionId id,
                 SessionObserver* observer, Containment* containment, base::SessionLimits limits)
    : loop_(&loop),
      reaper_(&reaper),
      config_(&config),
      id_(std::move(id)),
      observer_(observer),
      containment_(containment),
      limits_(limits),
      wall_(loop),
      idle_(loop),
      throttle_(loop),
      ring_(limits.retain_bytes.value_or(config.retain_bytes)),
      drain_(loop),
      close_wait_(loop) {}

Session::~Session() {
  // Removed before it finished (killed, manager shutdown): its process group dies with the
  // PtyProcess; escapees die here.
  (void)kill_lingering();
}

pty::ProcessOptions Session::process_options(bool tty, base::PtySize size, bool stdin_pipe) const {
  pty::ProcessOptions opts;
  opts.tty = tty;
  opts.size = size;
  opts.stdin_pipe = stdin_pipe;
  opts.read_burst_bytes = config_->read_burst_bytes;
  opts.stdin_queue_max = limits_.stdin_queue_bytes.value_or(config_->stdin_queue_max);
  return opts;
}

Result<void> Session::start(const policy::SandboxAttempt& attempt, const policy::ExecRequest& req) {
  UEXEC_CHECK(!process_);
  auto spec = attempt.env_for(req);
  if (!spec) return std::move(spec).error();
  pty::ProcessOptions opts = process_options(req.tty, req.size, req.stdin_pipe);
  const bool supervised = spec->ns_flags != 0;
  spec->die_with_manager = !config_->held;
  if (supervised) {
    tier_ = ContainmentTier::kPidNamespace;  // the kernel empties it when its init goes
  } else if (containment_) {
    group_ = containment_->make_group(spec->env);
    tier_ = group_->tier();
    spec->cgroup_fd = group_->cgroup_fd();
  }
  if (limits_.needs_cgroup()) {
    if (!containment_)
      return Error{Errc::kUnsupported, 0, "memory, pids and cpu limits need containment, which is off (UEXEC_CONTAINMENT)"};
    auto lg = containment_->make_limits(limits_, group_.get(), supervised);
    if (!lg) {
      group_.reset();
      return std::move(lg).error();
    }
    limit_group_ = std::move(lg).value();
    spec->join_cgroups = limit_group_->join_fds();
  }
  started_at_ = Clock::now();
  started_wall_ = WallClock::now();
  auto proc = pty::PtyProcess::start(*loop_, *reaper_, *spec, opts, *this);
  if (!proc) {
    group_.reset();
    limit_group_.reset();
    return std::move(proc).error();
  }
  process_ = std::move(proc).value();
  pid_ = process_->pid();
  if (group_) group_->set_leader(pid_);
  tty_ = req.tty;
  size_ = req.size;
  sandboxed_ = attempt.sandboxed();
  sandbox_kind_ = policy::sandbox_kind_name(attempt.kind());
  seccomp_ = attempt.seccomp();
  mount_view_ = attempt.mount_view();
  // A real sandbox's records are this session's own; the test-only fake shares its log with
  // the test that plays the executor.
  denial_log_ = attempt.kind() == policy::SandboxKind::kFake ? attempt.denial_log()
                                                              : std::make_shared<policy::DenialLog>();
  argv_ = req.argv;
  if (!req.cwd.empty()) {
    cwd_ = req.cwd;
  } else if (char buf[PATH_MAX]; ::getcwd(buf, sizeof buf) != nullptr) {
    cwd_ = buf;
  }
  late_deny_ = spec->late_deny;
  mask_requests_ = spec->mask_requests;
  if (limits_.wall_timeout) {
    long ms = limits_.wall_timeout->count();
    wall_.start(*limits_.wall_timeout, [this, ms] { end_by_limit("timeout", fmt::format("a lifetime timeout of {} ms", ms)); });
  }
  arm_idle();
  refilled_ = Clock::now();
  if (limits_.output_bytes_per_sec) tokens_ = static_cast<double>(std::max<std::uint64_t>(*limits_.output_bytes_per_sec, base::kReadSlabSize));
  return {};
}

Result<void> Session::adopt(Handover h) {
  UEXEC_CHECK(!process_);
  pty::ProcessOptions opts = process_options(h.tty, h.size, h.stdin_pipe);
  const auto exit = h.exit;
  const bool restored = h.carried && h.carried->ring.total == h.total && ring_.restore(h.carried->ring);
  if (h.carried && !restored) UEXEC_LOG(kWarn, "session {}: its carried output does not fit its counters: lost", h.id);
  if (!restored) ring_.resume_after_loss(h.total, h.newlines, h.next_seq > 1 ? h.next_seq - 1 : 0);
  next_seq_ = std::max<Seq>(h.next_seq, 1);
  auto started_wall = WallClock::time_point(std::chrono::milliseconds(h.started_wall_ms));
  started_wall_ = started_wall;
  started_at_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                   std::max(WallClock::duration::zero(), WallClock::now() - started_wall));
  pid_ = h.pid;
  tty_ = h.tty;
  size_ = restored && h.carried->size.rows > 0 && h.carried->size.cols > 0 ? h.carried->size : h.size;
  argv_ = std::move(h.argv);
  cwd_ = std::move(h.cwd);
  name_ = std::move(h.name);
  sandboxed_ = h.sandboxed;
  sandbox_kind_ = "none";
  for (auto k : {policy::SandboxKind::kLinuxNamespaces, policy::SandboxKind::kLinuxLandlock,
                 policy::SandboxKind::kLinuxBwrap, policy::SandboxKind::kFake, policy::SandboxKind::kMacosSeatbelt})
    if (h.sandbox_kind == policy::sandbox_kind_name(k)) sandbox_kind_ = policy::sandbox_kind_name(k);
  seccomp_ = h.seccomp;
  mount_view_ = h.mount_view;
  denial_log_ = std::make_shared<policy::DenialLog>();
  // A session that had finished before an upgrade comes with no fds: nothing is left to contain.
  const bool finished_before = exit && !h.fds.out[0] && !h.fds.out[1] && !h.fds.pidfd;
  if (h.pid_namespace) {
    tier_ = ContainmentTier::kPidNamespace;
  } else if (containment_ && !finished_before) {
    group_ = containment_->adopt_group(h.cgroup, h.pid, h.marker, h.cgroup_adoptable);
    tier_ = group_->tier();
  }
  late_deny_ = std::move(h.late_deny);
  auto proc = pty::PtyProcess::adopt(*loop_, *reaper_, h.pid, std::move(h.fds), opts, *this);
  if (!proc) return std::move(proc).error();
  process_ = std::move(proc).value();
  mask_requests_ = process_->adopted_mask_requests();
  if (restored && h.carried->screen && make_screen()) {
    screen_->feed(*h.carried->screen);
    screen_cursor_ = ring_.total();
    screen_seq_ = h.carried->screen_seq;
    screen_exact_ = h.carried->screen_exact;
  } else if (tty_ && !exit && !restored) {
    // The model died with the daemon: a full-screen program redraws on SIGWINCH, and the
    // model is rebuilt from that (a shell at its prompt just redisplays its line).
    if (pid_t fg = ::tcgetpgrp(process_->master_fd()); fg > 0) ::kill(-fg, SIGWINCH);
  }
  if (restored && !h.carried->pending_input.empty()) (void)write(h.carried->pending_input);
  // It ended while no daemon ran: its end is delivered on the next loop turn, once the manager
  // and the front door know the session (a no-op if it is gone by then).
  if (exit) loop_->post([reaper = reaper_, pid = pid_, st = *exit] { (void)reaper->deliver(pid, st); });
  refilled_ = Clock::now();
  return {};
}

bool Session::describe(Handover& h) const {
  if (!process_) return false;
  h.id = id_;
  h.pid = pid_;
  h.tty = tty_;
  h.stdin_pipe = process_->stdin_pipe_fd() >= 0;
  h.size = size_;
  h.argv = argv_;
  h.cwd = cwd_;
  h.name = name_;
  h.sandboxed = sandboxed_;
  h.sandbox_kind = sandbox_kind_;
  h.seccomp = seccomp_;
  h.mount_view = mount_view_;
  h.pid_namespace = tier_ == ContainmentTier::kPidNamespace;
  h.started_wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(started_wall_.time_since_epoch()).count();
  if (group_) {
    h.cgroup = group_->path();
    h.marker = group_->marker();
  }
  h.late_deny = late_deny_;
  h.next_seq = next_seq_;
  h.total = ring_.total();
  h.newlines = ring_.newlines();
  return true;
}

void Session::set_mirror(SeqMirror* mirror) noexcept {
  mirror_ = mirror;
  if (!mirror_) return;
  mirror_->total.store(ring_.total(), std::memory_order_relaxed);
  mirror_->newlines.store(ring_.newlines(), std::memory_order_relaxed);
  mirror_seq();
}

void Session::mirror_seq() noexcept {
  if (mirror_) mirror_->next_seq.store(next_seq_, std::memory_order_relaxed);
}

void Session::on_output(pty::Stream stream, std::span<const std::byte> bytes) {
  // When, for recordings: ms after the start (a vDSO clock read per chunk, not per byte).
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_at_).count();
  auto at_ms = static_cast<std::uint32_t>(std::clamp<long long>(ms, 0, UINT32_MAX));
  if (mirror_) {  // before the append: a death in between loses this chunk, never its seq
    mirror_->next_seq.store(next_seq_ + 1, std::memory_order_relaxed);
    mirror_->total.store(ring_.total() + bytes.size(), std::memory_order_relaxed);
  }
  ring_.append(next_seq_++, stream, bytes, at_ms);
  if (mirror_) mirror_->newlines.store(ring_.newlines(), std::memory_order_relaxed);
  arm_idle();
  if (limits_.output_bytes_per_sec) meter_output(bytes.size());
}

// No output and no input for idle_timeout ends the session.
void Session::arm_idle() {
  if (!limits_.idle_timeout || exit_) return;
  long ms = limits_.idle_timeout->count();
  idle_.start(*limits_.idle_timeout, [this, ms] { end_by_limit("idleTimeout", fmt::format("an idle timeout of {} ms", ms)); });
}

void Session::end_by_limit(std::string limit, std::string message) {
  if (exit_ || ended_by_) return;
  UEXEC_LOG(kInfo, "session {}: ended by {}", id_, message);
  ended_by_ = LimitEnd{std::move(limit), std::move(message)};
  terminate();
}

// A token bucket holding at most one second of output (and at least one read): past it,
// reading pauses until the deficit has been earned back, so the child blocks in write(2)
// as it would on a slow terminal. Nothing is dropped.
void Session::meter_output(std::size_t n) {
  const double rate = static_cast<double>(*limits_.output_bytes_per_sec);
  const double cap = std::max(rate, static_cast<double>(base::kReadSlabSize));
  auto now = Clock::now();
  tokens_ = std::min(cap, tokens_ + rate * std::chrono::duration<double>(now - refilled_).count());
  refilled_ = now;
  tokens_ -= static_cast<double>(n);
  if (tokens_ >= 0 || throttle_.active() || !process_) return;
  process_->pause_reading(pty::PtyProcess::kOutputRate);
  throttled_since_ = now;
  auto wait = std::chrono::milliseconds(static_cast<long>(std::ceil(-tokens_ * 1000.0 / rate)));
  throttle_.start(wait, [this] {
    output_throttled_ += std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - throttled_since_);
    if (process_) process_->resume_reading(pty::PtyProcess::kOutputRate);
  });
}

LimitEvents Session::limit_events() const { return limit_group_ ? limit_group_->events() : final_events_; }

void Session::on_eof() {
  eof_ = true;
  advance();
}

void Session::on_exit(const pty::ExitStatus& status) {
  exit_ = status;
  wall_.stop();
  idle_.stop();
  if (limit_group_ && !ended_by_ && status.signal == SIGKILL && limit_group_->events().oom_kills > 0)
    ended_by_ = LimitEnd{"memoryMax", fmt::format("a memory limit of {} bytes (the kernel's OOM killer)",
                                                   limits_.memory_max_bytes.value_or(0))};
  // What the sandbox's init saw itself deny (seccomp), before the verdict is taken.
  if (process_ && denial_log_) {
    for (const auto& r : process_->supervisor_records()) {
      std::uint64_t args[3] = {r.args[0], r.args[1], r.args[2]};
      // --log-denials: a write the policy forbids, or a read of what it hides.
      bool file = r.type == UEXEC_SUP_WRITE || r.type == UEXEC_SUP_READ;
      auto text = file ? policy::describe_file_record(r.nr, r.arch, r.path, r.type == UEXEC_SUP_READ)
                       : policy::describe_seccomp_record(r.nr, r.arch, args);
      std::string detail = text.detail;
      if (r.count > 1) detail += " x" + std::to_string(r.count);
      denial_log_->records.push_back({file ? "filesystem" : "seccomp", text.kind, detail, /*evidence=*/!file});
    }
    if (unsigned more = process_->supervisor_records_dropped())
      denial_log_->records.push_back({"sandbox", "not_listed",
                                      std::to_string(more) + " more calls or writes (the record table was full)",
                                      /*evidence=*/false});
  }
  exited_at_ = Clock::now();
  exited_wall_ = WallClock::now();
  advance();
}

// Runs after on_exit, on_eof and each timer, in any order. Nothing ends before the reap.
void Session::advance() {
  if (!exit_) {
    if (eof_) ring_.notify();  // output_closed is observable state
    return;
  }
  if (!verdict_) {
    if (!eof_ && !drain_expired_) {
      // Bytes written just before exit may still be in flight: wait a bounded time for EOF.
      if (!drain_.active())
        drain_.start(config_->exit_drain, [this] {
          drain_expired_ = true;
          advance();
        });
      return;
    }
    drain_.stop();
    // The one denial check: executor records first, then the predicate over what we kept.
    verdict_ = Verdict{*exit_, std::nullopt};
    if (sandboxed_)
      verdict_->denial = policy::classify_exit(*exit_, denial_log_.get(), ring_.render(), seccomp_, mount_view_);
    exited_seq_ = next_seq_++;
    mirror_seq();
    ring_.notify();
    if (observer_) observer_->on_session_exited(*this);
    if (!eof_) {
      if (config_->close_drain.count() == 0) {
        hang_up();  // re-enters advance() through on_eof, which publishes `closed`
      } else {
        close_wait_.start(config_->close_drain, [this] { hang_up(); });
      }
    }
  }
  if (eof_ && !closed_) {
    close_wait_.stop();
    kill_lingering();
    closed_ = true;
    closed_seq_ = next_seq_++;
    mirror_seq();
    ring_.notify();
    if (observer_) observer_->on_session_closed(*this);
  }
}

// The session is over: nothing it started may outlive it (docs/agent.md §5.2).
const std::vector<LingeringProcess>& Session::kill_lingering() {
  if (limit_group_) {  // after the kill below nothing more can happen under the limits
    final_events_ = limit_group_->events();
  }
  if (!group_ || contained_) {
    limit_group_.reset();
    return lingering_;
  }
  contained_ = true;
  lingering_ = group_->kill_all();
  group_.reset();  // its fd and cgroup go now, not when the session record does
  limit_group_.reset();
  for (const auto& l : lingering_)
    UEXEC_LOG(kDebug, "session {}: {} lingering process {} ({})", id_, l.killed ? "killed" : "could not kill", l.pid,
              l.command);
  return lingering_;
}

std::vector<LingeringProcess> Session::live_descendants() const {
  std::vector<LingeringProcess> out;
  if (!group_) return out;
  for (pid_t pid : group_->members()) out.push_back(describe_process(pid));
  return out;
}

void Session::hang_up() {
  if (eof_ || !process_) return;
  // A descendant still holds the slave (`cmd &`, `exec > >(tee …)`): stop waiting for it.
  hung_up_ = true;
  UEXEC_LOG(kDebug, "session {}: hanging up output after exit", id_);
  process_->hang_up();  // final drain, then EOF → on_eof → advance()
}

Result<void> Session::write(std::span<const std::byte> bytes) {
  if (!process_) return Error{Errc::kClosed, 0, "write: session " + id_ + " is not started"};
  auto r = process_->write(bytes);
  if (r) arm_idle();
  return r;
}

Result<void> Session::write(std::string_view text) {
  return write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

Result<void> Session::close_stdin() {
  if (!process_) return Error{Errc::kClosed, 0, "close_stdin: not started"};
  return process_->close_stdin();
}

Result<void> Session::resize(base::PtySize size) {
  if (!process_) return Error{Errc::kClosed, 0, "resize: not started"};
  auto r = process_->resize(size);
  if (!r) return r;
  // Output read before now was written for the old size: apply it first, as a terminal would.
  if (screen_) feed_screen();
  size_ = size;
  if (screen_) screen_->resize(size);
  return r;
}

Result<Session::ScreenState> Session::screen() {
  if (!tty_) return Error{Errc::kUnsupported, 0, "session " + id_ + " is not a tty: it has no screen"};
  if (!screen_)
    if (auto r = make_screen(); !r) return r.error();
  feed_screen();
  return ScreenState{screen_.get(), screen_seq_, screen_exact_};
}

// An empty model at the ring's start, fed as output arrives.
Result<void> Session::make_screen() {
  auto s = term::Screen::create(size_);
  if (!s) return std::move(s).error();
  screen_ = std::move(s).value();
  screen_cursor_ = 0;
  // Fed in batches: a flood then reaches the model as a few large pieces whose scrolled-away
  // lines it can skip. A batch stays well inside the ring's tail, so nothing is lost.
  screen_batch_ = std::clamp<std::size_t>(config_->retain_bytes / 4, 4096, 256 * 1024);
  screen_sub_ = ring_.subscribe([this] {
    if (ring_.total() - screen_cursor_ >= screen_batch_) feed_screen();
  });
  return {};
}

Carried Session::carry() {
  Carried c;
  if (process_) c.pending_input = process_->queued_input_bytes();
  c.exit = exit_;
  c.next_seq = next_seq_;
  c.size = size_;
  c.ring = ring_.image();
  if (screen_) {
    feed_screen();
    c.screen = screen_->ansi();
    c.screen_seq = screen_seq_;
    c.screen_exact = screen_exact_;
  }
  return c;
}

// Applies what the ring holds past the model's cursor; a gap (evicted output) makes it inexact.
void Session::feed_screen() {
  for (;;) {
    auto r = ring_.read_from(screen_cursor_, SIZE_MAX);
    if (r.gap > 0) screen_exact_ = false;
    screen_buf_.clear();
    for (const auto& piece : r.pieces) {
      screen_buf_.append(reinterpret_cast<const char*>(piece.bytes.data()), piece.bytes.size());
      screen_seq_ = std::max(screen_seq_, piece.seq);
    }
    screen_->feed(screen_buf_);
    if (r.next == screen_cursor_) break;
    screen_cursor_ = r.next;
  }
  if (screen_buf_.capacity() > 2 * screen_batch_) std::string().swap(screen_buf_);
}

Result<void> Session::signal(int sig, pty::SignalTarget target) {
  if (!process_) return Error{Errc::kClosed, 0, "signal: not started"};
  if (closed_ && exit_) return Error{Errc::kClosed, 0, "signal: session " + id_ + " has ended"};
  return process_->signal(sig, target);
}

void Session::kill_for_policy(std::string limit, std::string message) {
  if (exit_ || ended_by_) return;
  UEXEC_LOG(kWarn, "session {}: killed: {}", id_, message);
  ended_by_ = LimitEnd{std::move(limit), std::move(message)};
  (void)signal(SIGKILL, pty::SignalTarget::kGroup);
}

void Session::terminate() { terminate(config_->terminate_grace); }

void Session::terminate(std::chrono::milliseconds grace) {
  if (process_ && !closed_) process_->terminate(grace);
}

}  // namespace uexec::session
