#include "policy/sandbox_attempt.h"

#include <unistd.h>

extern char** environ;

namespace uexec::policy {

const char* sandbox_kind_name(SandboxKind kind) noexcept {
  switch (kind) {
    case SandboxKind::kNone: return "none";
    case SandboxKind::kFake: return "fake";
  }
  return "?";
}

base::Result<pty::SpawnSpec> SandboxAttempt::env_for(const ExecRequest& req) const {
  if (req.argv.empty() || req.argv[0].empty()) return base::Error::invalid("argv must name a program");
  if (req.tty && (req.size.rows == 0 || req.size.cols == 0))
    return base::Error::invalid("size: rows and cols must be >= 1");
  pty::SpawnSpec spec;
  spec.argv = req.argv;
  if (req.arg0) {
    spec.program = req.argv[0];
    spec.argv[0] = *req.arg0;
  }
  spec.cwd = req.cwd;
  if (req.env) {
    spec.env = *req.env;
  } else {
    for (char** e = environ; e && *e; ++e) spec.env.emplace_back(*e);
  }
  if (sandboxed()) spec.env.push_back(std::string("UEXEC_SANDBOX=") + sandbox_kind_name(kind_));
  return spec;
}

}  // namespace uexec::policy
