#include "session/process_manager.h"

#include <errno.h>
#include <signal.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/log.h"

namespace uexec::session {

using base::Error;
using base::Result;

ProcessManager::ProcessManager(loop::Loop& loop, base::Config config)
    : loop_(&loop), config_(config), reaper_(loop), sweep_(loop) {
  if (config_.containment == base::ContainmentMode::kOff) return;
  containment_ = std::make_unique<Containment>(config_.containment, config_.containment_owner);
  if (auto r = reaper_.adopt_orphans(); !r)
    UEXEC_LOG(kWarn, "containment: orphans will not re-parent to the manager ({})", r.error().message());
}

ProcessManager::~ProcessManager() {
  // SIGKILL every group first, so the children die in parallel; then each PtyProcess
  // unwatches and reaps its own (sessions go before the reaper).
  // Descendants that left their sessions go at the same time.
  std::vector<pid_t> escapees;
  for (auto& [id, s] : sessions_) {
    if (!s->exited()) (void)s->signal(SIGKILL, pty::SignalTarget::kGroup);
    for (const auto& l : s->kill_lingering()) escapees.push_back(l.pid);
  }
  for (auto& s : graveyard_)
    for (const auto& l : s->kill_lingering()) escapees.push_back(l.pid);
  sessions_.clear();
  graveyard_.clear();
  deny_watch_.reset();
  containment_.reset();  // kills what is left in the cgroups and waits for it to exit
  await_gone(escapees, std::chrono::milliseconds{1000});  // reaps those re-parented to us
  reaper_.reap_orphans();
}

Result<SessionId> ProcessManager::start(const policy::ExecRequest& req, const policy::SandboxAttempt& attempt) {
  SessionId id = req.id;
  if (id.empty()) {
    do {
      id = std::to_string(next_id_++);
    } while (sessions_.count(id) != 0);
  } else if (sessions_.count(id) != 0) {
    return Error::invalid("process id " + id + " is already in use");
  }
  auto session = std::make_unique<Session>(*loop_, reaper_, config_, id, this, containment_.get(),
                                           config_.limits.merged(req.limits));
  if (auto r = session->start(attempt, req); !r) return std::move(r).error();
  if (auto r = watch_late_deny(*session); !r) return std::move(r).error();
  Session& started = *session;
  sessions_.emplace(id, std::move(session));
  for (auto* r : recorders_) r->on_started(started);
  if (lifeline_) {
    lifeline_->started(started.pid());  // a session leader: its pid is its group
    lifeline_listed_.insert(&started);
  }
  return id;
}

Result<void> ProcessManager::watch_late_deny(Session& session) {
  if (session.late_deny().empty() || session.mask_requests() < 0) return {};
  // A session that cannot be watched does not run (its process is killed and reaped as the
  // session goes).
  if (!deny_watch_) {
    deny_watch_ = std::make_unique<DenyReadWatcher>(*loop_);
    // Later, a session the watcher can no longer cover ends (fail closed, docs/sandbox.md §3.6).
    deny_watch_->on_uncovered = [this](const std::string& sid, const std::string& why) {
      if (Session* s = find(sid)) s->kill_for_policy("denyReadUncovered", why);
    };
  }
  if (auto r = deny_watch_->add(session.id(), session.late_deny(), session.mask_requests()); !r) {
    (void)session.signal(SIGKILL, pty::SignalTarget::kGroup);
    deny_watch_->report_uncovered();
    return r;
  }
  deny_watch_->report_uncovered();
  return {};
}

void ProcessManager::prepare_adopt(Handover& h) const {
  if (containment_ && !h.pid_namespace && !h.cgroup.empty()) h.cgroup_adoptable = containment_->adoptable_cgroup(h.cgroup);
}

Result<SessionId> ProcessManager::adopt(Handover h) {
  SessionId id = h.id;
  if (id.empty() || sessions_.count(id) != 0) return Error::invalid("process id " + id + " is empty or in use");
  auto session = std::make_unique<Session>(*loop_, reaper_, config_, id, this, containment_.get(), config_.limits);
  if (auto r = session->adopt(std::move(h)); !r) return std::move(r).error();
  if (!session->late_deny().empty() && session->mask_requests() < 0) {
    (void)session->signal(SIGKILL, pty::SignalTarget::kGroup);
    return Error::invalid("process " + id + ": its deny-read masking could not be taken over");
  }
  if (auto r = watch_late_deny(*session); !r) return std::move(r).error();
  Session& adopted = *session;
  sessions_.emplace(id, std::move(session));
  for (auto* r : recorders_) r->on_started(adopted);
  return id;
}

void ProcessManager::add_recorder(SessionRecorder* recorder) { recorders_.push_back(recorder); }

void ProcessManager::remove_recorder(SessionRecorder* recorder) noexcept {
  recorders_.erase(std::remove(recorders_.begin(), recorders_.end(), recorder), recorders_.end());
}

Session* ProcessManager::find(const SessionId& id) noexcept {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

void ProcessManager::remove(const SessionId& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (deny_watch_) deny_watch_->remove(id);
  if (!it->second->finished())
    for (auto* r : recorders_) r->on_removed(*it->second);
  graveyard_.push_back(std::move(it->second));
  sessions_.erase(it);
  // What the session held, roughly: its ring, plus its process, buffers and timers.
  freed(graveyard_.back()->output().memory_bytes() + kSessionOverheadBytes);
}

void ProcessManager::freed(std::size_t bytes) {
  freed_ += bytes;
  if (!sweep_.active()) sweep_.start(std::chrono::milliseconds{0}, [this] { sweep(); });
}

void ProcessManager::sweep() {
  std::vector<pid_t> groups;  // removed before they closed: still listed with the lifeline
  for (const auto& s : graveyard_)
    if (lifeline_listed_.erase(s.get())) groups.push_back(s->pid());
  graveyard_.clear();  // each Session's end kills what is left of its group
  for (pid_t g : groups) lifeline_->ended(g);
  if (sessions_.empty() && config_.trim_idle_bytes > 0 && freed_ >= config_.trim_idle_bytes) return trim_now();
  if (config_.trim_busy_bytes == 0 || freed_ < config_.trim_busy_bytes || trim_timer_) return;
  trim_timer_ = std::make_unique<loop::Timer>(*loop_);
  trim_timer_->start(config_.trim_delay, [this] { trim_now(); });
}

void ProcessManager::trim_now() {
#if defined(__GLIBC__)
  // glibc's per-thread cache (tcache) keeps up to 7 freed chunks of each size up to 1032
  // bytes wherever they were freed; malloc_trim leaves them alone, and each pins its page
  // (in the soak's drained check that was +600 KiB, half the budget; with the cache off,
  // +5%). So: take the cached chunks out, trim, refill the cache with fresh chunks (carved
  // together from the consolidated free space), then free the old ones past the full cache,
  // into the bins, where the second trim gives their pages back. Volatile, so that the
  // compiler cannot drop the malloc/free pairs.
  constexpr std::size_t kBins = 64, kPerBin = 7;
  static void* volatile cached[kBins * kPerBin];
  static void* volatile fresh[kBins * kPerBin];
  auto size_of = [](std::size_t i) { return 24 + 16 * (i / kPerBin); };  // chunk sizes 32..1040
  for (std::size_t i = 0; i < kBins * kPerBin; ++i) cached[i] = std::malloc(size_of(i));
  ::malloc_trim(0);
  for (std::size_t i = 0; i < kBins * kPerBin; ++i) fresh[i] = std::malloc(size_of(i));
  for (std::size_t i = 0; i < kBins * kPerBin; ++i) std::free(fresh[i]);
  for (std::size_t i = 0; i < kBins * kPerBin; ++i) std::free(cached[i]);
  ::malloc_trim(0);
#endif
  ++trims_;
  freed_ = 0;
  trim_timer_.reset();  // also from its own callback: Timer allows that
}

void ProcessManager::terminate_all() {
  for (auto& [id, s] : sessions_) s->terminate();
}

std::vector<Session*> ProcessManager::sessions() {
  std::vector<Session*> out;
  out.reserve(sessions_.size());
  for (auto& [id, s] : sessions_) out.push_back(s.get());
  return out;
}

void ProcessManager::on_session_exited(Session& s) {
  if (deny_watch_) deny_watch_->remove(s.id());
  // The leader is reaped; with no member left the group id is free for reuse, so the watcher
  // must forget it now (a group that lives on is forgotten at the close, which kills it).
  if (lifeline_ && ::kill(-s.pid(), 0) < 0 && errno == ESRCH) forget_group(s);
  if (on_exited) on_exited(s);
}

void ProcessManager::forget_group(Session& s) {
  if (lifeline_listed_.erase(&s)) lifeline_->ended(s.pid());  // once per session, never a reused id
}

void ProcessManager::on_session_closed(Session& s) {
  forget_group(s);  // its lingering members were killed just before
  for (auto* r : recorders_) r->on_closed(s);
  if (on_closed) on_closed(s);
}

}  // namespace uexec::session
