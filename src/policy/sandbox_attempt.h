// sandbox_attempt.h: one way of running one request, turned into a SpawnSpec.
//
// Every spawn goes through SandboxAttempt::env_for: the policy decides the final argv, env,
// cwd and the async-signal-safe steps the child applies before execve. Everything is built
// here, in the parent, so the child only applies it. This foundation has one kind, kNone
// (run as asked); the sandbox issue adds namespaces, Landlock, seccomp, bwrap and seatbelt
// behind the same call, and `sandboxed()` tells the session whether a denial check applies.
#pragma once

#include "base/result.h"
#include "policy/exec_request.h"
#include "pty/spawn.h"

namespace uexec::policy {

enum class SandboxKind { kNone };
const char* sandbox_kind_name(SandboxKind kind) noexcept;

class SandboxAttempt {
 public:
  static SandboxAttempt none() noexcept { return SandboxAttempt(SandboxKind::kNone); }

  SandboxKind kind() const noexcept { return kind_; }
  bool sandboxed() const noexcept { return kind_ != SandboxKind::kNone; }

  // The spawn plan for `req`: argv, exactly the env, cwd, child steps. Validates the request.
  [[nodiscard]] base::Result<pty::SpawnSpec> env_for(const ExecRequest& req) const;

 private:
  explicit SandboxAttempt(SandboxKind kind) noexcept : kind_(kind) {}
  SandboxKind kind_;
};

}  // namespace uexec::policy
