// ToolOrchestrator: each approval policy and each no-retry rule (docs/sandbox.md §6), with a
// scripted runner (the real one, through the ProcessManager and the namespace sandbox, is
// in integration/test_sandbox.cc) and a scripted approver.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "policy/orchestrator.h"

using namespace uexec::policy;

namespace {

struct Script {
  // What each attempt reports: by default sandboxed attempts are denied, unsandboxed complete.
  bool deny_sandboxed = true;
  bool deny_unsandboxed = false;
  std::optional<AttemptOutcome::Kind> first_outcome;  // overrides attempt 1
  Decision answer = Decision::kApproved;
  std::vector<std::string> asked;     // purposes, in order
  std::vector<std::string> attempts;  // kind names, in order

  Approver approver() {
    return [this](const ApprovalRequest& r, std::function<void(Decision)> answer_fn) {
      asked.push_back(r.purpose);
      answer_fn(answer);
    };
  }
  RunAttempt runner() {
    return [this](const SandboxAttempt& a, std::function<void(AttemptOutcome)> done) {
      attempts.push_back(sandbox_kind_name(a.kind()));
      AttemptOutcome o;
      if (attempts.size() == 1 && first_outcome) {
        o.kind = *first_outcome;
        o.exit_code = o.kind == AttemptOutcome::Kind::kCompleted ? 1 : 124;
      } else if (a.sandboxed() ? deny_sandboxed : deny_unsandboxed) {
        o.kind = AttemptOutcome::Kind::kDenied;
        o.exit_code = 1;
        o.denial = SandboxDenied{1, DenialSource::kHeuristic, "keyword", "output contains \"read-only file system\""};
      }
      done(o);
    };
  }
};

ToolCall call(ApprovalPolicy p, std::vector<std::string> argv = {"touch", "/etc/x"}) {
  ToolCall c;
  c.argv = std::move(argv);
  c.cwd = "/";
  c.profile = PermissionProfile::for_mode(SandboxMode::kWorkspaceWrite);
  c.policy = p;
  return c;
}

CallResult run(ToolOrchestrator& o, Script& s, const ToolCall& c) {
  std::optional<CallResult> result;
  int calls = 0;
  o.run(c, s.runner(), [&](CallResult r) {
    ++calls;
    result = r;
  });
  REQUIRE(calls == 1);  // exactly one terminal result, synchronously with these scripts
  return *result;
}

}  // namespace

TEST_CASE("never: a denial is final and nothing is asked; escalation is rejected") {
  Script s;
  ToolOrchestrator o(s.approver());
  auto r = run(o, s, call(ApprovalPolicy::kNever));
  CHECK(r.kind == CallResult::Kind::kDenied);
  CHECK(r.attempts == 1);
  CHECK(s.asked.empty());
  auto esc = call(ApprovalPolicy::kNever);
  esc.require_escalated = true;
  auto r2 = run(o, s, esc);
  CHECK(r2.kind == CallResult::Kind::kRejected);
  CHECK(r2.attempts == 0);
  CHECK(r2.message.find("never") != std::string::npos);
}

TEST_CASE("on-failure: asks after a denial and retries once without the sandbox") {
  Script s;
  ToolOrchestrator o(s.approver());
  auto r = run(o, s, call(ApprovalPolicy::kOnFailure));
  CHECK(r.kind == CallResult::Kind::kCompleted);
  CHECK(r.attempts == 2);
  CHECK(s.asked == std::vector<std::string>{"sandbox_retry"});
  REQUIRE(s.attempts.size() == 2);
  CHECK(s.attempts[0] != "none");
  CHECK(s.attempts[1] == "none");
  CHECK(r.sandbox == "none");

  SUBCASE("denied at the prompt: attempt 1's denial is returned") {
    Script d;
    d.answer = Decision::kDenied;
    ToolOrchestrator od(d.approver());
    auto rd = run(od, d, call(ApprovalPolicy::kOnFailure));
    CHECK(rd.kind == CallResult::Kind::kDenied);
    CHECK(rd.attempts == 1);
    REQUIRE(rd.denial);
  }
  SUBCASE("abort at the prompt") {
    Script a;
    a.answer = Decision::kAbort;
    ToolOrchestrator oa(a.approver());
    CHECK(run(oa, a, call(ApprovalPolicy::kOnFailure)).kind == CallResult::Kind::kAborted);
  }
  SUBCASE("an up-front escalation is rejected: the retry path covers it") {
    auto esc = call(ApprovalPolicy::kOnFailure);
    esc.require_escalated = true;
    Script e;
    ToolOrchestrator oe(e.approver());
    CHECK(run(oe, e, esc).kind == CallResult::Kind::kRejected);
    CHECK(e.attempts.empty());
  }
}

TEST_CASE("on-request: no retry prompt, a hint instead; escalations are asked and run unsandboxed") {
  Script s;
  ToolOrchestrator o(s.approver());
  auto r = run(o, s, call(ApprovalPolicy::kOnRequest));
  CHECK(r.kind == CallResult::Kind::kDenied);
  CHECK(r.attempts == 1);
  CHECK(s.asked.empty());
  CHECK(r.message.find("require_escalated") != std::string::npos);

  Script e;
  ToolOrchestrator oe(e.approver());
  auto esc = call(ApprovalPolicy::kOnRequest);
  esc.require_escalated = true;
  auto re = run(oe, e, esc);
  CHECK(e.asked == std::vector<std::string>{"escalation"});
  CHECK(re.kind == CallResult::Kind::kCompleted);
  CHECK(e.attempts == std::vector<std::string>{"none"});

  SUBCASE("with deny-read configured, an approved escalation still runs sandboxed") {
    Script d;
    d.deny_sandboxed = false;
    ToolOrchestrator od(d.approver());
    auto c = esc;
    c.profile.deny_read = {"*.env"};
    run(od, d, c);
    REQUIRE(d.attempts.size() == 1);
    CHECK(d.attempts[0] != "none");
  }
}

TEST_CASE("untrusted: asks before anything not known-safe, and again before the retry") {
  Script s;
  ToolOrchestrator o(s.approver());
  auto r = run(o, s, call(ApprovalPolicy::kUntrusted, {"rm", "-rf", "build"}));
  CHECK(s.asked == std::vector<std::string>{"exec", "sandbox_retry"});
  CHECK(r.attempts == 2);
  CHECK(r.kind == CallResult::Kind::kCompleted);

  Script safe;
  safe.deny_sandboxed = false;
  ToolOrchestrator os(safe.approver());
  run(os, safe, call(ApprovalPolicy::kUntrusted, {"bash", "-lc", "git status"}));
  CHECK(safe.asked.empty());
  CHECK(ToolOrchestrator::known_safe({"ls", "-la"}));
  CHECK(ToolOrchestrator::known_safe({"git", "diff"}));
  CHECK_FALSE(ToolOrchestrator::known_safe({"git", "push"}));
  CHECK_FALSE(ToolOrchestrator::known_safe({"sh", "-c", "ls > out"}));
  CHECK_FALSE(ToolOrchestrator::known_safe({"rg", "--pre", "x", "y"}));

  Script no;
  no.answer = Decision::kDenied;
  ToolOrchestrator on(no.approver());
  auto rn = run(on, no, call(ApprovalPolicy::kUntrusted, {"make"}));
  CHECK(rn.kind == CallResult::Kind::kRejected);
  CHECK(no.attempts.empty());
}

TEST_CASE("no-retry rules: deny-read, network hard deny, a second denial, timeouts and failures") {
  SUBCASE("deny-read configured: never retried unsandboxed, nothing asked") {
    Script s;
    ToolOrchestrator o(s.approver());
    auto c = call(ApprovalPolicy::kOnFailure);
    c.profile.deny_read = {"**/*.pem"};
    auto r = run(o, s, c);
    CHECK(r.kind == CallResult::Kind::kDenied);
    CHECK(r.attempts == 1);
    CHECK(s.asked.empty());
    CHECK(r.message.find("deny-read") != std::string::npos);
  }
  SUBCASE("network hard-denied") {
    Script s;
    ToolOrchestrator o(s.approver());
    auto c = call(ApprovalPolicy::kUntrusted, {"ls"});
    c.profile.network_hard_deny = true;
    auto r = run(o, s, c);
    CHECK(r.kind == CallResult::Kind::kDenied);
    CHECK(s.asked.empty());
    CHECK(r.message.find("hard-denied") != std::string::npos);
  }
  SUBCASE("a second denial is final") {
    Script s;
    s.deny_unsandboxed = true;
    ToolOrchestrator o(s.approver());
    auto r = run(o, s, call(ApprovalPolicy::kOnFailure));
    CHECK(r.kind == CallResult::Kind::kDenied);
    CHECK(r.attempts == 2);
    CHECK(s.asked.size() == 1);
  }
  for (auto k : {AttemptOutcome::Kind::kTimeout, AttemptOutcome::Kind::kFailed, AttemptOutcome::Kind::kCompleted}) {
    Script s;
    s.first_outcome = k;
    ToolOrchestrator o(s.approver());
    auto r = run(o, s, call(ApprovalPolicy::kOnFailure));
    CHECK(r.attempts == 1);
    CHECK(s.asked.empty());
  }
}

TEST_CASE("approved_for_session is cached per (argv, cwd, sandbox, profile); approved is not") {
  Script s;
  s.answer = Decision::kApprovedForSession;
  ToolOrchestrator o(s.approver());
  run(o, s, call(ApprovalPolicy::kOnFailure, {"sh", "-c", "make install"}));
  run(o, s, call(ApprovalPolicy::kOnFailure, {"bash", "-lc", "make install"}));  // same script
  CHECK(s.asked.size() == 1);
  auto other = call(ApprovalPolicy::kOnFailure, {"sh", "-c", "make install"});
  other.cwd = "/tmp";
  run(o, s, other);
  CHECK(s.asked.size() == 2);

  Script once;
  ToolOrchestrator o2(once.approver());
  run(o2, once, call(ApprovalPolicy::kOnFailure));
  run(o2, once, call(ApprovalPolicy::kOnFailure));
  CHECK(once.asked.size() == 2);
  CHECK(ToolOrchestrator::cache_key(call(ApprovalPolicy::kNever, {"sh", "-c", "x"}), "none") ==
        ToolOrchestrator::cache_key(call(ApprovalPolicy::kNever, {"zsh", "-lc", "x"}), "none"));
}
