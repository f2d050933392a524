#include "policy/orchestrator.h"

#include <algorithm>

#include "pty/spawn.h"

namespace uexec::policy {

using base::Error;
using base::Result;

const char* approval_policy_name(ApprovalPolicy p) noexcept {
  switch (p) {
    case ApprovalPolicy::kNever: return "never";
    case ApprovalPolicy::kOnFailure: return "on-failure";
    case ApprovalPolicy::kOnRequest: return "on-request";
    case ApprovalPolicy::kUntrusted: return "untrusted";
  }
  return "?";
}

Result<ApprovalPolicy> parse_approval_policy(std::string_view s) {
  if (s == "never") return ApprovalPolicy::kNever;
  if (s == "on-failure") return ApprovalPolicy::kOnFailure;
  if (s == "on-request") return ApprovalPolicy::kOnRequest;
  if (s == "untrusted") return ApprovalPolicy::kUntrusted;
  return Error::invalid("unknown approval policy \"" + std::string(s) +
                        "\" (never, on-failure, on-request or untrusted)");
}

const char* decision_name(Decision d) noexcept {
  switch (d) {
    case Decision::kApproved: return "approved";
    case Decision::kApprovedForSession: return "approved_for_session";
    case Decision::kDenied: return "denied";
    case Decision::kAbort: return "abort";
  }
  return "?";
}

Result<Decision> parse_decision(std::string_view s) {
  if (s == "approved") return Decision::kApproved;
  if (s == "approved_for_session") return Decision::kApprovedForSession;
  if (s == "denied") return Decision::kDenied;
  if (s == "abort") return Decision::kAbort;
  return Error::invalid("unknown decision \"" + std::string(s) + "\"");
}

const char* call_result_name(CallResult::Kind k) noexcept {
  switch (k) {
    case CallResult::Kind::kCompleted: return "completed";
    case CallResult::Kind::kDenied: return "denied";
    case CallResult::Kind::kTimeout: return "timeout";
    case CallResult::Kind::kFailed: return "failed";
    case CallResult::Kind::kRejected: return "rejected";
    case CallResult::Kind::kAborted: return "aborted";
  }
  return "?";
}

namespace {

// `sh -c SCRIPT` (bash, zsh; -c or -lc) → the script; otherwise empty.
std::string shell_script(const std::vector<std::string>& argv) {
  if (argv.size() != 3) return {};
  std::string shell = argv[0].substr(argv[0].rfind('/') + 1);
  if (shell != "sh" && shell != "bash" && shell != "zsh") return {};
  if (argv[1] != "-c" && argv[1] != "-lc") return {};
  return argv[2];
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

bool ToolOrchestrator::known_safe(const std::vector<std::string>& argv_in) {
  std::vector<std::string> argv = argv_in;
  if (std::string script = shell_script(argv_in); !script.empty()) {
    // Only a plain command line: no pipes, redirections, substitutions or lists.
    if (script.find_first_of(";&|<>$`(){}\n") != std::string::npos) return false;
    argv = words(script);
  }
  if (argv.empty()) return false;
  std::string cmd = argv[0].substr(argv[0].rfind('/') + 1);
  static const char* const kSafe[] = {"ls", "cat", "pwd", "echo", "head", "tail", "wc", "true", "false",
                                      "whoami", "uname", "date", "stat", "file", "printenv", "id"};
  for (const char* s : kSafe)
    if (cmd == s) return true;
  if (cmd == "git" && argv.size() >= 2) {
    const std::string& sub = argv[1];
    if (sub != "status" && sub != "log" && sub != "diff" && sub != "show") return false;
    // No options that write or run something (--output, --ext-diff, -c config).
    for (const auto& a : argv)
      if (a.rfind("--output", 0) == 0 || a == "--ext-diff" || a == "-c") return false;
    return true;
  }
  if (cmd == "rg" || cmd == "grep") {
    for (const auto& a : argv)
      if (a.rfind("--pre", 0) == 0 || a.rfind("--search-zip", 0) == 0 || a == "-z") return false;
    return true;
  }
  return false;
}

std::string ToolOrchestrator::cache_key(const ToolCall& call, std::string_view sandbox_requested) {
  std::string key;
  if (std::string script = shell_script(call.argv); !script.empty()) {
    key = "script:" + script;
  } else if (!call.argv.empty()) {
    auto resolved = pty::resolve_program(call.argv[0], {}, call.cwd);
    key = "argv:" + (resolved ? *resolved : call.argv[0]);
    for (std::size_t i = 1; i < call.argv.size(); ++i) key += '\x1f' + call.argv[i];
  }
  key += "\x1e" "cwd:" + call.cwd;
  key += "\x1e" "sandbox:" + std::string(sandbox_requested);
  const PermissionProfile& p = call.profile;
  key += "\x1e" "profile:" + std::string(sandbox_mode_name(p.mode)) + (p.network ? "+net" : "");
  std::vector<std::string> roots = p.writable_roots, deny = p.deny_read;
  std::sort(roots.begin(), roots.end());
  std::sort(deny.begin(), deny.end());
  for (const auto& r : roots) key += "\x1fw:" + r;
  for (const auto& d : deny) key += "\x1f" "d:" + d;
  return key;
}

struct ToolOrchestrator::Call {
  ToolCall call;
  RunAttempt run;
  std::function<void(CallResult)> done;
  int attempts = 0;
  bool finished = false;
  std::string last_kind = "none";

  void finish(CallResult r) {
    if (finished) return;
    finished = true;
    r.attempts = attempts;
    if (r.sandbox.empty()) r.sandbox = last_kind;
    auto cb = std::move(done);
    cb(std::move(r));
  }
  void finish(CallResult::Kind kind, std::string message) {
    CallResult r;
    r.kind = kind;
    r.message = std::move(message);
    finish(std::move(r));
  }
};

void ToolOrchestrator::ask(const std::shared_ptr<Call>& c, ApprovalRequest req, std::string_view sandbox_requested,
                           std::function<void(Decision)> then) {
  std::string key = cache_key(c->call, sandbox_requested);
  if (auto it = cache_.find(key); it != cache_.end()) {
    then(Decision::kApprovedForSession);
    return;
  }
  req.command = c->call.argv;
  req.cwd = c->call.cwd;
  auto answered = std::make_shared<bool>(false);
  approver_(req, [this, key, then = std::move(then), answered](Decision d) {
    if (*answered) return;  // exactly one answer counts
    *answered = true;
    if (d == Decision::kApprovedForSession) cache_[key] = d;
    then(d);
  });
}

void ToolOrchestrator::run(const ToolCall& call, RunAttempt run_attempt, std::function<void(CallResult)> done) {
  auto c = std::make_shared<Call>();
  c->call = call;
  c->run = std::move(run_attempt);
  c->done = std::move(done);
  const bool has_deny = call.profile.has_deny_entries();

  if (call.require_escalated) {
    if (call.policy == ApprovalPolicy::kNever)
      return c->finish(CallResult::Kind::kRejected, "running without the sandbox needs approval, and the approval policy is never");
    if (call.policy == ApprovalPolicy::kOnFailure)
      return c->finish(CallResult::Kind::kRejected,
                       "under on-failure, commands start sandboxed; a denied command is offered a retry without it");
    ApprovalRequest req;
    req.purpose = "escalation";
    req.reason = call.justification.empty() ? "the command asks to run without the sandbox" : call.justification;
    req.proposed_sandbox = has_deny ? "sandboxed (deny-read is configured)" : "none";
    return ask(c, req, "none", [this, c, has_deny](Decision d) {
      if (d == Decision::kAbort) return c->finish(CallResult::Kind::kAborted, "aborted at the approval prompt");
      if (d == Decision::kDenied) return c->finish(CallResult::Kind::kRejected, "running without the sandbox was not approved");
      // Approved: unsandboxed first, unless deny-read makes the sandbox the only read boundary.
      attempt(c, /*sandboxed=*/has_deny);
    });
  }
  if (call.policy == ApprovalPolicy::kUntrusted && !known_safe(call.argv)) {
    ApprovalRequest req;
    req.purpose = "exec";
    req.reason = "untrusted: every command that is not known to be read-only is asked for";
    return ask(c, req, "sandboxed", [this, c](Decision d) {
      if (d == Decision::kAbort) return c->finish(CallResult::Kind::kAborted, "aborted at the approval prompt");
      if (d == Decision::kDenied) return c->finish(CallResult::Kind::kRejected, "the command was not approved");
      attempt(c, true);
    });
  }
  attempt(c, true);
}

void ToolOrchestrator::attempt(const std::shared_ptr<Call>& c, bool sandboxed) {
  SandboxAttempt a = SandboxAttempt::none();
  if (sandboxed) {
    auto sel = SandboxAttempt::select(c->call.profile, c->call.backend);
    if (!sel) return c->finish(CallResult::Kind::kFailed, sel.error().message());
    a = std::move(*sel);
  }
  ++c->attempts;
  c->last_kind = sandbox_kind_name(a.kind());
  c->run(a, [this, c](AttemptOutcome o) { after(c, o); });
}

void ToolOrchestrator::after(const std::shared_ptr<Call>& c, const AttemptOutcome& o) {
  CallResult r;
  r.exit_code = o.exit_code;
  r.denial = o.denial;
  switch (o.kind) {
    case AttemptOutcome::Kind::kCompleted: r.kind = CallResult::Kind::kCompleted; return c->finish(std::move(r));
    case AttemptOutcome::Kind::kTimeout: r.kind = CallResult::Kind::kTimeout; return c->finish(std::move(r));
    case AttemptOutcome::Kind::kFailed:
      r.kind = CallResult::Kind::kFailed;
      r.message = o.error;
      return c->finish(std::move(r));
    case AttemptOutcome::Kind::kDenied: break;
  }
  r.kind = CallResult::Kind::kDenied;
  const ToolCall& call = c->call;
  if (c->attempts >= 2) {
    r.message = "denied again on the retry: final";
    return c->finish(std::move(r));
  }
  if (call.policy == ApprovalPolicy::kNever) {
    r.message = "the sandbox denied it; the approval policy is never, so there is no retry";
    return c->finish(std::move(r));
  }
  if (call.policy == ApprovalPolicy::kOnRequest) {
    r.message = "the sandbox denied it; re-issue the call with require_escalated (and a justification) to ask "
                "for it to run without the sandbox";
    return c->finish(std::move(r));
  }
  if (call.profile.has_deny_entries()) {
    r.message = "the sandbox denied it; no retry without the sandbox, because deny-read is configured";
    return c->finish(std::move(r));
  }
  if (call.profile.network_hard_deny) {
    r.message = "the sandbox denied it; no retry without the sandbox, because the network is hard-denied";
    return c->finish(std::move(r));
  }
  ApprovalRequest req;
  req.purpose = "sandbox_retry";
  req.reason = "command failed; retry without sandbox?";
  req.proposed_sandbox = "none";
  req.denial = o.denial;
  auto first = std::make_shared<CallResult>(r);
  ask(c, req, "none", [this, c, first](Decision d) {
    if (d == Decision::kAbort) {
      first->kind = CallResult::Kind::kAborted;
      first->message = "aborted at the retry prompt; attempt 1 was denied";
      return c->finish(*first);
    }
    if (d == Decision::kDenied) {
      first->message = "the sandbox denied it; a retry without the sandbox was not approved";
      return c->finish(*first);
    }
    attempt(c, false);
  });
}

}  // namespace uexec::policy
