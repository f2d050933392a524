// sandbox_attempt.h: one way of running one request, turned into a SpawnSpec.
//
// Every spawn goes through SandboxAttempt::env_for: the policy decides the final argv, env,
// cwd and the async-signal-safe steps the child applies before execve. Everything is built
// here, in the parent, so the child only applies it. Today there are two kinds: kNone (run
// as asked) and kFake, a test-only kind that marks the session sandboxed and lets a test
// play the executor by adding records to its DenialLog. The sandbox issue adds the real
// backends behind the same call. `sandboxed()` tells the session whether the one denial
// check runs at the end.
#pragma once

#include <memory>

#include "base/result.h"
#include "policy/denial.h"
#include "policy/exec_request.h"
#include "pty/spawn.h"

namespace uexec::policy {

enum class SandboxKind { kNone, kFake };
const char* sandbox_kind_name(SandboxKind kind) noexcept;

class SandboxAttempt {
 public:
  static SandboxAttempt none() noexcept { return SandboxAttempt(SandboxKind::kNone, nullptr); }
  // Test-only: sandboxed in name, enforcing nothing; its executor records go to `log`.
  static SandboxAttempt fake(std::shared_ptr<DenialLog> log) noexcept {
    return SandboxAttempt(SandboxKind::kFake, std::move(log));
  }

  SandboxKind kind() const noexcept { return kind_; }
  bool sandboxed() const noexcept { return kind_ != SandboxKind::kNone; }
  // Where the executor leaves denial records (null when it reports none).
  const std::shared_ptr<DenialLog>& denial_log() const noexcept { return log_; }
  bool seccomp() const noexcept { return false; }
  bool mount_view() const noexcept { return false; }

  // The spawn plan for `req`: argv, exactly the env, cwd, child steps. Validates the request.
  [[nodiscard]] base::Result<pty::SpawnSpec> env_for(const ExecRequest& req) const;

 private:
  SandboxAttempt(SandboxKind kind, std::shared_ptr<DenialLog> log) noexcept
      : kind_(kind), log_(std::move(log)) {}
  SandboxKind kind_;
  std::shared_ptr<DenialLog> log_;
};

}  // namespace uexec::policy
