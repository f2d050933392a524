#include "cli/daemon_upgrade.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "cli/daemon_lock.h"
#include "rpc/client.h"

namespace uexec::cli {

using base::Errc;
using base::Error;
using base::Result;
using Clock = std::chrono::steady_clock;

namespace {

// Whether `pid` blocks `sig` (the holder watches its signals through a signalfd, blocked).
bool blocks(pid_t pid, int sig) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("SigBlk:", 0) != 0) continue;
    unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
    return (mask >> (sig - 1)) & 1;
  }
  return false;
}

// The holder's children that are daemons (`… serve …`, not zombies), not the session leaders it
// took in: one, or two while an upgrade is under way. (A child caught inside execve shows no
// command line for a moment: the caller does not take one missing scan for an answer.)
std::vector<pid_t> daemons_under(pid_t holder) {
  std::vector<pid_t> out;
  std::ifstream children(fmt::format("/proc/{}/task/{}/children", holder, holder));
  for (pid_t pid; children >> pid;) {
    std::ifstream cmd(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
    std::string argv0, argv1;
    std::getline(cmd, argv0, '\0');
    std::getline(cmd, argv1, '\0');
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string text;
    std::getline(stat, text);
    auto paren = text.rfind(')');
    const bool zombie = paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
    if (argv1 == "serve" && !zombie) out.push_back(pid);
  }
  return out;
}

}  // namespace

Result<UpgradeDone> upgrade_daemon(const std::string& socket_path, std::chrono::milliseconds wait) {
  UpgradeDone done;
  done.holder = DaemonLock::holder(socket_path);
  if (done.holder == 0) return Error{Errc::kNotFound, 0, "no daemon runs on unix:" + socket_path};
  if (done.holder < 0) return Error{Errc::kUnsupported, 0, "the daemon on unix:" + socket_path + " runs in another pid namespace"};
  if (!blocks(done.holder, SIGUSR2))
    return Error{Errc::kUnsupported, 0,
                 fmt::format("the daemon (pid {}) cannot upgrade in place: it runs without a holder (--no-holder) or "
                             "is older than upgrades; `uexec stop && uexec serve` restarts it (its sessions end)",
                             done.holder)};
  if (auto ds = daemons_under(done.holder); !ds.empty()) done.before = ds.front();
  const auto t0 = Clock::now();
  const auto deadline = t0 + wait;
  if (::kill(done.holder, SIGUSR2) < 0) return Error::sys(fmt::format("signal the daemon's holder (pid {})", done.holder));
  // The holder starts the new binary; once it is ready the old daemon hands over and leaves.
  bool saw_next = false;
  std::optional<Clock::time_point> alone_since;  // the old daemon alone again, after a new one was seen
  while (Clock::now() < deadline) {
    auto ds = daemons_under(done.holder);
    const bool old_runs = std::find(ds.begin(), ds.end(), done.before) != ds.end();
    pid_t next = 0;
    for (pid_t d : ds)
      if (d != done.before) next = d;
    saw_next = saw_next || next != 0;
    if (!old_runs || next) alone_since.reset();
    else if (!alone_since) alone_since = Clock::now();
    const bool gave_up = alone_since && ((saw_next && Clock::now() - *alone_since > std::chrono::seconds(1)) ||
                                         Clock::now() - t0 > std::chrono::seconds(10));
    if (gave_up)
      return Error{Errc::kExecFailed, 0,
                   fmt::format("the binary on disk did not take over (its log, or the service's, says why); the daemon "
                               "(pid {}) goes on with every session", done.before)};
    if (!old_runs && next) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto c = rpc::Client::connect_unix(socket_path);
      if (c && c->call("process/list", nlohmann::json::object(), static_cast<int>(left.count()))) {
        done.after = next;
        done.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
        return done;
      }
    }
    if (DaemonLock::holder(socket_path) != done.holder) return Error::invalid("the daemon's holder exited during the upgrade");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Error{Errc::kLimit, 0,
               fmt::format("no upgraded daemon answered within {} s (the daemon's log says why; its sessions are held "
                           "by pid {})", wait.count() / 1000, done.holder)};
}

}  // namespace uexec::cli
