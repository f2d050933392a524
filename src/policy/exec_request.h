// exec_request.h: what a front door asks the manager to run. A plain aggregate.
//
// It lives in policy (not session) because SandboxAttempt::env_for turns it into a
// SpawnSpec, and policy sits below session. Front doors fill it; nothing here is JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/config.h"

namespace uexec::policy {

struct ExecRequest {
  std::vector<std::string> argv;                 // non-empty
  std::optional<std::vector<std::string>> env;   // "NAME=value"; nullopt: the manager's own
  std::string cwd;                               // empty: the manager's cwd
  std::string sandbox_policy_cwd;                // what a sandbox's :cwd means; empty: `cwd`
  bool tty = false;                              // a PTY; otherwise pipes
  base::PtySize size{};                          // tty only
  bool stdin_pipe = false;                       // pipes only: a writable stdin
  std::string id;                                // empty: the manager picks one
  std::optional<std::string> arg0;               // the argv[0] the program sees, if not argv[0]
  base::SessionLimits limits;                    // over Config::limits
};

}  // namespace uexec::policy
