#include "pty/child_reaper.h"

#include <signal.h>
#include <sys/wait.h>

#include <vector>

#include "base/log.h"

namespace uexec::pty {

using base::Error;
using base::Result;

ChildReaper::~ChildReaper() = default;

bool ChildReaper::try_reap(pid_t pid, ExitStatus* out) noexcept {
  siginfo_t si{};
  int rc;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0 || si.si_pid != pid) return false;
  ExitStatus st;
  switch (si.si_code) {
    case CLD_EXITED: st.code = si.si_status; break;
    case CLD_DUMPED: st.core_dumped = true; [[fallthrough]];
    case CLD_KILLED: st.signal = si.si_status; break;
    default: st.code = si.si_status; break;
  }
  *out = st;
  return true;
}

Result<void> ChildReaper::watch(pid_t pid, base::UniqueFd pidfd, ExitFn fn) {
  auto child = std::make_unique<Child>();
  child->owner = this;
  child->pid = pid;
  child->fn = std::move(fn);
  if (pidfd) {
    auto poll = loop::make_handle<uv_poll_t>(
        [&](uv_poll_t* p) { return uv_poll_init(loop_->get(), p, pidfd.get()); }, "uv_poll_init pidfd");
    if (poll) {
      child->pidfd = std::move(pidfd);
      child->poll = std::move(poll).value();
      child->poll.get()->data = child.get();
      if (int rc = uv_poll_start(child->poll.get(), UV_READABLE, &ChildReaper::on_pidfd); rc < 0)
        return Error::uv(rc, "uv_poll_start pidfd");
      children_.emplace(pid, std::move(child));
      return {};
    }
    UEXEC_LOG(kWarn, "pidfd poll failed ({}); using SIGCHLD", poll.error().message());
  }
  if (!sigchld_started_) {
    auto r = sigchld_.start(SIGCHLD, [this](int) { sweep(); });
    if (!r) return r;
    sigchld_started_ = true;
  }
  children_.emplace(pid, std::move(child));
  // The child may have exited before the watcher existed: look once now, on the loop.
  loop_->post([this] { sweep(); });
  return {};
}

void ChildReaper::unwatch(pid_t pid) noexcept { children_.erase(pid); }

void ChildReaper::on_pidfd(uv_poll_t* h, int /*status*/, int /*events*/) noexcept {
  auto* child = static_cast<Child*>(h->data);
  if (!child) return;
  ExitStatus st;
  // Readable pidfd means exited; an error status (rare) also warrants a look.
  if (try_reap(child->pid, &st)) child->owner->finish(child->pid, st);
}

void ChildReaper::sweep() noexcept {
  std::vector<std::pair<pid_t, ExitStatus>> done;
  for (auto& [pid, child] : children_) {
    if (child->poll) continue;  // has a pidfd: its own poll reports it
    ExitStatus st;
    if (try_reap(pid, &st)) done.emplace_back(pid, st);
  }
  for (auto& [pid, st] : done) finish(pid, st);
}

void ChildReaper::finish(pid_t pid, const ExitStatus& st) noexcept {
  auto it = children_.find(pid);
  if (it == children_.end()) return;
  auto fn = std::move(it->second->fn);
  children_.erase(it);  // closes the pidfd poll; frees the slot before the callback
  if (fn) fn(st);
}

}  // namespace uexec::pty
