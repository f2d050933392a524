// pty_process.h: one running child on a PTY (or on pipes), driven by the loop.
//
// It opens the PTY (or pipes), spawns, closes the slave at once (or EOF never comes), and
// then delivers three kinds of event to a listener it does not own (Node's StreamListener
// shape): output bytes, EOF of every output fd, and the leader's exit. Exit and EOF come in
// either order; joining them is the Session's job.
//
//   tty:   master ──(one uv_poll_t, READABLE | WRITABLE while input is queued)── stream kPty
//   pipes: stdout ─(uv_poll_t)─ kStdout   stderr ─(uv_poll_t)─ kStderr
//          stdin: /dev/null, or a pipe with its own uv_poll_t while input is queued
//
// Reading drains each readable fd until EAGAIN into the loop's 64 KiB slab, with a per-event
// cap (Config::read_burst_bytes) for fairness between sessions. The kernel's n_tty hands out
// ~4 KiB per read whatever we ask, so the drain loop, not the buffer size, is the lever.
//
// Rules:
// - Loop thread only. The listener must outlive this object and must not destroy it from
//   inside a callback.
// - The destructor SIGKILLs the process group of a child not yet reaped and reaps it
//   synchronously, so destroying a PtyProcess never leaves a zombie.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>
#include <span>
#include <string>

#include "base/config.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "loop/uv_handle.h"
#include "pty/child_reaper.h"
#include "pty/seccomp_listener.h"
#include "pty/supervisor_protocol.h"
#include "pty/exit_status.h"
#include "pty/spawn.h"

namespace uexec::pty {

enum class Stream : unsigned char { kPty = 0, kStdout = 1, kStderr = 2 };
const char* stream_name(Stream s) noexcept;

class ProcessListener {
 public:
  // Bytes of one read(2); valid only during the call.
  virtual void on_output(Stream stream, std::span<const std::byte> bytes) = 0;
  // Every output fd reached EOF or was hung up. Called once.
  virtual void on_eof() = 0;
  // The leader was reaped. Called once.
  virtual void on_exit(const ExitStatus& status) = 0;

 protected:
  ~ProcessListener() = default;
};

struct ProcessOptions {
  bool tty = true;
  base::PtySize size{};
  bool stdin_pipe = false;  // pipes only: a writable stdin; otherwise stdin is /dev/null
  std::size_t read_burst_bytes = 1024 * 1024;
  std::size_t stdin_queue_max = 1024 * 1024;
};

// Where a signal goes.
enum class SignalTarget {
  kForeground,  // the PTY's foreground process group (tcgetpgrp); the group for pipes
  kGroup,       // the leader's process group (= its session: it called setsid)
  kLeader,      // the leader alone
};

// A running child's fds as an earlier daemon held them (session/handover.h), owned.
struct AdoptedFds {
  base::UniqueFd out[2];    // tty: [0] the master; pipes: stdout, stderr (either may be closed)
  base::UniqueFd stdin_pipe;  // pipes with stdin_pipe: the write end
  base::UniqueFd status;    // supervised spawns: init's records and the command's status
  base::UniqueFd pidfd;
  base::UniqueFd listener;  // Landlock and bwrap: the seccomp listener the manager answers
  std::shared_ptr<const FileView> files;  // the listener's file records (null: none)
  base::UniqueFd mask_requests;  // namespaces with deny-read: where init takes mask requests
};

// The same fds borrowed from a running PtyProcess, to be held elsewhere (-1: none).
struct HeldFds {
  int out[2] = {-1, -1};
  int stdin_pipe = -1;
  int status = -1;
  int pidfd = -1;
  int listener = -1;
  int mask_requests = -1;
};

class PtyProcess {
 public:
  // Opens the PTY or pipes and spawns. Errors: kExecFailed with errno and step.
  [[nodiscard]] static base::Result<std::unique_ptr<PtyProcess>> start(
      loop::Loop& loop, ChildReaper& reaper, const SpawnSpec& spec, const ProcessOptions& opts,
      ProcessListener& listener);
  // Takes over `pid`, a child another process reaps (the holder), from its fds: output and
  // input work as after start(); the exit comes through ChildReaper::deliver.
  [[nodiscard]] static base::Result<std::unique_ptr<PtyProcess>> adopt(
      loop::Loop& loop, ChildReaper& reaper, pid_t pid, AdoptedFds fds, const ProcessOptions& opts,
      ProcessListener& listener);
  ~PtyProcess();
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  // Sandboxed spawns: what the sandbox's init (supervised) or the manager's seccomp listener
  // (Landlock-only) recorded denying; valid after exit.
  const std::vector<uexec_sup_record>& supervisor_records() const noexcept { return supervisor_records_; }
  // Denial records the sandbox could not keep (its table or its status pipe was full).
  unsigned supervisor_records_dropped() const noexcept { return supervisor_records_dropped_; }
  bool tty() const noexcept { return opts_.tty; }
  bool exited() const noexcept { return exited_; }
  bool eof() const noexcept { return open_outputs_ == 0; }
  // The master fd (tty) or -1; for ioctls such as tcgetpgrp. Invalid after EOF.
  int master_fd() const noexcept { return opts_.tty ? outputs_[0].fd.get() : -1; }

  // Queues bytes for the child's stdin; writes what it can now. kClosed when stdin is
  // closed or absent, kLimit when the queue would exceed stdin_queue_max.
  [[nodiscard]] base::Result<void> write(std::span<const std::byte> bytes);
  // Pipes: closes the child's stdin once queued input is written. tty: kUnsupported.
  [[nodiscard]] base::Result<void> close_stdin();
  std::size_t queued_input() const noexcept { return pending_in_.size() - pending_off_; }
  // The same bytes (a hand-over carries them to the next daemon).
  std::string queued_input_bytes() const { return pending_in_.substr(pending_off_); }
  // Our end of the child's stdin pipe, or -1 (tty, no pipe, or closed).
  int stdin_pipe_fd() const noexcept { return stdin_.get(); }
  // The fds that keep the child's terminal or pipes open and its end observable, borrowed:
  // what a holder keeps copies of (mask_requests is the Session's to fill in).
  HeldFds held_fds() const noexcept;
  // The seccomp listener's file view, to carry with it; null: none.
  std::shared_ptr<const FileView> listener_files() const noexcept { return seccomp_ ? seccomp_->files() : nullptr; }
  // A taken-over process's mask-request channel (AdoptedFds), borrowed; -1: none.
  int adopted_mask_requests() const noexcept { return adopted_mask_requests_.get(); }

  // TIOCSWINSZ; the child sees SIGWINCH. kUnsupported for pipes, kClosed after EOF.
  [[nodiscard]] base::Result<void> resize(base::PtySize size);
  // Sends `sig`. ESRCH (nothing left to signal) is an error the caller may ignore.
  [[nodiscard]] base::Result<void> signal(int sig, SignalTarget target);
  // Escalation: SIGHUP (tty) and SIGTERM + SIGCONT to the group and the foreground group;
  // SIGKILL to both after `grace` unless the leader was reaped and output closed by then.
  void terminate(std::chrono::milliseconds grace);

  // Reads what is buffered (bounded), then closes every output fd: EOF is delivered.
  void hang_up();
  // Backpressure: stop/start reading output (the child then blocks). Each reason pauses on
  // its own; reading resumes when none is left.
  enum PauseReason : unsigned { kSlowConsumer = 1, kOutputRate = 2 };
  void pause_reading(PauseReason why = kSlowConsumer);
  void resume_reading(PauseReason why = kSlowConsumer);

 private:
  struct Output {
    base::UniqueFd fd;
    loop::UvHandle<uv_poll_t> poll;
    Stream stream = Stream::kPty;
    int armed = 0;  // the events the poll is started with; 0: stopped
    bool closed = false;  // at EOF: no longer read (the fd may stay open, see close_output)
  };

  PtyProcess(loop::Loop& loop, ChildReaper& reaper, const ProcessOptions& opts,
             ProcessListener& listener);
  base::Result<void> watch_outputs();
  static void on_poll(uv_poll_t* h, int status, int events) noexcept;
  static void on_stdin_poll(uv_poll_t* h, int status, int events) noexcept;
  // Reads `out` until EAGAIN, EOF or `budget` bytes. kWakeUp: a short first read (an echo, a
  // prompt) ends it too, the level-triggered poll fires again if more came; kFinal (a hang-up,
  // a poll error: no next turn) always reads on.
  enum class Drain { kWakeUp, kFinal };
  void handle_readable(Output& out, std::size_t budget, Drain drain);
  void close_output(Output& out, bool keep_fd = false);
  void flush_input();
  void update_poll_events();
  void handle_exit(const ExitStatus& reaped);
  int input_fd() const noexcept;
  void kill_now(int sig);

  loop::Loop* loop_;
  ChildReaper* reaper_;
  ProcessOptions opts_;
  ProcessListener* listener_;
  pid_t pid_ = -1;
  bool exited_ = false;
  unsigned paused_ = 0;  // PauseReason bits
  bool stdin_closing_ = false;
  Output outputs_[2];        // tty: [0] is the master; pipes: [0] stdout, [1] stderr
  int open_outputs_ = 0;
  base::UniqueFd stdin_;     // pipes with stdin_pipe: our write end
  base::UniqueFd status_;    // supervised spawns: init's records and the command's status
  std::vector<uexec_sup_record> supervisor_records_;
  unsigned supervisor_records_dropped_ = 0;
  std::shared_ptr<const void> keep_;  // SpawnSpec::keep
  // The listener of SpawnSpec::seccomp_listener_channel (a socket in keep_: declared after it).
  std::unique_ptr<SeccompListener> seccomp_;
  loop::UvHandle<uv_poll_t> stdin_poll_;
  bool stdin_armed_ = false;
  std::string pending_in_;   // queued input; bytes before pending_off_ are written
  std::size_t pending_off_ = 0;
  std::unique_ptr<loop::Timer> kill_timer_;  // made on the first terminate()
  base::UniqueFd adopted_mask_requests_;     // adopt(): what SpawnSpec::keep held before
};

}  // namespace uexec::pty
