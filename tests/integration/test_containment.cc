// Containment (docs/agent.md §5.2): nothing a session started outlives it, whichever
// way it left the process tree, in the cgroup tier (when this machine can make cgroups) and
// in the tracked tier.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>

#include "integration/session_helpers.h"
#include "session/containment.h"

using namespace uexec;
using namespace uexec::test;

namespace {

// The modes this machine can run: tracked always, cgroup when a cgroup can be made.
std::vector<base::ContainmentMode> modes() {
  std::vector<base::ContainmentMode> out{base::ContainmentMode::kTracked};
  session::Containment probe(base::ContainmentMode::kCgroup);
  if (probe.cgroups()) out.push_back(base::ContainmentMode::kCgroup);
  else MESSAGE("cgroup tier not checked: " << probe.why_not_cgroups());
  return out;
}

base::Config config(base::ContainmentMode mode) {
  base::Config cfg;
  cfg.containment = mode;
  cfg.close_drain = std::chrono::milliseconds{300};
  return cfg;
}

// A shell script that starts every kind of escapee, waits until all four exist, and exits.
// Unique arguments let the test find them (and nothing else) with pgrep. SIGHUP is ignored:
// on a tty the kernel hangs up the foreground group when the leader exits, which would end
// the ones left in it before containment is needed.
policy::ExecRequest escapees(const std::string& tag, bool tty) {
  std::string n = tag;
  auto req = request({"/bin/bash", "-c",
                      "trap '' HUP; setsid -f sleep " + n + "1; (sleep " + n + "2 &); nohup sleep " + n +
                          "3 >/dev/null 2>&1 & (setsid bash -c 'sleep " + n + "4; true' &); "
                          "for i in $(seq 200); do [ \"$(pgrep -c -f '^sleep " + n +
                          "[1-4]$')\" = 4 ] && break; sleep 0.05; done; echo started"},
                     tty);
  req.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "UEXEC_SESSION_ID=" + tag};
  return req;
}

// `cmd` exactly, after its exec: a shell forked to run it carries the words in its own
// command line for a moment ("bash -c 'setsid -f sleep 9391; …'"), and matching that made
// a test see its escapee before it existed.
bool has_command(const std::vector<session::LingeringProcess>& l, const std::string& cmd, bool killed) {
  return std::any_of(l.begin(), l.end(), [&](const auto& p) { return p.command == cmd && p.killed == killed; });
}

bool all_gone(LoopFixture& f, const std::vector<session::LingeringProcess>& l) {
  // Gone means reaped too: a zombie still answers kill(pid, 0).
  return f.run_until([&] {
    return std::all_of(l.begin(), l.end(), [](const auto& p) { return ::kill(p.pid, 0) == -1 && errno == ESRCH; });
  }, std::chrono::milliseconds{10000});
}

}  // namespace

TEST_CASE("setsid, double-fork and nohup escapees are killed, reaped and reported when the session ends") {
  int round = 0;
  for (auto mode : modes()) {
    for (bool tty : {false, true}) {
      CAPTURE(session::tier_name(mode == base::ContainmentMode::kCgroup ? session::ContainmentTier::kCgroup
                                                                         : session::ContainmentTier::kTracked));
      CAPTURE(tty);
      ManagerFixture f(config(mode));
      std::string tag = std::to_string(917 + round++);
      auto& s = f.start(escapees(tag, tty));
      CHECK(s.containment_tier() == (mode == base::ContainmentMode::kCgroup ? session::ContainmentTier::kCgroup
                                                                             : session::ContainmentTier::kTracked));
      REQUIRE(f.wait_finished(s));
      CHECK(all_output(s).find("started") != std::string::npos);
      CHECK(s.verdict()->status.code == 0);
      const auto& l = s.lingering();
      for (int i = 1; i <= 4; ++i) CHECK_MESSAGE(has_command(l, "sleep " + tag + std::to_string(i), true), i);
      CHECK(all_gone(f, l));
      CHECK(count_zombie_children() == 0);
    }
  }
}

TEST_CASE("a setsid'd grandchild and a double-forked daemon are gone after their session is killed") {
  int round = 0;
  for (auto mode : modes()) {
    ManagerFixture f(config(mode));
    std::string tag = std::to_string(937 + round++);
    auto req = escapees(tag, false);
    req.argv.back() += "; exec sleep 100";  // the leader keeps running until it is killed
    auto& s = f.start(req);
    REQUIRE(f.wait_output(s, "started"));
    s.terminate(std::chrono::milliseconds{200});
    REQUIRE(f.wait_finished(s));
    CHECK(s.verdict()->status.signal != 0);
    // The two in the leader's process group died with it; the escapees died by containment.
    const auto& l = s.lingering();
    CHECK(has_command(l, "sleep " + tag + "1", true));
    CHECK(has_command(l, "sleep " + tag + "4", true));
    CHECK(all_gone(f, l));
    CHECK(f.run_until([&] { return std::system(("pgrep -f '^sleep " + tag + "[1-4]$' >/dev/null").c_str()) != 0; },
                      std::chrono::milliseconds{10000}));
    CHECK(count_zombie_children() == 0);
  }
}

TEST_CASE("a background job holding the PTY is listed while it runs, then killed when the session closes") {
  for (auto mode : modes()) {
    ManagerFixture f(config(mode));
    // A plain `sleep &` would die of the leader's hang-up; this one ignores it, as daemons do.
    auto req = request({"/bin/bash", "-c", "trap '' HUP; sleep 9271 & echo hi"}, true);
    req.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
    auto& s = f.start(req);
    REQUIRE(f.run_until([&] { return s.exited(); }));
    CHECK_FALSE(s.finished());  // the close drain runs: the job still holds the slave
    auto live = s.live_descendants();
    std::string seen;
    for (const auto& p : live) seen += p.command + "; ";
    // The job, whatever it shows: caught between bash's fork and sleep's exec it is still bash.
    CHECK_MESSAGE((live.size() == 1 && !live[0].killed), session::tier_name(s.containment_tier()) << ": " << seen);
    REQUIRE(f.wait_finished(s));
    CHECK(all_output(s).find("hi") != std::string::npos);
    CHECK((s.lingering().size() == 1 && s.lingering()[0].killed && s.lingering()[0].pid == live[0].pid));
    CHECK(all_gone(f, s.lingering()));
  }
}

TEST_CASE("a session that ends cleanly reports no lingering process") {
  for (auto mode : modes()) {
    ManagerFixture f(config(mode));
    auto& s = f.start(request({"/bin/sh", "-c", "echo done"}, false));
    REQUIRE(f.wait_finished(s));
    CHECK(s.lingering().empty());
  }
}

TEST_CASE("destroying the manager kills the escapees of sessions still running") {
  for (auto mode : modes()) {
    std::vector<session::LingeringProcess> seen;
    {
      ManagerFixture f(config(mode));
      auto req = request({"/bin/bash", "-c", "setsid -f sleep 9391; exec sleep 100"}, false);
      req.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "UEXEC_SESSION_ID=mgr"};
      auto& s = f.start(req);
      bool found = f.run_until([&] {
        seen = s.live_descendants();
        return has_command(seen, "sleep 9391", false);
      });
      if (!found) {
        MESSAGE("tier " << std::string(session::tier_name(s.containment_tier())) << ", self " << ::getpid() << ", seen " << seen.size());
        std::system("ps -eo pid,ppid,sid,stat,args | grep -E '[9]391|[s]leep 100' >&2; "
                    "for p in $(pgrep -f 'sleep 9391'); do tr '\\0' ' ' < /proc/$p/environ >&2; echo >&2; "
                    "cat /proc/$p/stat >&2; done");
      }
      REQUIRE(found);
    }
    for (const auto& p : seen) CHECK_MESSAGE((::kill(p.pid, 0) == -1 && errno == ESRCH), p.command);
    CHECK(count_zombie_children() == 0);
  }
}

TEST_CASE("containment off: the manager leaves descendants alone") {
  ManagerFixture f(config(base::ContainmentMode::kOff));
  auto req = request({"/bin/bash", "-c", "setsid -f sleep 9491; echo started"}, false);
  req.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  auto& s = f.start(req);
  REQUIRE(f.wait_finished(s));
  CHECK(s.containment_tier() == session::ContainmentTier::kNone);
  CHECK(s.lingering().empty());
  // Clean up what we deliberately let go.
  f.run_until([] { return std::system("pkill -x -f 'sleep 9491'") == 0; }, std::chrono::milliseconds{3000});
}
