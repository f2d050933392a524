// sandbox_attempt.h: one way of running one request, turned into a SpawnSpec.
//
// Every spawn goes through SandboxAttempt::env_for: the policy decides the final argv, env,
// cwd and the async-signal-safe steps the child applies before execve. Everything is built
// here, in the parent, so the child only applies it.
//
// select() (Codex's select_initial, docs/sandbox.md §2): the kind for a profile and a
// backend preference on this host (never a silent None: a profile that needs a sandbox the
// host cannot give fails with BackendUnavailable). env_for() is `transform` plus
// ExecRequest::from_sandbox_exec_request: it resolves the profile against the request's cwd
// and env, attaches the backend (linux_sandbox.h, bwrap.h), and sets the env markers
// (UEXEC_SANDBOX, UEXEC_SANDBOX_NETWORK_DISABLED, CODEX_SANDBOX_NETWORK_DISABLED,
// CODEX_SANDBOX) after removing any inherited ones: they describe the sandbox that runs.
// kFake is test-only: sandboxed in name, enforcing nothing, its executor records written by
// the test into the DenialLog. `sandboxed()` tells the session whether the denial check runs.
#pragma once

#include <memory>
#include <string_view>

#include "base/result.h"
#include "policy/denial.h"
#include "policy/exec_request.h"
#include "policy/profile.h"
#include "pty/spawn.h"

namespace uexec::policy {

enum class SandboxKind { kNone, kFake, kLinuxNamespaces, kLinuxLandlock, kLinuxBwrap, kMacosSeatbelt };
const char* sandbox_kind_name(SandboxKind kind) noexcept;  // "none", "linux-ns", …

// The backend a person or a config asks for; kAuto lets the host decide.
enum class Backend { kAuto, kNamespaces, kLandlock, kBwrap, kSeatbelt };
[[nodiscard]] base::Result<Backend> parse_backend(std::string_view s);

class SandboxAttempt {
 public:
  static SandboxAttempt none() noexcept { return SandboxAttempt(SandboxKind::kNone, nullptr); }
  // Test-only: sandboxed in name, enforcing nothing; its executor records go to `log`.
  static SandboxAttempt fake(std::shared_ptr<DenialLog> log) noexcept {
    return SandboxAttempt(SandboxKind::kFake, std::move(log));
  }
  // select_initial: None for an unrestricted profile, else the backend for this host.
  [[nodiscard]] static base::Result<SandboxAttempt> select(const PermissionProfile& profile,
                                                           Backend preference = Backend::kAuto);

  SandboxKind kind() const noexcept { return kind_; }
  bool sandboxed() const noexcept { return kind_ != SandboxKind::kNone; }
  const PermissionProfile* profile() const noexcept { return profile_.get(); }
  // --log-denials: the sandbox also records each write its policy forbids and each read of
  // what it hides, with the path (the filter holds every open and the calls that change a
  // name for its listener: pty/write_notice.h).
  void record_files(bool on) noexcept { record_files_ = on; }
  bool records_files() const noexcept { return record_files_; }
  // Where the executor leaves denial records (null when it reports none).
  const std::shared_ptr<DenialLog>& denial_log() const noexcept { return log_; }
  // A seccomp filter runs (SIGSYS is evidence); the file-system view is made of mounts
  // (EBUSY and EXDEV texts are evidence).
  bool seccomp() const noexcept {
    return kind_ == SandboxKind::kLinuxNamespaces || kind_ == SandboxKind::kLinuxLandlock ||
           kind_ == SandboxKind::kLinuxBwrap;
  }
  bool mount_view() const noexcept {
    return kind_ == SandboxKind::kLinuxNamespaces || kind_ == SandboxKind::kLinuxBwrap;
  }

  // The spawn plan for `req`: argv, exactly the env, cwd, child steps. Validates the request;
  // kPolicy errors name what could not be enforced (SymlinkedRoot, PolicyNotExpressible, …).
  [[nodiscard]] base::Result<pty::SpawnSpec> env_for(const ExecRequest& req) const;

 private:
  SandboxAttempt(SandboxKind kind, std::shared_ptr<DenialLog> log) noexcept
      : kind_(kind), log_(std::move(log)) {}
  SandboxKind kind_;
  bool record_files_ = false;
  std::shared_ptr<DenialLog> log_;
  std::shared_ptr<const PermissionProfile> profile_;
};

}  // namespace uexec::policy
