#include "pty/child_reaper.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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
  if (rc < 0) return false;
  if (si.si_pid != pid) {
    errno = 0;  // still running
    return false;
  }
  ExitStatus st = exit_status_of(si);
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
    if (auto r = start_sigchld(); !r) return r;
  }
  children_.emplace(pid, std::move(child));
  // The child may have exited before the watcher existed: look once now, on the loop.
  loop_->post([this] { sweep(); });
  return {};
}

Result<void> ChildReaper::poll_pidfd(Child& child) {
  int fd = child.pidfd.get();
  auto poll = loop::make_handle<uv_poll_t>([&](uv_poll_t* p) { return uv_poll_init(loop_->get(), p, fd); },
                                           "uv_poll_init pidfd");
  if (!poll) return std::move(poll).error();
  child.poll = std::move(poll).value();
  child.poll.get()->data = &child;
  if (int rc = uv_poll_start(child.poll.get(), UV_READABLE, &ChildReaper::on_pidfd); rc < 0)
    return Error::uv(rc, "uv_poll_start pidfd");
  return {};
}

Result<void> ChildReaper::watch_reaped_elsewhere(pid_t pid, base::UniqueFd pidfd, ExitFn fn) {
  if (children_.count(pid) != 0) return Error::invalid("pid " + std::to_string(pid) + " is already watched");
  auto child = std::make_unique<Child>();
  child->owner = this;
  child->pid = pid;
  child->fn = std::move(fn);
  child->pidfd = std::move(pidfd);
  child->elsewhere = true;
  children_.emplace(pid, std::move(child));
  return {};
}

bool ChildReaper::deliver(pid_t pid, const ExitStatus& st) noexcept {
  auto it = children_.find(pid);
  if (it == children_.end() || !it->second->elsewhere) return false;
  finish(pid, st);
  return true;
}

void ChildReaper::reaper_lost() noexcept {
  for (auto& [pid, child] : children_) {
    if (!child->elsewhere || child->poll || !child->pidfd) continue;
    if (auto r = poll_pidfd(*child); !r)
      UEXEC_LOG(kWarn, "process {}: its end will not be seen ({})", pid, r.error().message());
  }
}

int ChildReaper::pidfd_of(pid_t pid) const noexcept {
  auto it = children_.find(pid);
  return it == children_.end() ? -1 : it->second->pidfd.get();
}

Result<void> ChildReaper::start_sigchld() {
  auto r = sigchld_.start(SIGCHLD, [this](int) {
    sweep();
    if (adopting_) reap_orphans();
  });
  if (r) sigchld_started_ = true;
  return r;
}

Result<void> ChildReaper::adopt_orphans() {
  if (adopting_) return {};
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) return Error::sys("prctl PR_SET_CHILD_SUBREAPER");
  if (!sigchld_started_) {
    if (auto r = start_sigchld(); !r) return r;
  }
  adopting_ = true;
  return {};
}

std::size_t ChildReaper::reap_orphans() noexcept {
  std::vector<pid_t> unknown;
  if (DIR* tasks = ::opendir("/proc/self/task")) {
    while (dirent* t = ::readdir(tasks)) {
      if (t->d_name[0] == '.') continue;
      std::string path = std::string("/proc/self/task/") + t->d_name + "/children";
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      std::string text;
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
      ::close(fd);
      const char* p = text.c_str();
      for (char* end; *p;) {
        long pid = std::strtol(p, &end, 10);
        if (end == p) break;
        p = end;
        if (pid > 0 && children_.count(static_cast<pid_t>(pid)) == 0) unknown.push_back(static_cast<pid_t>(pid));
      }
    }
    ::closedir(tasks);
  }
  std::size_t reaped = 0;
  for (pid_t pid : unknown) {
    ExitStatus st;
    if (try_reap(pid, &st)) {
      ++reaped;
      UEXEC_LOG(kDebug, "reaped orphan {} ({})", pid, st.describe());
    }
  }
  return reaped;
}

void ChildReaper::unwatch(pid_t pid) noexcept { children_.erase(pid); }

void ChildReaper::on_pidfd(uv_poll_t* h, int /*status*/, int /*events*/) noexcept {
  auto* child = static_cast<Child*>(h->data);
  if (!child) return;
  ExitStatus st;
  // Readable pidfd means exited; an error status (rare) also warrants a look.
  if (child->elsewhere) {
    // Its reaper (the holder) is gone and init reaps it now: the status cannot be known.
    UEXEC_LOG(kWarn, "process {} ended while nothing could collect its exit status", child->pid);
    st.code = 255;
    child->owner->finish(child->pid, st);
  } else if (try_reap(child->pid, &st)) {
    child->owner->finish(child->pid, st);
  } else if (errno == ECHILD) {
    // Someone else in this process reaped it (a second reaper that adopts orphans, a library's
    // waitpid(-1)): the pidfd stays readable, so waiting on would spin. Its status is lost.
    UEXEC_LOG(kWarn, "child {} was reaped elsewhere in this process; its exit status is lost", child->pid);
    st.code = 255;
    child->owner->finish(child->pid, st);
  }
}

void ChildReaper::sweep() noexcept {
  std::vector<std::pair<pid_t, ExitStatus>> done;
  for (auto& [pid, child] : children_) {
    if (child->poll || child->elsewhere) continue;  // its own poll, or its reaper, reports it
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
