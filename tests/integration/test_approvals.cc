// Approvals for the agent tools (docs/sandbox.md §6, docs/protocol.md §4.8): exec_command under a
// sandbox profile and an approval policy, with the call's orchestrator asking a scripted
// approver. Real sandboxed sessions (the namespaces backend); the write that the sandbox
// denies is to a scratch directory outside the writable roots, so that the approved retry
// without the sandbox succeeds and leaves a file to check.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "agent/agent_service.h"
#include "integration/session_helpers.h"
#include "policy/linux_sandbox.h"

extern char** environ;

using namespace uexec;
using namespace uexec::test;
namespace fs = std::filesystem;

namespace {

// Answers approvals from a script and records what it was asked.
struct ScriptedApprover {
  std::vector<policy::ApprovalRequest> asked;
  std::vector<policy::Decision> answers;  // in order; denied once they run out
  policy::Approver fn() {
    return [this](const policy::ApprovalRequest& r, std::function<void(policy::Decision)> answer) {
      asked.push_back(r);
      std::size_t i = asked.size() - 1;
      answer(i < answers.size() ? answers[i] : policy::Decision::kDenied);
    };
  }
};

struct Fixture : ManagerFixture {
  std::unique_ptr<agent::AgentService> exec;
  ScriptedApprover approver;
  std::shared_ptr<policy::ToolOrchestrator> orchestrator;
  fs::path scratch;
  explicit Fixture(policy::ApprovalPolicy approval, policy::PermissionProfile profile =
                                                        policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite))
      : ManagerFixture([] {
          base::Config cfg;
          cfg.close_drain = std::chrono::milliseconds{1000};
          cfg.agent.deterministic_ids = true;
          return cfg;
        }()) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    exec = std::make_unique<agent::AgentService>(*pm, env, "/tmp");
    exec->set_default_sandbox(std::move(profile), policy::Backend::kNamespaces, approval);
    orchestrator = std::make_shared<policy::ToolOrchestrator>(approver.fn());
    char tmpl[] = "/var/tmp/uexec-approval-XXXXXX";  // outside workspace-write's writable roots
    scratch = ::mkdtemp(tmpl);
  }
  ~Fixture() {
    exec.reset();
    fs::remove_all(scratch);
  }
  base::Result<agent::Response> run(std::string cmd, bool escalate = false) {
    agent::ExecParams p;
    p.cmd = std::move(cmd);
    p.login = false;
    p.yield_time_ms = 10000;
    p.require_escalated = escalate;
    p.justification = escalate ? "needs to write outside the workspace" : "";
    p.approvals = orchestrator;
    std::optional<base::Result<agent::Response>> out;
    exec->exec_command(std::move(p), [&](base::Result<agent::Response> r) { out.emplace(std::move(r)); });
    REQUIRE_MESSAGE(run_until([&] { return out.has_value(); }, std::chrono::seconds{60}), "no reply");
    return std::move(*out);
  }
  std::string write_cmd(const std::string& name) const { return "echo hi > " + (scratch / name).string() + " && echo wrote"; }
  bool written(const std::string& name) const { return fs::exists(scratch / name); }
};

bool sandbox_available() {
  auto a = policy::SandboxAttempt::select(policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite),
                                          policy::Backend::kNamespaces);
  if (!a) MESSAGE("approvals not checked here: " << a.error().message());
  return a.has_value();
}

}  // namespace

TEST_CASE("on-failure: a denied command is asked about once and retried without the sandbox") {
  if (!sandbox_available()) return;
  Fixture f(policy::ApprovalPolicy::kOnFailure);
  f.approver.answers = {policy::Decision::kApproved};
  auto r = f.run(f.write_cmd("a"));
  REQUIRE(r);
  REQUIRE(f.approver.asked.size() == 1);
  CHECK(f.approver.asked[0].purpose == "sandbox_retry");
  CHECK(f.approver.asked[0].denial.has_value());
  CHECK(r->exit_code == 0);
  CHECK(r->output.find("wrote") != std::string::npos);
  CHECK(r->text.find("retried without the sandbox (approved)") != std::string::npos);
  CHECK_FALSE(r->sandbox_denied);
  CHECK(f.written("a"));
}

TEST_CASE("on-failure: a retry that is not approved reports the denial and why there was none") {
  if (!sandbox_available()) return;
  Fixture f(policy::ApprovalPolicy::kOnFailure);
  f.approver.answers = {policy::Decision::kDenied};
  auto r = f.run(f.write_cmd("b"));
  REQUIRE(r);
  CHECK(f.approver.asked.size() == 1);
  REQUIRE(r->sandbox_denied);
  CHECK(r->exit_code != 0);
  CHECK(r->text.find("a retry without the sandbox was not approved") != std::string::npos);
  CHECK_FALSE(f.written("b"));
}

TEST_CASE("on-failure: a command that is not denied is never asked about") {
  if (!sandbox_available()) return;
  Fixture f(policy::ApprovalPolicy::kOnFailure);
  auto r = f.run("echo fine; exit 3");
  REQUIRE(r);
  CHECK(f.approver.asked.empty());
  CHECK(r->exit_code == 3);  // an ordinary non-zero exit stays ordinary
}

TEST_CASE("on-failure: no retry without the sandbox when deny-read is configured") {
  if (!sandbox_available()) return;
  auto profile = policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite);
  profile.deny_read.push_back("/tmp/uexec-approval-secret.key");
  Fixture f(policy::ApprovalPolicy::kOnFailure, profile);
  f.approver.answers = {policy::Decision::kApproved};
  auto r = f.run(f.write_cmd("c"));
  REQUIRE_MESSAGE(r, (r ? "" : r.error().message()));
  CHECK(f.approver.asked.empty());
  REQUIRE(r->sandbox_denied);
  CHECK(r->text.find("because deny-read is configured") != std::string::npos);
  CHECK_FALSE(f.written("c"));
}

TEST_CASE("on-request: an escalation is asked first; approved runs unsandboxed, denied runs nothing") {
  if (!sandbox_available()) return;
  Fixture f(policy::ApprovalPolicy::kOnRequest);
  f.approver.answers = {policy::Decision::kApproved, policy::Decision::kDenied};
  auto r = f.run(f.write_cmd("d") + "; echo sandbox=${UEXEC_SANDBOX:-none}", true);
  REQUIRE(r);
  REQUIRE(f.approver.asked.size() == 1);
  CHECK(f.approver.asked[0].purpose == "escalation");
  CHECK(f.approver.asked[0].reason == "needs to write outside the workspace");
  CHECK(r->output.find("sandbox=none") != std::string::npos);
  CHECK(f.written("d"));
  auto no = f.run(f.write_cmd("e"), true);
  REQUIRE_FALSE(no);
  CHECK(no.error().context.find("exec_command failed for") != std::string::npos);
  CHECK_FALSE(f.written("e"));
  // A denial without escalation is reported with the hint, never retried.
  auto denied = f.run(f.write_cmd("f"));
  REQUIRE(denied);
  CHECK(f.approver.asked.size() == 2);
  CHECK(denied->text.find("require_escalated") != std::string::npos);
}

TEST_CASE("untrusted: known-safe commands run without asking; others are asked; approvedForSession is remembered") {
  if (!sandbox_available()) return;
  Fixture f(policy::ApprovalPolicy::kUntrusted);
  f.approver.answers = {policy::Decision::kApprovedForSession};
  auto safe = f.run("ls /");
  REQUIRE(safe);
  CHECK(f.approver.asked.empty());
  auto first = f.run("echo once > /tmp/uexec-approval-untrusted-$$; echo ok");
  REQUIRE(first);
  REQUIRE(f.approver.asked.size() == 1);
  CHECK(f.approver.asked[0].purpose == "exec");
  auto again = f.run("echo once > /tmp/uexec-approval-untrusted-$$; echo ok");
  REQUIRE(again);
  CHECK(f.approver.asked.size() == 1);  // the same command: cached for the session
  CHECK(again->output.find("ok") != std::string::npos);
}

TEST_CASE("abort ends the call with an error and runs nothing") {
  if (!sandbox_available()) return;
  Fixture f(policy::ApprovalPolicy::kOnRequest);
  f.approver.answers = {policy::Decision::kAbort};
  auto r = f.run(f.write_cmd("g"), true);
  REQUIRE_FALSE(r);
  CHECK(r.error().context.find("aborted") != std::string::npos);
  CHECK_FALSE(f.written("g"));
}

TEST_CASE("a call cancelled while its approval is pending never runs") {
  if (!sandbox_available()) return;
  Fixture f(policy::ApprovalPolicy::kOnRequest);
  std::function<void(policy::Decision)> later;
  f.orchestrator = std::make_shared<policy::ToolOrchestrator>(
      [&](const policy::ApprovalRequest&, std::function<void(policy::Decision)> answer) { later = std::move(answer); });
  agent::ExecParams p;
  p.cmd = f.write_cmd("h");
  p.login = false;
  p.require_escalated = true;
  p.approvals = f.orchestrator;
  bool replied = false;
  auto cid = f.exec->exec_command(std::move(p), [&](base::Result<agent::Response>) { replied = true; });
  REQUIRE(cid != 0);
  REQUIRE(later);
  f.exec->cancel(cid);
  later(policy::Decision::kApproved);
  f.run_until([] { return false; }, std::chrono::milliseconds{300});
  CHECK_FALSE(replied);
  CHECK_FALSE(f.written("h"));
}
