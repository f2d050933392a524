// process_manager.h: the core API. Owns every Session by id, on the loop.
//
// start() validates, reserves an id, asks the SandboxAttempt for a SpawnSpec (every spawn
// goes through env_for), spawns, and returns the id. Callers then read the session's
// OutputRing through their own cursors and watch `exited` / `closed` through the hooks.
// Finished sessions stay until remove(); the agent and protocol layers add their retention,
// LRU pruning and tombstones on top.
//
// remove() never destroys a session inside a callback that came from it: the Session goes
// to a graveyard that a zero-delay timer empties on the next loop turn.
//
// Memory: glibc keeps what free() gets back, so after a burst of sessions (their 4 KiB ring
// pages, the notification lines written for them) RSS would stay at the peak although malloc
// has little in use. The manager counts what removed sessions held and calls malloc_trim(0)
// from the graveyard sweep (a loop turn of its own, never a read or write path), also for
// what the layers above report through freed(): at once when no session is left
// (Config::trim_idle_bytes freed since the last trim), else once
// Config::trim_delay after Config::trim_busy_bytes were freed, so a server that keeps
// churning trims at most once per delay. A trim walks the heap: a few ms for 100 MB.
//
// Ownership: Loop ─► ProcessManager ─► ChildReaper, Containment, Sessions. The manager is a
// child subreaper (unless containment is off): descendants that leave a session are found,
// killed when it finishes, and reaped. Destroying the manager SIGKILLs and reaps any child
// still running, so nothing outlives it, not even as a zombie.
// Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/config.h"
#include "base/result.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "policy/sandbox_attempt.h"
#include "pty/child_reaper.h"
#include "session/containment.h"
#include "session/deny_watch.h"
#include "session/session.h"
#include "session/owner_lifeline.h"
#include "session/session_recorder.h"

namespace uexec::session {

class ProcessManager final : public SessionObserver {
 public:
  explicit ProcessManager(loop::Loop& loop, base::Config config = {});
  ~ProcessManager();
  ProcessManager(const ProcessManager&) = delete;
  ProcessManager& operator=(const ProcessManager&) = delete;

  // Starts `req`. The id is req.id when given (kInvalidArgument if in use), else a new one.
  // Every spawn goes through `attempt.env_for`.
  [[nodiscard]] base::Result<SessionId> start(const policy::ExecRequest& req,
                                              const policy::SandboxAttempt& attempt = policy::SandboxAttempt::none());
  // Takes over a session an earlier daemon started (session/handover.h), under its own id;
  // recorders hear of it as of a start. A sandboxed one whose deny-read can no longer be
  // kept is killed, as at a start.
  [[nodiscard]] base::Result<SessionId> adopt(Handover h);
  // What adopt would look up that the daemon before cannot change (whether its cgroup is
  // still there), looked up now and kept in `h`: an upgrade's standby daemon does it before the
  // hand-over, so that it is not part of the pause.
  void prepare_adopt(Handover& h) const;
  // A taken-over session's leader ended; its reaper (the holder) says how.
  void deliver_exit(pid_t pid, const pty::ExitStatus& st) noexcept { (void)reaper_.deliver(pid, st); }
  // That reaper is gone: taken-over sessions end when their pidfds say so, status unknown.
  void reaper_lost() noexcept { reaper_.reaper_lost(); }
  // The session, or nullptr.
  Session* find(const SessionId& id) noexcept;
  // Forgets a session; one still running is killed (SIGKILL) and reaped first.
  void remove(const SessionId& id);
  // Escalation on every session not yet finished.
  void terminate_all();

  std::size_t size() const noexcept { return sessions_.size(); }
  // Counts `bytes` the caller freed (a protocol session, a connection and its queue) toward
  // the next trim, decided on the next loop turn (see above).
  void freed(std::size_t bytes);
  // What a session (or a protocol session above it) holds besides its ring, roughly.
  static constexpr std::size_t kSessionOverheadBytes = 16 * 1024;
  // malloc_trim calls so far (see above), and bytes counted as freed since the last one.
  std::size_t trims() const noexcept { return trims_; }
  std::size_t freed_since_trim() const noexcept { return freed_; }
  std::vector<Session*> sessions();
  const base::Config& config() const noexcept { return config_; }
  const Containment* containment() const noexcept { return containment_.get(); }
  loop::Loop& loop() noexcept { return *loop_; }

  // A recorder told of every session's start and end (the journal, the holder's link); it
  // must outlive the manager or be removed first; the manager's destructor tells it nothing.
  void add_recorder(SessionRecorder* recorder);
  void remove_recorder(SessionRecorder* recorder) noexcept;
  // The watcher that ends the sessions' process groups if this process dies without ending
  // them (owner_lifeline.h); null: none (the daemon). Same lifetime rule as the recorder.
  void set_lifeline(OwnerLifeline* lifeline) noexcept { lifeline_ = lifeline; }

  // Event hooks for the front door (one each; may be empty).
  std::function<void(Session&)> on_exited;
  std::function<void(Session&)> on_closed;

 private:
  void on_session_exited(Session& s) override;
  void on_session_closed(Session& s) override;
  void sweep();
  void trim_now();
  // Tells the lifeline that `s`'s process group is gone, if it has not yet.
  void forget_group(Session& s);
  // Deny-read files that appear later are masked too (DenyReadWatcher); false: it cannot.
  base::Result<void> watch_late_deny(Session& s);

  loop::Loop* loop_;
  base::Config config_;
  pty::ChildReaper reaper_;
  std::unique_ptr<Containment> containment_;  // null when Config::containment is kOff
  std::unordered_map<SessionId, std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<Session>> graveyard_;
  loop::Timer sweep_;
  std::size_t freed_ = 0;  // bytes the sessions removed since the last trim held (estimate)
  std::size_t trims_ = 0;
  std::unique_ptr<loop::Timer> trim_timer_;  // a trim while sessions remain; gone when idle
  std::uint64_t next_id_ = 1;
  std::unique_ptr<DenyReadWatcher> deny_watch_;  // made for the first sandbox with deny-read
  std::vector<SessionRecorder*> recorders_;
  OwnerLifeline* lifeline_ = nullptr;
  std::unordered_set<const Session*> lifeline_listed_;  // groups the lifeline still lists
};

}  // namespace uexec::session
