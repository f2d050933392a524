// world.h: the loop, process manager and agent service behind fuzz_rpc and fuzz_agent_args.
//
// Built once per fuzzing process, on the first input, right after the no-spawn jail
// (fuzz_common.h) is in place, and never destroyed (reachable from a static, so
// LeakSanitizer does not count it). Each input builds its own front door (ExecServer,
// McpServer, AgentTools) on top and destroys it before returning; settle() then runs a few
// non-blocking loop turns so that closed handles are freed in their close callbacks.
//
// Configuration that keeps an input from reaching a real child: the jail refuses every
// spawn (a start fails with "Operation not permitted"), ExecServer gets max_processes = 0
// (process/start stops at "process limit reached", after all its params are decoded),
// containment is off when this uexec has it (no cgroup per manager), ids are
// deterministic, and the agent's default cwd is a private empty directory.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "agent/agent_service.h"
#include "base/config.h"
#include "fuzz/fuzz_common.h"
#include "loop/loop.h"
#include "session/process_manager.h"

namespace uexec::fuzz {

// Containment (session/containment.h) arrived after these targets were written: switch it
// off when base::Config has it, compile either way.
template <class C>
void containment_off(C& c) {
  if constexpr (requires { c.containment = decltype(c.containment)::kOff; }) c.containment = decltype(c.containment)::kOff;
}

struct World {
  static base::Config config() {
    base::Config c;
    containment_off(c);
    c.agent.deterministic_ids = true;
    return c;
  }
  static std::string make_cwd() {
    const char* tmp = std::getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/uexec-fuzz-cwd-XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) std::abort();
    return buf.data();
  }

  World()
      : cwd(make_cwd()),
        env({"PATH=/usr/bin:/bin", "HOME=" + cwd, "SHELL=/bin/sh", "LANG=C.UTF-8", "API_TOKEN=x"}),
        pm(loop, config()),
        exec(pm, env, cwd),
        devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC)) {}

  // Non-blocking turns: fires due timers, runs close callbacks.
  void settle(int turns = 3) {
    for (int i = 0; i < turns; ++i) loop.run_once(false);
  }

  std::string cwd;
  std::vector<std::string> env;
  loop::Loop loop;
  session::ProcessManager pm;
  agent::AgentService exec;
  int devnull;
};

// The one World of this process (jail first).
inline World& world() {
  static World* w = [] {
    NoSpawnJail::install();
    quiet_logs();
    auto* made = new World();
    static std::string dir = made->cwd;
    std::atexit([] { ::rmdir(dir.c_str()); });
    return made;
  }();
  return *w;
}

}  // namespace uexec::fuzz
