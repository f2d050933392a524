// mcp_elicitation.h: approvals over MCP (docs/sandbox.md §6.5): the question uexec asks an MCP
// client with `elicitation/create` (MCP 2025-06-18), and what its answer means.
//
//   uexec ─{"id":"uexec-approval-1","method":"elicitation/create","params":{message, requestedSchema}}─► client
//     requestedSchema = {type:"object", required:["decision"], properties:{decision:{type:"string",
//                        enum:["approved","approved_for_session","denied","abort"], enumNames:[…]}}}
//   client ─{"id":"uexec-approval-1","result":{"action":"accept","content":{"decision":"approved"}}}─► uexec
//
// `accept` with one of the four decisions is that decision. `decline`, `cancel`, a JSON-RPC
// error, or an answer of any other shape counts as denied. A client that did not declare the
// `elicitation` capability in initialize is never asked: the answer is denied at once, and the
// front door adds approval_needed_note() to the tool result so the agent learns why.
// ApprovalElicitor keeps the questions in flight; McpServer (its own orchestrator's approver)
// and McpRelay (the daemon's approval/request, relayed) each own one. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/orchestrator.h"

namespace uexec::rpc {

using nlohmann::json;

// What a person is asked to decide, in words.
struct ApprovalQuestion {
  std::string purpose;  // "exec" | "escalation" | "sandbox_retry"
  std::string command;  // the shell text (bash -lc's script), or the argv joined
  std::string cwd;
  std::string reason;   // the orchestrator's reason, or the model's justification
  std::string denial;   // what attempt 1 ran into, described; empty when none
};

// The question of an orchestrator's ApprovalRequest (argv `bash -lc SCRIPT` reads as SCRIPT).
ApprovalQuestion question_for(const policy::ApprovalRequest& req);
// The params of elicitation/create for `q`: {message, requestedSchema}.
json elicitation_params(const ApprovalQuestion& q);
// The decision a JSON-RPC response to elicitation/create carries (denied unless accepted with
// one of the four decisions).
policy::Decision decision_from_elicitation(const json& response);
// The text added to a tool result when approval was needed but the client cannot be asked.
std::string approval_needed_note(const ApprovalQuestion& q);

class ApprovalElicitor {
 public:
  // `send` writes one JSON-RPC message to the MCP client.
  explicit ApprovalElicitor(std::function<void(std::string)> send) : send_(std::move(send)) {}

  // Whether the client declared `elicitation` (from its initialize params).
  void set_client_capabilities(const json& initialize_params);
  bool enabled() const noexcept { return enabled_; }

  // Asks the client; `answer` runs exactly once: now (denied) when not enabled, else when the
  // response comes, or with denied at withdraw_all(). Returns the request id ("" when not sent).
  std::string ask(const ApprovalQuestion& q, std::function<void(policy::Decision)> answer);
  // A JSON-RPC response from the client: true when it answered one of our questions.
  bool on_response(const json& msg);
  // Withdraws one question (notifications/cancelled to the client); its answer never runs.
  void withdraw(const std::string& request_id);
  // Every question in flight: withdrawn from the client and answered denied.
  void deny_all();
  std::size_t pending() const noexcept { return pending_.size(); }

 private:
  std::function<void(std::string)> send_;
  bool enabled_ = false;
  std::uint64_t next_ = 1;
  std::map<std::string, std::function<void(policy::Decision)>> pending_;
};

}  // namespace uexec::rpc
