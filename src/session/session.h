// session.h: one command, from spawn to `closed`: a PtyProcess, its OutputRing, and the
// join of "child exited" with "output EOF".
//
// Exit and EOF arrive in either order (tmux's JOB_DEAD / JOB_CLOSED). Every event calls one
// function, advance(), and the verdict is an optional, so the denial check runs once:
//
//   running ──exit──► wait for EOF ≤ exit_drain (uv timer) ──► verdict, `exited`
//      │                                                          │
//      └──EOF──► output_closed ──exit──► verdict, `exited` ───────┤
//                                                                 ▼
//                  EOF, or close_drain expires and we hang up ──► `closed` (finished, once)
//
// Output chunks, `exited` and `closed` share one seq counter starting at 1; `closed` is last.
// A hang-up reads what the kernel still buffers before closing, so no written byte is lost.
// When it finishes, whatever its command left running (`setsid -f`, `nohup … &`, a daemon) is
// killed through its containment group and recorded as lingering (containment.h).
// Limits (base::SessionLimits) act here: a wall-clock and an idle timer terminate it (with
// the reason kept in ended_by()), an output rate pauses reading as a slow terminal would,
// and the cgroup side (memory, pids, cpu) is a LimitGroup (containment.h) the child joins;
// an OOM kill under memory_max_bytes is reported as the reason too.
// The Session never deletes itself: it tells its observer (the ProcessManager), which
// erases it later. Loop thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "base/config.h"
#include "base/result.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "policy/sandbox_attempt.h"
#include "pty/pty_process.h"
#include "session/containment.h"
#include "session/handover.h"
#include "session/output_ring.h"
#include "session/seq_mirror.h"
#include "term/screen.h"

namespace uexec::session {

using SessionId = std::string;
using Clock = std::chrono::steady_clock;
using WallClock = std::chrono::system_clock;  // only for times shown to people and clients

// Which limit ended a session. `limit`: "timeout", "idleTimeout" or "memoryMax"; `message`
// says it for people: "a lifetime timeout of 2000 ms" (docs/agent.md §5.3's killed-by).
struct LimitEnd {
  std::string limit;
  std::string message;
};

// How the session ended, decided once.
struct Verdict {
  pty::ExitStatus status;
  std::optional<policy::SandboxDenied> denial;  // set only for a denied sandboxed run
  bool sandbox_denied() const noexcept { return denial.has_value(); }
};

class Session;

class SessionObserver {
 public:
  virtual void on_session_exited(Session& s) = 0;  // the verdict exists
  virtual void on_session_closed(Session& s) = 0;  // finished: exited and output closed

 protected:
  ~SessionObserver() = default;
};

class Session final : public pty::ProcessListener {
 public:
  // `containment` may be null (no containment); it must outlive the session. `limits` are
  // the session's own (Config::limits merged with its request's).
  Session(loop::Loop& loop, pty::ChildReaper& reaper, const base::Config& config, SessionId id,
          SessionObserver* observer, Containment* containment = nullptr, base::SessionLimits limits = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Spawns through `attempt`; errors are kExecFailed (errno, step) or kInvalidArgument.
  [[nodiscard]] base::Result<void> start(const policy::SandboxAttempt& attempt,
                                         const policy::ExecRequest& req);

  // Takes over a session an earlier daemon started (handover.h) instead of spawning: its
  // output continues at the seq and offset it had reached. What came before is the carried
  // ring and screen after an upgrade; after a crash it is a gap, and a terminal's foreground
  // program is sent SIGWINCH so that a full-screen one redraws what the lost model showed.
  [[nodiscard]] base::Result<void> adopt(Handover h);
  // For a hand-over on purpose (an upgrade): what this session holds. The caller turns the
  // loop no more before it leaves, so nothing is read after this (what the child writes waits
  // in the kernel for the next daemon); if the hand-over fails, the session simply goes on.
  Carried carry();
  // Where the output counters are copied as they move (seq_mirror.h); null: nowhere.
  void set_mirror(SeqMirror* mirror) noexcept;
  // What a holder needs to give this session to another daemon; false before start.
  bool describe(Handover& h) const;

  const SessionId& id() const noexcept { return id_; }
  pid_t pid() const noexcept { return pid_; }
  bool tty() const noexcept { return tty_; }
  const std::vector<std::string>& argv() const noexcept { return argv_; }
  // The directory it started in (the request's, or the manager's when the request named none).
  const std::string& cwd() const noexcept { return cwd_; }
  // A front door's label for it (process/start's or exec_command's `name`); empty: none. Each
  // front door keeps names unique among its own live sessions.
  const std::string& name() const noexcept { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  OutputRing& output() noexcept { return ring_; }
  const OutputRing& output() const noexcept { return ring_; }

  bool exited() const noexcept { return exit_.has_value(); }  // reaped
  bool output_closed() const noexcept { return eof_; }
  bool finished() const noexcept { return closed_; }
  // Set once, when `exited` is published.
  const std::optional<Verdict>& verdict() const noexcept { return verdict_; }
  // Deny-read globs to keep masking after launch, and where init takes the mask requests
  // (-1: not a sandbox that can). The channel stays open while the process object lives.
  const std::vector<std::string>& late_deny() const noexcept { return late_deny_; }
  int mask_requests() const noexcept { return mask_requests_; }
  // What the sandbox reported denying (seccomp records), complete once the verdict exists.
  const policy::DenialLog* denial_log() const noexcept { return denial_log_.get(); }
  // True when `closed` came from EOF rather than a hang-up (protocol's outputEof).
  bool output_eof() const noexcept { return closed_ && !hung_up_; }
  Seq next_seq() const noexcept { return next_seq_; }
  Seq exited_seq() const noexcept { return exited_seq_; }  // 0 until published
  Seq closed_seq() const noexcept { return closed_seq_; }  // 0 until published
  Clock::time_point started_at() const noexcept { return started_at_; }
  Clock::time_point exited_at() const noexcept { return exited_at_; }  // the reap
  // The same two moments on the wall clock, for clients (startedAtMs, exitedAtMs); the epoch
  // until they happen.
  WallClock::time_point started_wall() const noexcept { return started_wall_; }
  WallClock::time_point exited_wall() const noexcept { return exited_wall_; }
  bool sandboxed() const noexcept { return sandboxed_; }
  const char* sandbox_kind() const noexcept { return sandbox_kind_; }  // policy::sandbox_kind_name
  ContainmentTier containment_tier() const noexcept { return tier_; }
  // What was still running when the session finished, and was killed then.
  const std::vector<LingeringProcess>& lingering() const noexcept { return lingering_; }
  const base::SessionLimits& limits() const noexcept { return limits_; }
  // The limit that ended it (set when its timer fired, or at the reap for an OOM kill).
  const std::optional<LimitEnd>& ended_by() const noexcept { return ended_by_; }
  // What the kernel did under the cgroup limits (final once `closed`), and how long the
  // output rate held reading back.
  LimitEvents limit_events() const;
  std::chrono::milliseconds output_throttled() const noexcept { return output_throttled_; }
  // Kills the session's descendants now (once; finishing does it too) and says who they were.
  const std::vector<LingeringProcess>& kill_lingering();
  // The session's processes alive now other than the leader (not killed), e.g. the
  // background job holding the PTY after the leader exited. Scans: call on demand only.
  std::vector<LingeringProcess> live_descendants() const;

  // Input, control and signals: kClosed once the process side is gone.
  [[nodiscard]] base::Result<void> write(std::span<const std::byte> bytes);
  [[nodiscard]] base::Result<void> write(std::string_view text);
  [[nodiscard]] base::Result<void> close_stdin();
  [[nodiscard]] base::Result<void> resize(base::PtySize size);
  [[nodiscard]] base::Result<void> signal(int sig, pty::SignalTarget target);
  // Ends the session now (SIGKILL, no grace) because its policy can no longer be kept;
  // `limit` and `message` become ended_by() (e.g. "denyReadUncovered").
  void kill_for_policy(std::string limit, std::string message);
  // Escalation (SIGHUP/SIGTERM, SIGKILL after Config::terminate_grace).
  void terminate();
  void terminate(std::chrono::milliseconds grace);
  // The screen model of a tty session (process/snapshot, view "screen", web attach): built
  // on first use by replaying the retained output, then fed in batches as output arrives and
  // brought up to date here, so `seq` (the last output chunk applied) is current. `exact` is false when the
  // replay or the feed skipped evicted output. kUnsupported: not a tty, or no libvterm.
  struct ScreenState {
    const term::Screen* screen = nullptr;
    Seq seq = 0;
    bool exact = true;
  };
  [[nodiscard]] base::Result<ScreenState> screen();
  base::PtySize size() const noexcept { return size_; }  // tty: the last size set
  // The process, for tests and tty probes (nullptr before start).
  pty::PtyProcess* process() noexcept { return process_.get(); }

 private:
  void on_output(pty::Stream stream, std::span<const std::byte> bytes) override;
  void on_eof() override;
  void on_exit(const pty::ExitStatus& status) override;
  void advance();
  void hang_up();
  void feed_screen();
  base::Result<void> make_screen();
  void arm_idle();
  void end_by_limit(std::string limit, std::string message);
  void meter_output(std::size_t n);
  void mirror_seq() noexcept;
  pty::ProcessOptions process_options(bool tty, base::PtySize size, bool stdin_pipe) const;

  loop::Loop* loop_;
  pty::ChildReaper* reaper_;
  const base::Config* config_;
  SessionId id_;
  SessionObserver* observer_;
  Containment* containment_;
  std::unique_ptr<ContainmentGroup> group_;
  base::SessionLimits limits_;
  std::unique_ptr<LimitGroup> limit_group_;
  LimitEvents final_events_;  // limit_group_'s, kept when it goes
  std::optional<LimitEnd> ended_by_;
  loop::Timer wall_, idle_, throttle_;
  double tokens_ = 0;                     // output rate: the bucket, in bytes
  Clock::time_point refilled_{}, throttled_since_{};
  std::chrono::milliseconds output_throttled_{0};
  ContainmentTier tier_ = ContainmentTier::kNone;
  std::vector<LingeringProcess> lingering_;
  bool contained_ = false;  // the group was killed
  OutputRing ring_;
  std::unique_ptr<pty::PtyProcess> process_;
  std::vector<std::string> argv_;
  std::string cwd_;
  std::string name_;
  pid_t pid_ = -1;
  bool tty_ = false;
  bool sandboxed_ = false;
  const char* sandbox_kind_ = "none";
  bool seccomp_ = false;
  bool mount_view_ = false;
  std::shared_ptr<policy::DenialLog> denial_log_;
  std::vector<std::string> late_deny_;
  int mask_requests_ = -1;
  Clock::time_point exited_at_{};

  SeqMirror* mirror_ = nullptr;
  Seq next_seq_ = 1;
  Seq exited_seq_ = 0;
  Seq closed_seq_ = 0;
  std::optional<pty::ExitStatus> exit_;
  std::optional<Verdict> verdict_;
  bool eof_ = false;
  bool drain_expired_ = false;
  bool hung_up_ = false;
  bool closed_ = false;
  loop::Timer drain_;
  loop::Timer close_wait_;
  Clock::time_point started_at_{};
  WallClock::time_point started_wall_{}, exited_wall_{};
  base::PtySize size_{};
  std::unique_ptr<term::Screen> screen_;
  std::unique_ptr<Subscription> screen_sub_;
  Offset screen_cursor_ = 0;
  std::size_t screen_batch_ = 0;  // feed the model once this much output is pending
  std::string screen_buf_;        // one batch, contiguous
  Seq screen_seq_ = 0;
  bool screen_exact_ = true;
};

}  // namespace uexec::session
