// approval_broker.h: approvals on the native protocol (docs/protocol.md §4.8): the server asks
// a protocol session's client with an approval/request, and the client's response decides.
//
//   exec/* call ─► ToolOrchestrator ─► the session's Approver ─► approval/request to the client
//   client ─► response {decision} ─► ApprovalBroker::on_response ─► the orchestrator's answer
//   no answer within approval_timeout, a detach, the session's end ─► denied
//
// A session's requests still awaiting an answer are its PendingApprovals. The decisions'
// names on the wire (approved, approvedForSession, denied, abort) are written here once, for
// the server (reading them) and McpRelay (writing them).
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "loop/loop.h"
#include "loop/timer.h"
#include "policy/orchestrator.h"

namespace uexec::rpc {

class ProcessTable;
struct ProtocolSession;

// A decision as the native protocol names it ("approvedForSession").
const char* native_decision_name(policy::Decision d) noexcept;
// The decision a client's answer names; anything else (or a malformed answer) is denied.
policy::Decision native_decision(const nlohmann::json& response);

// The approval/requests of one protocol session that await an answer.
class PendingApprovals {
 public:
  using Answer = std::function<void(policy::Decision)>;
  // Keeps `answer` under a new id ("approval-N"), denied by `timeout` if it fires first.
  std::string add(Answer answer, std::unique_ptr<loop::Timer> timeout);
  // The answer kept under `id`, taken out; null when there is none (unknown, answered).
  Answer take(const std::string& id);
  // Each pending approval counts as denied (a detach, the session's end).
  void deny_all();

 private:
  struct Pending {
    Answer answer;
    std::unique_ptr<loop::Timer> timeout;
  };
  std::map<std::string, Pending> pending_;
  std::uint64_t next_ = 1;
};

class ApprovalBroker {
 public:
  ApprovalBroker(ProcessTable& table, loop::Loop& loop, std::chrono::milliseconds timeout) noexcept
      : table_(table), loop_(loop), timeout_(timeout) {}

  // Asks protocol session `session_id`'s client; denied at once when the session or its
  // connection is gone.
  policy::Approver approver_for(const std::string& session_id);
  // A response from `session`'s client: the answer to one of our approval/requests. An unknown
  // id or a second answer is ignored.
  static void on_response(ProtocolSession& session, const nlohmann::json& msg);

 private:
  ProcessTable& table_;
  loop::Loop& loop_;
  std::chrono::milliseconds timeout_;
};

}  // namespace uexec::rpc
