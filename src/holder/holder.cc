#include "holder/holder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/core.h>

#include "holder/handover_json.h"
#include "holder/holder_wire.h"
#include "session/seq_mirror.h"

namespace uexec::holder {

using base::Error;
using base::Result;
using base::UniqueFd;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr int kSignals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR2};
constexpr milliseconds kMaxBackoff{30000};
constexpr milliseconds kStableRun{2000};  // a daemon that ran this long was not a crash loop
constexpr milliseconds kEndGrace{2000};

void say(const std::string& line) {
  std::fprintf(stderr, "uexec serve (holder %d): %s\n", static_cast<int>(::getpid()), line.c_str());
}

// Kept small: a holder of 1000 sessions counts against the daemon's memory bound (M1). The
// facts and fd names stay as the text they came in; they are parsed only to be handed over.
struct Held {
  pid_t pid = -1;
  std::uint32_t slot = 0;
  std::string meta;      // JSON text
  std::string fd_names;  // JSON text: an array of names
  std::vector<UniqueFd> fds;
  std::optional<pty::ExitStatus> exit;
  UniqueFd stdin_pipe;  // an upgrade's: handed to the next daemon once, then let go
};

class Holder {
 public:
  Holder(const HolderOptions& options, UniqueFd table, sigset_t old_mask)
      : opts_(options), table_(std::move(table)), old_mask_(old_mask) {}

  int run(pid_t daemon, UniqueFd link) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kSignals) sigaddset(&set, s);
    sigfd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sigfd_ || ::prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
      say(fmt::format("cannot watch signals or become a subreaper ({}); holding nothing", std::strerror(errno)));
      // The daemon runs on as if unheld: wait for it and pass its status on.
      ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      int st = 0;
      while (::waitpid(daemon, &st, 0) < 0 && errno == EINTR) {
      }
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    daemon_ = daemon;
    link_ = std::move(link);
    started_ = Clock::now();
    hand_over();
    while (!done_) {
      pollfd p[3] = {{sigfd_.get(), POLLIN, 0}, {link_ ? link_.get() : -1, POLLIN, 0},
                     {next_link_ ? next_link_.get() : -1, POLLIN, 0}};
      int timeout = -1;
      if (restart_at_) {
        auto left = std::chrono::duration_cast<milliseconds>(*restart_at_ - Clock::now()).count();
        timeout = static_cast<int>(std::max<long long>(left, 0));
      }
      int n = ::poll(p, 3, timeout);
      if (n < 0 && errno != EINTR) break;
      // The link before the signals: a daemon that hands over for an upgrade sends "carried"
      // and exits at once, and its last words must be read before its exit is taken for a stop.
      if (n > 0 && p[1].revents && link_) on_link();
      if (n > 0 && p[0].revents) on_signal();
      if (n > 0 && p[2].revents && next_link_) on_next_link();
      if (restart_at_ && Clock::now() >= *restart_at_ && !done_) {
        restart_at_.reset();
        start_daemon();
      }
    }
    return exit_code_;
  }

 private:
  void on_signal() {
    signalfd_siginfo si{};
    while (::read(sigfd_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) {
        reap();
        continue;
      }
      if (sig == SIGUSR2) {
        upgrade();
        continue;
      }
      stopping_ = true;
      if (next_ > 0) ::kill(next_, SIGTERM);  // an upgrade under way is called off
      if (daemon_ > 0) {
        ::kill(daemon_, sig);  // the daemon ends its sessions; its exit ends us
      } else {
        say(fmt::format("stopping with no daemon running: ending {} held sessions", held_.size()));
        end_held();
        done_ = true;
        exit_code_ = 0;
      }
    }
  }

  void reap() {
    for (;;) {
      siginfo_t si{};
      if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0) return;
      pty::ExitStatus st = pty::exit_status_of(si);
      if (si.si_pid == daemon_ && link_) on_link();  // what it sent before it went (see run())
      if (si.si_pid == daemon_) {
        daemon_ended(st);
        continue;
      }
      if (si.si_pid == next_) {
        say(fmt::format("upgrade: {} (pid {}) exited before taking over ({}); the daemon (pid {}) goes on",
                        opts_.exe, next_, st.describe(), daemon_));
        next_ = -1;
        next_link_.reset();
        upgrade_asked_ = false;  // a "carried" still coming starts one more, as after a crash
        continue;
      }
      if (si.si_pid == retiring_) {
        retiring_ = -1;
        say(fmt::format("the daemon before the upgrade exited ({})", st.describe()));
        continue;
      }
      for (auto& [key, h] : held_) {
        if (h.pid != si.si_pid || h.exit) continue;
        h.exit = st;  // a taken-over leader, now our child: its daemon learns of it from us
        if (link_) (void)send(link_.get(), {{"op", "exited"}, {"pid", h.pid}, {"exit", exit_json(st)}});
      }
    }
  }

  void on_link() {
    for (;;) {
      auto m = receive(link_.get(), /*wait=*/false);
      if (!m) {
        if (m.error().code == base::Errc::kLimit) return;
        if (m.error().code == base::Errc::kInvalidArgument) {
          say(fmt::format("ignored a message: {}", m.error().message()));
          continue;
        }
        link_.reset();  // the daemon is going; its SIGCHLD says how
        return;
      }
      const json& b = m->body;
      std::string op = b["op"].get<std::string>();
      std::string key = b.value("key", std::string());
      if (op == "hold" && !key.empty()) {
        Held h;
        h.pid = b.value("pid", -1);
        h.slot = b.value("slot", std::uint32_t{0});
        h.meta = b.value("meta", json::object()).dump();
        h.fd_names = (b.contains("fds") && b["fds"].is_array() ? b["fds"] : json::array()).dump();
        h.fds = std::move(m->fds);
        h.fds.shrink_to_fit();
        h.meta.shrink_to_fit();
        if (auto it = held_.find(key); it != held_.end() && it->second.pid == h.pid) h.exit = it->second.exit;
        if (h.pid > 0) held_[key] = std::move(h);
      } else if (op == "meta" && held_.count(key)) {
        held_[key].meta = b.value("meta", json::object()).dump();
      } else if (op == "release") {
        held_.erase(key);
      } else if (op == "stdin" && held_.count(key)) {
        held_[key].stdin_pipe = m->take("stdin");
      } else if (op == "carried") {
        // The daemon handed over for an upgrade and is leaving: the next one starts now, from
        // the binary on disk, with what it carried (it may still be exiting meanwhile).
        carry_ = m->take("carry");
        for (const char* name : kListeners) listeners_[name] = m->take(name);
        say(fmt::format("upgrade: the daemon (pid {}) handed over {} sessions to pid {}", daemon_, held_.size(),
                        next_));
        retiring_ = daemon_;
        daemon_ = -1;
        link_.reset();
        restart_at_.reset();
        upgrade_asked_ = false;
        if (next_ > 0) {
          daemon_ = std::exchange(next_, -1);
          link_ = std::move(next_link_);
          started_ = Clock::now();
          finish_hand_over(link_.get(), early_);
          early_.clear();
        } else {
          start_daemon();  // it died meanwhile: one more try, as after a crash
        }
        return;
      }
    }
  }

  // SIGUSR2 (`uexec serve --upgrade`): the binary on disk is started first; once it says it
  // is ready (standby: loaded, configured, waiting for its hand-over), the daemon is asked to
  // hand over everything and leave, and its "carried" goes to the one waiting. A binary that
  // cannot start never costs the running daemon anything. With no daemon running, the next
  // start is the upgrade.
  void upgrade() {
    if (daemon_ <= 0 || !link_) {
      say("upgrade: no daemon is running; the next one starts from the binary on disk");
      if (restart_at_) restart_at_ = Clock::now();
      return;
    }
    if (next_ > 0 || upgrade_asked_) return;  // one at a time
    auto spawned = spawn_daemon();
    if (!spawned) return;
    next_ = spawned->first;
    next_link_ = std::move(spawned->second);
    say(fmt::format("upgrade: started {} (pid {}) to take over from the daemon (pid {})", opts_.exe, next_, daemon_));
  }

  // The daemon waiting to take over says it is ready: the running one is asked to hand over.
  void on_next_link() {
    for (;;) {
      auto m = receive(next_link_.get(), /*wait=*/false);
      if (!m) {
        if (m.error().code == base::Errc::kLimit) return;
        if (m.error().code == base::Errc::kInvalidArgument) continue;
        next_link_.reset();  // it is going; its SIGCHLD says how
        return;
      }
      if (m->body.value("op", std::string()) != "standby" || upgrade_asked_ || !link_) continue;
      early_.clear();
      if (!send_held(next_link_.get(), &early_)) continue;  // it is going; its SIGCHLD says how
      upgrade_asked_ = true;
      if (auto r = send(link_.get(), {{"op", "upgrade"}}); !r)
        say(fmt::format("upgrade: cannot ask the daemon: {}", r.error().message()));
    }
  }

  void daemon_ended(const pty::ExitStatus& st) {
    daemon_ = -1;
    link_.reset();
    upgrade_asked_ = false;
    const bool crashed = st.signal != 0;
    if (stopping_ || (!crashed && (st.code == 0 || held_.empty()))) {
      if (!held_.empty()) {
        say(fmt::format("the daemon exited ({}) leaving {} sessions: ending them", st.describe(), held_.size()));
        end_held();
      }
      done_ = true;
      exit_code_ = st.shell_code();
      return;
    }
    auto ran = Clock::now() - started_;
    backoff_ = ran >= kStableRun ? milliseconds{0} : std::min(kMaxBackoff, std::max(milliseconds{100}, backoff_ * 2));
    say(fmt::format("the daemon ended ({}) holding {} sessions; starting {} again{}", st.describe(), held_.size(),
        opts_.exe, backoff_.count() ? " after a pause" : ""));
    restart_at_ = Clock::now() + backoff_;
  }

  void start_daemon() {
    auto spawned = spawn_daemon();
    if (!spawned) {
      restart_at_ = Clock::now() + milliseconds{1000};
      return;
    }
    daemon_ = spawned->first;
    link_ = std::move(spawned->second);
    started_ = Clock::now();
    hand_over();
  }

  // Runs the binary at its path with the same flags and a link; nullopt (said why) if it cannot.
  std::optional<std::pair<pid_t, UniqueFd>> spawn_daemon() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
      say(fmt::format("socketpair: {}", std::strerror(errno)));
      return std::nullopt;
    }
    UniqueFd mine(sv[0]), theirs(sv[1]);
    pid_t pid = ::fork();
    if (pid < 0) {
      say(fmt::format("fork: {}", std::strerror(errno)));
      return std::nullopt;
    }
    if (pid == 0) {
      ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      int fd = theirs.release();
      ::fcntl(fd, F_SETFD, 0);
      ::setenv(kLinkEnv, std::to_string(fd).c_str(), 1);
      std::vector<char*> argv;
      for (const auto& a : opts_.argv) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(opts_.exe.c_str(), argv.data());
      std::fprintf(stderr, "uexec serve (holder): exec %s: %s\n", opts_.exe.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    return std::make_pair(pid, std::move(mine));
  }

  // hello, then every held session, then adopted. Blocking: the daemon reads them before it
  // runs its loop. A failure means it died; its SIGCHLD comes next.
  void hand_over() {
    std::set<std::string> sent;
    if (send_held(link_.get(), &sent)) finish_hand_over(link_.get(), sent);
  }

  // The first part of a hand-over: hello and every session held now (`sent` names them). An
  // upgrade sends it to the daemon waiting to take over while the running one still reads, so
  // that parsing 1000 sessions is not part of the pause.
  bool send_held(int link, std::set<std::string>* sent) {
    const int table = table_.get();
    if (!send(link, {{"op", "hello"}, {"wire", kWireVersion}, {"slots", kSlots}, {"holder", ::getpid()},
                     {"fds", {"table"}}},
              std::span<const int>(&table, 1)))
      return false;
    for (auto& [key, h] : held_) {
      if (!send_adopt(link, key, h)) return false;
      sent->insert(key);
    }
    return true;
  }

  // The rest: what changed since send_held (sessions held or let go since, a pipe's stdin and
  // an end that came meanwhile), then adopted with what an upgrade carried (the carry file, the
  // listening sockets). Those go to this daemon only: if it dies before taking over, the next one
  // takes over as after a crash.
  void finish_hand_over(int link, const std::set<std::string>& sent) {
    bool ok = true;
    for (const auto& key : sent)
      if (ok && !held_.count(key)) ok = static_cast<bool>(send(link, {{"op", "release"}, {"key", key}}));
    for (auto& [key, h] : held_) {
      if (!ok) break;
      if (!sent.count(key)) {
        ok = send_adopt(link, key, h);
        continue;
      }
      if (h.stdin_pipe) {
        const int fd = h.stdin_pipe.get();
        ok = static_cast<bool>(send(link, {{"op", "stdin"}, {"key", key}, {"fds", {"stdin"}}}, std::span<const int>(&fd, 1)));
      }
      if (ok && h.exit) ok = static_cast<bool>(send(link, {{"op", "exit"}, {"key", key}, {"exit", exit_json(*h.exit)}}));
    }
    std::vector<int> fds;
    json names = json::array();
    if (carry_) fds.push_back(carry_.get()), names.push_back("carry");
    for (auto& [name, fd] : listeners_)
      if (fd) fds.push_back(fd.get()), names.push_back(name);
    if (ok) (void)send(link, {{"op", "adopted"}, {"fds", names}}, fds);
    carry_.reset();
    listeners_.clear();
    for (auto& [key, h] : held_) h.stdin_pipe.reset();
  }

  bool send_adopt(int link, const std::string& key, const Held& h) {
    // The facts and names are passed on as the text they came in (1000 sessions: no parse).
    std::string fd_names = h.fd_names;
    std::vector<int> fds;
    for (const auto& f : h.fds) fds.push_back(f.get());
    if (h.stdin_pipe) {
      fd_names.insert(fd_names.size() - 1, fd_names.size() > 2 ? ",\"stdin\"" : "\"stdin\"");
      fds.push_back(h.stdin_pipe.get());
    }
    std::string text = fmt::format(R"({{"op":"adopt","key":{},"pid":{},"slot":{},"meta":{},"fds":{}{}}})",
                                   encode(key), h.pid, h.slot, h.meta, fd_names,
                                   h.exit ? ",\"exit\":" + encode(exit_json(*h.exit)) : std::string());
    return static_cast<bool>(send_text(link, text, fds));
  }

  // No daemon will take them: as a stop would, SIGHUP/SIGTERM, then SIGKILL after a grace.
  void end_held() {
    std::vector<pid_t> alive;
    for (auto& [key, h] : held_) {
      if (h.exit) continue;
      ::kill(-h.pid, SIGHUP);
      ::kill(-h.pid, SIGTERM);
      ::kill(-h.pid, SIGCONT);
      alive.push_back(h.pid);
    }
    auto deadline = Clock::now() + kEndGrace;
    while (!alive.empty() && Clock::now() < deadline) {
      std::erase_if(alive, [](pid_t p) { return ::waitpid(p, nullptr, WNOHANG) != 0; });
      if (!alive.empty()) ::usleep(20000);
    }
    for (pid_t p : alive) {
      ::kill(-p, SIGKILL);
      ::kill(p, SIGKILL);
      while (::waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    held_.clear();
    for (;;) {  // orphans of theirs
      siginfo_t si{};
      if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0) break;
    }
  }

  HolderOptions opts_;
  UniqueFd table_;
  sigset_t old_mask_;
  UniqueFd sigfd_;
  UniqueFd link_;
  pid_t daemon_ = -1;
  pid_t retiring_ = -1;  // the daemon an upgrade replaced, until it is reaped
  pid_t next_ = -1;      // the daemon an upgrade started, until it takes over
  UniqueFd next_link_;
  std::set<std::string> early_;  // the sessions it was sent before the running daemon handed over
  bool upgrade_asked_ = false;
  UniqueFd carry_;  // an upgrade's, for the next daemon, with its listening sockets by name
  std::map<std::string, UniqueFd> listeners_;
  std::map<std::string, Held> held_;
  Clock::time_point started_{};
  std::optional<Clock::time_point> restart_at_;
  milliseconds backoff_{0};
  bool stopping_ = false;
  bool done_ = false;
  int exit_code_ = 0;
};

}  // namespace

Result<Forked> fork_daemon(const HolderOptions& options) {
  UniqueFd table(::memfd_create("uexec-holder-counters", MFD_CLOEXEC));
  if (!table) return Error::sys("memfd_create holder table");
  if (::ftruncate(table.get(), static_cast<off_t>(kSlots * sizeof(session::SeqMirror))) < 0)
    return Error::sys("ftruncate holder table");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return Error::sys("socketpair holder link");
  UniqueFd mine(sv[0]), theirs(sv[1]);
  // Blocked before the fork: a stop sent at once is not lost to either process.
  sigset_t set, old;
  sigemptyset(&set);
  for (int s : kSignals) sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, &old);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    return Error::sys("fork daemon", e);
  }
  Forked out;
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    out.is_daemon = true;
    out.link = std::move(theirs);
    return out;
  }
  theirs.reset();
  Holder holder(options, std::move(table), old);
  out.exit_code = holder.run(pid, std::move(mine));
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  return out;
}

}  // namespace uexec::holder
