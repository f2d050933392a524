// Per-session limits (base::SessionLimits): timeouts and the output rate in the Session,
// memory, pids and cpu through cgroup controllers (containment.h). Each kernel-side case
// runs where this machine has the controller, and says why when it does not.
#include <doctest/doctest.h>
#include <dirent.h>
#include <signal.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "integration/session_helpers.h"
#include "policy/sandbox_attempt.h"
#include "session/containment.h"

using namespace uexec;
using namespace uexec::test;
using namespace std::chrono_literals;

namespace {

base::Config config() {
  base::Config cfg;
  cfg.close_drain = 300ms;
  cfg.terminate_grace = 500ms;
  return cfg;
}

// Starts `req`, or says why this machine cannot enforce its limits (nullptr).
session::Session* start_limited(ManagerFixture& f, const policy::ExecRequest& req,
                                const policy::SandboxAttempt& attempt = policy::SandboxAttempt::none()) {
  auto id = f.pm->start(req, attempt);
  if (!id && id.error().code == base::Errc::kUnsupported) {
    MESSAGE("not checked here: " << id.error().message());
    return nullptr;
  }
  REQUIRE_MESSAGE(id.has_value(), (id ? "" : id.error().message()));
  return f.pm->find(*id);
}

// Our uexec-<pid>-<n> directories in the v1 hierarchies and the v2 subtree.
int our_cgroup_dirs() {
  int n = 0;
  std::string prefix = "uexec-" + std::to_string(::getpid()) + "-";
  for (const char* root : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu"}) {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory() && it->path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("a lifetime timeout terminates the session and says so") {
  ManagerFixture f(config());
  auto req = request({"/bin/sleep", "30"}, false);
  req.limits.wall_timeout = 300ms;
  auto& s = f.start(req);
  REQUIRE(f.wait_finished(s));
  REQUIRE(s.ended_by());
  CHECK(s.ended_by()->limit == "timeout");
  CHECK(s.ended_by()->message == "a lifetime timeout of 300 ms");
  CHECK(s.verdict()->status.signal == SIGTERM);
}

TEST_CASE("an idle timeout counts from the last output and from input") {
  ManagerFixture f(config());
  // Output every 100 ms for a while, then silence: only the silence may end it.
  auto req = request({"/bin/bash", "-c", "for i in $(seq 8); do echo tick$i; sleep 0.1; done; read line; echo got-$line; sleep 30"},
                     true);
  req.limits.idle_timeout = 600ms;
  auto& s = f.start(req);
  REQUIRE(f.wait_output(s, "tick8"));
  CHECK_FALSE(s.exited());
  REQUIRE(s.write("hello\n"));  // input is activity too
  REQUIRE(f.wait_output(s, "got-hello"));
  REQUIRE(f.wait_finished(s));
  REQUIRE(s.ended_by());
  CHECK(s.ended_by()->limit == "idleTimeout");
  CHECK(s.ended_by()->message == "an idle timeout of 600 ms");
}

TEST_CASE("without a limit nothing ends the session early, and a normal exit names no limit") {
  ManagerFixture f(config());
  auto req = request({"/bin/sh", "-c", "sleep 0.3; echo done"}, false);
  req.limits.wall_timeout = 20000ms;
  req.limits.idle_timeout = 20000ms;
  auto& s = f.start(req);
  REQUIRE(f.wait_finished(s));
  CHECK_FALSE(s.ended_by());
  CHECK(s.verdict()->status.code == 0);
  CHECK(all_output(s).find("done") != std::string::npos);
}

TEST_CASE("an output rate slows the reader without losing a byte") {
  ManagerFixture f(config());
  auto req = request({"/bin/sh", "-c", "head -c 2500000 /dev/zero | tr '\\0' x; echo; echo end"}, false);
  req.limits.output_bytes_per_sec = 1000000;
  req.limits.retain_bytes = 4 << 20;
  auto& s = f.start(req);
  REQUIRE(f.wait_finished(s, 60s));
  std::string out = all_output(s);
  CHECK(std::count(out.begin(), out.end(), 'x') == 2500000);
  CHECK(out.find("end") != std::string::npos);
  CHECK(s.output().evicted() == 0);
  // 2.5 MB at 1 MB/s after a 1 MB bucket: reading was held back for a while.
  CHECK(s.output_throttled() > 0ms);
}

TEST_CASE("retained bytes are per session") {
  ManagerFixture f(config());
  auto req = request({"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' y"}, false);
  req.limits.retain_bytes = 4096;
  auto& s = f.start(req);
  REQUIRE(f.wait_finished(s));
  CHECK(s.output().total() == 100000);
  CHECK(s.output().evicted() == 100000 - 4096);
}

TEST_CASE("pids.max stops a fork bomb; terminate still ends it and nothing is left") {
  const int before = our_cgroup_dirs();
  {
    ManagerFixture f(config());
    for (bool tty : {true, false}) {
      CAPTURE(tty);
      auto req = request({"/bin/bash", "-c", "b() { b | b & }; b; sleep 0.5; echo bombmark; sleep 30"}, tty);
      req.limits.pids_max = 24;
      auto* s = start_limited(f, req);
      if (!s) return;
      REQUIRE(f.run_until([&] { return s->limit_events().pids_max_hits > 0; }, 20s));
      s->terminate();
      REQUIRE(f.wait_finished(*s, 30s));
      CHECK(s->limit_events().pids_max_hits > 0);  // kept after the cgroup went
      for (const auto& l : s->lingering()) CHECK_MESSAGE(l.killed, l.command);
      // Nothing of it is left: no process runs the bomb's script (the brackets keep the
      // shell running pgrep from matching itself).
      CHECK(f.run_until([&] { return std::system("pgrep -f 'bomb[m]ark' >/dev/null") == 256; }, 10s));
    }
  }
  CHECK(our_cgroup_dirs() == before);  // the manager removed its directories
}

TEST_CASE("memory.max: the OOM kill is the session's reported end") {
  ManagerFixture f(config());
  auto req = request({"/usr/bin/python3", "-c", "x = bytearray(512 << 20); print('allocated')"}, false);
  req.limits.memory_max_bytes = 64 << 20;
  auto* s = start_limited(f, req);
  if (!s) return;
  REQUIRE(f.wait_finished(*s, 30s));
  CHECK(all_output(*s).find("allocated") == std::string::npos);
  CHECK(s->verdict()->status.signal == SIGKILL);
  REQUIRE(s->ended_by());
  CHECK(s->ended_by()->limit == "memoryMax");
  CHECK(s->limit_events().oom_kills >= 1);
}

TEST_CASE("cpu.max holds a busy loop back") {
  ManagerFixture f(config());
  auto req = request({"/usr/bin/timeout", "1", "/bin/sh", "-c", "while :; do :; done"}, false);
  req.limits.cpu_max = 0.1;
  auto* s = start_limited(f, req);
  if (!s) return;
  REQUIRE(f.wait_finished(*s, 30s));
  CHECK(s->limit_events().throttled_us > 0);
}

TEST_CASE("a sandboxed session's namespace is inside its pids limit") {
  auto attempt = policy::SandboxAttempt::select(policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite),
                                                policy::Backend::kNamespaces);
  if (!attempt) {
    MESSAGE("not checked here: " << attempt.error().message());
    return;
  }
  ManagerFixture f(config());
  auto req = request({"/bin/bash", "-c", "for i in $(seq 40); do sleep 5 & done; wait"}, false);
  req.limits.pids_max = 10;
  auto* s = start_limited(f, req, *attempt);
  if (!s) return;
  REQUIRE(f.run_until([&] { return s->limit_events().pids_max_hits > 0; }, 20s));
  s->terminate();
  REQUIRE(f.wait_finished(*s, 30s));
}

TEST_CASE("kernel limits without containment are refused, not ignored") {
  auto cfg = config();
  cfg.containment = base::ContainmentMode::kOff;
  ManagerFixture f(cfg);
  auto req = request({"/bin/true"}, false);
  req.limits.pids_max = 10;
  auto id = f.pm->start(req);
  REQUIRE_FALSE(id);
  CHECK(id.error().code == base::Errc::kUnsupported);
  CHECK(id.error().message().find("containment") != std::string::npos);
  // The rest need no cgroup and still apply.
  req.limits = {};
  req.limits.wall_timeout = 10000ms;
  CHECK(f.pm->start(req));
}

TEST_CASE("Config::limits apply to every session; a request's own override them") {
  auto cfg = config();
  cfg.limits.wall_timeout = 200ms;
  ManagerFixture f(cfg);
  auto& a = f.start(request({"/bin/sleep", "30"}, false));
  auto req = request({"/bin/sleep", "30"}, false);
  req.limits.wall_timeout = 400ms;
  auto& b = f.start(req);
  REQUIRE(f.wait_finished(a));
  REQUIRE(f.wait_finished(b));
  CHECK(a.ended_by()->message == "a lifetime timeout of 200 ms");
  CHECK(b.ended_by()->message == "a lifetime timeout of 400 ms");
}
