// session_helpers.h: shared steps for the integration suites: start a session on the
// scripted child or a shell, wait for text or the end, read everything retained.
#pragma once

#include <string>
#include <vector>

#include "helpers/loop_fixture.h"
#include "session/process_manager.h"

namespace uexec::test {

inline policy::ExecRequest request(std::vector<std::string> argv, bool tty = true) {
  policy::ExecRequest req;
  req.argv = std::move(argv);
  req.tty = tty;
  return req;
}

inline std::string all_output(const session::Session& s) {
  return s.output().read_from(0, s.output().total() + 1).text();
}

struct ManagerFixture : LoopFixture {
  std::unique_ptr<session::ProcessManager> pm;
  explicit ManagerFixture(base::Config cfg = {}) : pm(std::make_unique<session::ProcessManager>(loop, cfg)) {}
  ~ManagerFixture() { pm.reset(); }

  session::Session& start(const policy::ExecRequest& req) {
    auto id = pm->start(req);
    REQUIRE_MESSAGE(id.has_value(), (id ? "" : id.error().message()));
    return *pm->find(*id);
  }
  bool wait_finished(session::Session& s, std::chrono::milliseconds d = 20s) {
    return run_until([&] { return s.finished(); }, d);
  }
  bool wait_output(session::Session& s, const std::string& needle, std::chrono::milliseconds d = 20s) {
    return run_until([&] { return all_output(s).find(needle) != std::string::npos; }, d);
  }
};

}  // namespace uexec::test
