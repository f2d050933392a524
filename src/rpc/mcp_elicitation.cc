#include "rpc/mcp_elicitation.h"

#include <fmt/core.h>

#include <utility>

#include "base/terminal_text.h"
#include "rpc/json_rpc.h"

namespace uexec::rpc {

namespace {

// What the person reads, in a client that may print it on a terminal: control characters
// shown as escapes (the command is the agent's, a denial's path the sandboxed program's:
// neither may redraw the question), whole up to a screenful, then cut.
std::string shown(const std::string& s) {
  std::string t = base::terminal_text(s);
  return t.size() > 2000 ? t.substr(0, 2000) + "…" : t;
}

}  // namespace

ApprovalQuestion question_for(const policy::ApprovalRequest& req) {
  ApprovalQuestion q;
  q.purpose = req.purpose;
  if (req.command.size() == 3 && (req.command[1] == "-lc" || req.command[1] == "-c")) {
    q.command = req.command[2];
  } else {
    for (const auto& a : req.command) q.command += (q.command.empty() ? "" : " ") + a;
  }
  q.cwd = req.cwd;
  q.reason = req.reason;
  if (req.denial) q.denial = req.denial->describe();
  return q;
}

json elicitation_params(const ApprovalQuestion& q) {
  std::string message;
  if (q.purpose == "sandbox_retry") {
    message = fmt::format("uexec: the sandbox denied `{}` (in {}){}. Run it again without the sandbox?", shown(q.command),
                          shown(q.cwd), q.denial.empty() ? "" : ": " + shown(q.denial));
  } else if (q.purpose == "escalation") {
    message = fmt::format("uexec: `{}` (in {}) asks to run without the sandbox{}. Allow it?", shown(q.command),
                          shown(q.cwd), q.reason.empty() ? "" : ", because: " + shown(q.reason));
  } else {
    message = fmt::format("uexec: run `{}` (in {})?{}", shown(q.command), shown(q.cwd),
                          q.reason.empty() ? "" : " (" + shown(q.reason) + ")");
  }
  message += "\nChoose approved (this once), approved_for_session (this command in this directory, for the rest of "
             "the session), denied (do not run it) or abort (end the tool call).";
  json decision = {{"type", "string"},
                   {"title", "Decision"},
                   {"description", "Whether uexec may run the command"},
                   {"enum", {"approved", "approved_for_session", "denied", "abort"}},
                   {"enumNames", {"Approve once", "Approve for this session", "Deny", "Abort the call"}}};
  return {{"message", message},
          {"requestedSchema",
           {{"type", "object"}, {"properties", {{"decision", decision}}}, {"required", {"decision"}}}}};
}

policy::Decision decision_from_elicitation(const json& response) {
  using policy::Decision;
  if (!response.is_object() || !response.contains("result")) return Decision::kDenied;
  const json& r = response["result"];
  if (!r.is_object() || !r.contains("action") || r["action"] != "accept") return Decision::kDenied;
  if (!r.contains("content") || !r["content"].is_object()) return Decision::kDenied;
  const json& c = r["content"];
  if (!c.contains("decision") || !c["decision"].is_string()) return Decision::kDenied;
  auto d = policy::parse_decision(c["decision"].get<std::string>());
  return d ? *d : Decision::kDenied;
}

std::string approval_needed_note(const ApprovalQuestion& q) {
  const char* what = q.purpose == "sandbox_retry" ? "retrying this command without the sandbox"
                     : q.purpose == "escalation"  ? "running this command without the sandbox"
                                                  : "running this command";
  return fmt::format(
      "Approval needed: {} needs approval, but this MCP client did not declare the `elicitation` capability, so uexec "
      "could not ask; the answer counts as denied. Use an MCP client that supports elicitation (MCP 2025-06-18) to "
      "approve commands.",
      what);
}

void ApprovalElicitor::set_client_capabilities(const json& params) {
  enabled_ = params.is_object() && params.contains("capabilities") && params["capabilities"].is_object() &&
             params["capabilities"].contains("elicitation") && params["capabilities"]["elicitation"].is_object();
}

std::string ApprovalElicitor::ask(const ApprovalQuestion& q, std::function<void(policy::Decision)> answer) {
  if (!enabled_) {
    answer(policy::Decision::kDenied);
    return {};
  }
  std::string id = fmt::format("uexec-approval-{}", next_++);
  pending_[id] = std::move(answer);
  send_(encode_request(id, "elicitation/create", elicitation_params(q)));
  return id;
}

bool ApprovalElicitor::on_response(const json& msg) {
  if (!msg.is_object() || !msg.contains("id") || !msg["id"].is_string()) return false;
  auto it = pending_.find(msg["id"].get<std::string>());
  if (it == pending_.end()) return false;
  auto answer = std::move(it->second);
  pending_.erase(it);
  answer(decision_from_elicitation(msg));
  return true;
}

void ApprovalElicitor::withdraw(const std::string& id) {
  if (pending_.erase(id) == 0) return;
  send_(encode_notification("notifications/cancelled", {{"requestId", id}, {"reason", "the approval is no longer needed"}}));
}

void ApprovalElicitor::deny_all() {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, answer] : pending) {
    send_(encode_notification("notifications/cancelled", {{"requestId", id}, {"reason", "uexec is shutting down"}}));
    answer(policy::Decision::kDenied);
  }
}

}  // namespace uexec::rpc
