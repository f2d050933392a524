// orchestrator.h: approvals, the first attempt and the single retry (docs/sandbox.md §6).
//
// ToolOrchestrator::run takes one tool call (argv, cwd, profile, approval policy, whether the
// model asked to run unsandboxed) and drives it to exactly one terminal result:
//
//   policy       before attempt 1                up-front escalation        after a denial
//   never        no ask                          rejected                   Denied, no retry
//   on-failure   no ask                          rejected (retry covers it) ask, retry once unsandboxed
//   on-request   ask only for escalations        asked                      Denied + hint to escalate
//   untrusted    ask unless the argv is known-safe  asked                   ask, retry once unsandboxed
//
// Never an unsandboxed retry when deny-read entries are configured (the deny is the only
// read boundary) or the network is hard-denied; a second Denied is final; a Timeout, a
// spawn failure or an ordinary non-zero exit is never retried. Approvals are asked through
// an asynchronous callback (the protocol layer routes it to a client as approval/request;
// the CLI asks on the terminal), and `approved_for_session` answers are cached per
// (argv with shell wrappers unwrapped, cwd, sandbox requested, profile) for the life of the
// orchestrator: one per client connection, never persisted, never shared.
//
// The orchestrator runs nothing itself: a RunAttempt callback runs one SandboxAttempt (a
// session through the ProcessManager, in production) and reports its outcome, so the same
// state machine serves the MCP tools, exec/* and `uexec run --approval`. Single-threaded:
// call it, and its callbacks, on the loop thread. It must outlive every call it runs (the
// callbacks it hands out refer to it).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/denial.h"
#include "policy/profile.h"
#include "policy/sandbox_attempt.h"

namespace uexec::policy {

enum class ApprovalPolicy { kNever, kOnFailure, kOnRequest, kUntrusted };
const char* approval_policy_name(ApprovalPolicy p) noexcept;  // "on-failure"
[[nodiscard]] base::Result<ApprovalPolicy> parse_approval_policy(std::string_view s);

enum class Decision { kApproved, kApprovedForSession, kDenied, kAbort };
const char* decision_name(Decision d) noexcept;                // "approved_for_session"
[[nodiscard]] base::Result<Decision> parse_decision(std::string_view s);

struct ApprovalRequest {
  std::string purpose;                 // "exec", "escalation", "sandbox_retry"
  std::vector<std::string> command;
  std::string cwd;
  std::string reason;                  // shown to the person deciding
  std::string proposed_sandbox;        // "none" or a kind name
  std::optional<SandboxDenied> denial; // what attempt 1 ran into (sandbox_retry)
};
// Asks; answers through `answer` exactly once, now or later.
using Approver = std::function<void(const ApprovalRequest&, std::function<void(Decision)> answer)>;

struct ToolCall {
  std::vector<std::string> argv;
  std::string cwd;                     // absolute
  PermissionProfile profile;
  Backend backend = Backend::kAuto;
  ApprovalPolicy policy = ApprovalPolicy::kOnRequest;
  bool require_escalated = false;      // the model asks to run without the sandbox
  std::string justification;           // the model's reason, for the approval prompt
};

// How one attempt ended, as the runner reports it.
struct AttemptOutcome {
  enum class Kind { kCompleted, kDenied, kTimeout, kFailed };
  Kind kind = Kind::kCompleted;
  int exit_code = 0;                   // shell code; meaningless for kFailed
  std::optional<SandboxDenied> denial; // kDenied
  std::string error;                   // kFailed: why it could not run
};
using RunAttempt = std::function<void(const SandboxAttempt&, std::function<void(AttemptOutcome)> done)>;

struct CallResult {
  enum class Kind { kCompleted, kDenied, kTimeout, kFailed, kRejected, kAborted };
  Kind kind = Kind::kCompleted;
  int exit_code = 0;
  int attempts = 0;                    // 0, 1 or 2
  std::string sandbox;                 // kind name of the last attempt ("none" unsandboxed)
  std::optional<SandboxDenied> denial;
  std::string message;                 // why rejected / not retried / the hint
};
const char* call_result_name(CallResult::Kind k) noexcept;

class ToolOrchestrator {
 public:
  explicit ToolOrchestrator(Approver approver) : approver_(std::move(approver)) {}

  // Drives `call` to one terminal result, reported through `done` exactly once.
  void run(const ToolCall& call, RunAttempt run_attempt, std::function<void(CallResult)> done);

  // The approval cache key of docs/sandbox.md §6.4 (exposed for tests).
  static std::string cache_key(const ToolCall& call, std::string_view sandbox_requested);
  // Known-safe read-only commands that `untrusted` runs without asking.
  static bool known_safe(const std::vector<std::string>& argv);

 private:
  struct Call;
  void ask(const std::shared_ptr<Call>& c, ApprovalRequest req, std::string_view sandbox_requested,
           std::function<void(Decision)> then);
  void attempt(const std::shared_ptr<Call>& c, bool sandboxed);
  void after(const std::shared_ptr<Call>& c, const AttemptOutcome& o);

  Approver approver_;
  std::map<std::string, Decision> cache_;  // approved_for_session only
};

}  // namespace uexec::policy
