#include "rpc/approval_broker.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "base/log.h"
#include "rpc/connection.h"
#include "rpc/json_rpc.h"
#include "rpc/process_table.h"
#include "rpc/verdict_json.h"

namespace uexec::rpc {

const char* native_decision_name(policy::Decision d) noexcept {
  switch (d) {
    case policy::Decision::kApproved: return "approved";
    case policy::Decision::kApprovedForSession: return "approvedForSession";
    case policy::Decision::kAbort: return "abort";
    case policy::Decision::kDenied: break;
  }
  return "denied";
}

policy::Decision native_decision(const nlohmann::json& msg) {
  if (!msg.contains("result") || !msg["result"].is_object() || !msg["result"].contains("decision") ||
      !msg["result"]["decision"].is_string())
    return policy::Decision::kDenied;
  std::string v = msg["result"]["decision"];
  for (auto d : {policy::Decision::kApproved, policy::Decision::kApprovedForSession, policy::Decision::kAbort})
    if (v == native_decision_name(d)) return d;
  return policy::Decision::kDenied;
}

std::string PendingApprovals::add(Answer answer, std::unique_ptr<loop::Timer> timeout) {
  std::string id = fmt::format("approval-{}", next_++);
  pending_[id] = Pending{std::move(answer), std::move(timeout)};
  return id;
}

PendingApprovals::Answer PendingApprovals::take(const std::string& id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return nullptr;
  Answer answer = std::move(it->second.answer);
  pending_.erase(it);
  return answer;
}

void PendingApprovals::deny_all() {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) p.answer(policy::Decision::kDenied);
}

policy::Approver ApprovalBroker::approver_for(const std::string& session_id) {
  return [this, session_id](const policy::ApprovalRequest& req, std::function<void(policy::Decision)> answer) {
    ProtocolSession* s = table_.find_session(session_id);
    if (!s || !s->connection) return answer(policy::Decision::kDenied);
    std::string command =
        req.command.size() == 3 && req.command[1] == "-lc" ? req.command[2] : fmt::format("{}", fmt::join(req.command, " "));
    auto timeout = std::make_unique<loop::Timer>(loop_);
    loop::Timer* timer = timeout.get();
    std::string aid = s->approvals.add(std::move(answer), std::move(timeout));
    nlohmann::json params = {{"approvalId", aid},
                             {"sessionId", session_id},
                             {"kind", req.purpose == "sandbox_retry" ? "retryUnsandboxed" : "exec"},
                             {"argv", req.command},
                             {"command", command},
                             {"cwd", req.cwd},
                             {"sandbox", req.proposed_sandbox},
                             {"reason", req.reason},
                             {"justification", req.purpose == "escalation" ? nlohmann::json(req.reason) : nlohmann::json()}};
    if (req.denial) params["denial"] = denial_json(*req.denial);
    timer->start(timeout_, [this, session_id, aid] {
      ProtocolSession* x = table_.find_session(session_id);
      if (!x) return;
      auto done = x->approvals.take(aid);  // destroys this timer: nothing of it is used after
      if (!done) return;
      UEXEC_LOG(kInfo, "approval {} of session {}: no answer in time, denied", aid, session_id);
      done(policy::Decision::kDenied);
    });
    s->connection->send_raw(encode_request(aid, "approval/request", std::move(params)));
  };
}

void ApprovalBroker::on_response(ProtocolSession& session, const nlohmann::json& msg) {
  if (!msg.contains("id") || !msg["id"].is_string()) return;
  auto answer = session.approvals.take(msg["id"].get<std::string>());
  if (answer) answer(native_decision(msg));
}

}  // namespace uexec::rpc
