// child_reaper.h: learning, on the loop, that one of our children has exited.
//
// Per pid, never waitpid(-1): libuv reaps its own uv_spawn children by pid, and a wildcard
// wait would steal them (and any other library's). With a pidfd (CLONE_PIDFD, Linux 5.2)
// each child gets a uv_poll_t that turns readable when it exits, so the event names the
// child. Without one, a SIGCHLD watcher walks our pids with waitpid(pid, WNOHANG). Exited
// pids are collected first and called back after, so a callback may spawn or unwatch.
//
// Orphans (adopt_orphans): the manager becomes a child subreaper, so descendants whose
// parent died re-parent to it instead of to init (containment finds them, see
// session/containment.h), and a SIGCHLD watcher reaps every exited child nobody watches,
// named by /proc/self/task/*/children, never by waitpid(-1). That is safe only while no
// other code leaves children to be reaped later: here, the one loop thread spawns, and
// its few synchronous forks (probes) wait for their own child before returning.
//
// Rules: Loop thread only. A watched child is reaped exactly once, by us; its callback runs
// once, after the reap, with the ExitStatus.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <unordered_map>

#include "base/result.h"
#include "base/unique_fd.h"
#include "loop/loop.h"
#include "loop/signal_watcher.h"
#include "loop/uv_handle.h"
#include "pty/exit_status.h"

namespace uexec::pty {

class ChildReaper {
 public:
  using ExitFn = std::function<void(const ExitStatus&)>;

  explicit ChildReaper(loop::Loop& loop) : loop_(&loop), sigchld_(loop) {}
  ~ChildReaper();
  ChildReaper(const ChildReaper&) = delete;
  ChildReaper& operator=(const ChildReaper&) = delete;

  // Watches `pid`; `pidfd` (may be invalid) is taken over. fn runs once after the reap.
  [[nodiscard]] base::Result<void> watch(pid_t pid, base::UniqueFd pidfd, ExitFn fn);
  // Stops watching without reaping (the caller reaps, e.g. in a destructor).
  void unwatch(pid_t pid) noexcept;
  // A process another process reaps (a session taken over from the holder, holder/holder.h,
  // whose child it is now): its status comes through deliver(); `pidfd` is kept, unpolled.
  [[nodiscard]] base::Result<void> watch_reaped_elsewhere(pid_t pid, base::UniqueFd pidfd, ExitFn fn);
  // The status of such a process, as its reaper reported it; false when `pid` is not one.
  bool deliver(pid_t pid, const ExitStatus& st) noexcept;
  // Their reaper is gone: each now ends when its pidfd turns readable, status unknown (255).
  void reaper_lost() noexcept;
  // The pidfd of a watched pid, borrowed; -1 without one.
  int pidfd_of(pid_t pid) const noexcept;
  std::size_t watched() const noexcept { return children_.size(); }

  // Becomes a child subreaper and reaps unwatched children as they exit (see above).
  [[nodiscard]] base::Result<void> adopt_orphans();
  // Reaps every exited child nobody watches, now; returns how many.
  std::size_t reap_orphans() noexcept;

  // Non-blocking reap of one pid; false when it has not exited (errno 0) or cannot be waited
  // for (errno: ECHILD when it was reaped elsewhere).
  static bool try_reap(pid_t pid, ExitStatus* out) noexcept;

 private:
  struct Child {
    ChildReaper* owner;
    pid_t pid;
    base::UniqueFd pidfd;
    loop::UvHandle<uv_poll_t> poll;
    ExitFn fn;
    bool elsewhere = false;  // reaped by another process (watch_reaped_elsewhere)
  };
  base::Result<void> poll_pidfd(Child& child);
  static void on_pidfd(uv_poll_t* h, int status, int events) noexcept;
  base::Result<void> start_sigchld();
  void sweep() noexcept;
  void finish(pid_t pid, const ExitStatus& st) noexcept;

  loop::Loop* loop_;
  loop::SignalWatcher sigchld_;
  bool sigchld_started_ = false;
  bool adopting_ = false;
  std::unordered_map<pid_t, std::unique_ptr<Child>> children_;
};

}  // namespace uexec::pty
