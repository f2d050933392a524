// sandbox_params.h: the `sandbox` member of process/start (docs/protocol.md §3.2 and §4.1) as a
// PermissionProfile and a backend preference.
//
// Two shapes. uexec's short form {mode, writableRoots?, network?, denyRead?, backend?}. And
// Codex's {permissions:{type, file_system, network}, cwd, workspaceRoots, ...}: `disabled`
// and `external` mean no uexec sandbox; `managed` with an unrestricted file system is
// danger-full-access (sandboxed only for a restricted network or deny entries); a
// restricted file system needs `:root` readable (restricted reads are not enforced yet:
// refused, never weakened), and then its write entries are the writable roots (`:cwd`,
// `:project_roots` = workspaceRoots, `:slash_tmp`, `:tmpdir`, paths), its read entries
// inside them read-only carve-outs, its deny entries (paths and globs) deny-read. Unknown
// special kinds are ignored for read/write and refused for deny, as docs/sandbox.md §1.3 says.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "base/result.h"
#include "policy/profile.h"
#include "policy/sandbox_attempt.h"
#include "rpc/request_params.h"

namespace uexec::rpc {

struct SandboxRequest {
  policy::PermissionProfile profile;
  policy::Backend backend = policy::Backend::kAuto;
  std::string policy_cwd;  // Codex's sandbox.cwd: what :cwd means (empty: the process cwd)
};

// nullopt: no sandbox asked for (absent, null, disabled, external). kInvalidArgument for a
// malformed member; kPolicy for a policy uexec cannot enforce. `cwd` is the process's cwd.
[[nodiscard]] base::Result<std::optional<SandboxRequest>> parse_sandbox_param(const nlohmann::json& sandbox,
                                                                              const std::string& cwd);

// What a request's `sandbox` member (in `params`) runs under: the attempt to spawn with and
// what :cwd means; nullopt when it asks for none. Throws a ParamError: -32602 for a malformed
// member, sandbox_unavailable() for a policy this host cannot enforce (never weakened).
struct SandboxChoice {
  policy::SandboxAttempt attempt;
  std::string policy_cwd;  // empty: the process cwd
};
std::optional<SandboxChoice> sandbox_for_request(const nlohmann::json& params, const std::string& cwd);
// The -32603 refusal {kind: "sandboxUnavailable", backend: "auto", reason} for `e`.
ParamError sandbox_unavailable(const base::Error& e);

}  // namespace uexec::rpc
