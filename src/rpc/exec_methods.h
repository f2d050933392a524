// exec_methods.h: the agent tools on the native protocol (docs/protocol.md §4.6): exec/command,
// exec/writeStdin, exec/listSessions, exec/killSession and exec/readOutput, the same tools and
// results as MCP's (AgentTools), plus the process views of the agent sessions they start.
//
// An agent session started by a protocol session's exec/* call becomes a process of that
// session, named by its decimal id, so process/list, subscribe, read and snapshot (the web UI,
// `uexec ls`) see it. The owner is always the calling session, passed along: a session the
// call starts before it returns is adopted right after (from the AgentService's event log, by
// the call's id); one it starts later (after an approval) is adopted when the AgentService
// reports it, by the call's id among the connections' pending calls.
// Loop thread only.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/agent_service.h"
#include "rpc/agent_tools.h"
#include "rpc/approval_broker.h"
#include "rpc/connection.h"
#include "rpc/process_table.h"

namespace uexec::rpc {

class ExecMethods {
 public:
  // The agent service behind exec/* (null: none).
  agent::AgentService* service() const noexcept { return exec_; }
  // `exec` may be null: then every exec/* method answers "unsupported".
  ExecMethods(agent::AgentService* exec, session::ProcessManager& pm, ProcessTable& table, ApprovalBroker& approvals);
  ~ExecMethods();
  ExecMethods(const ExecMethods&) = delete;
  ExecMethods& operator=(const ExecMethods&) = delete;

  // Runs agent tool `tool` for `c`'s session.
  void call(Connection& c, const nlohmann::json& id, const std::string& tool, const nlohmann::json& params);
  // Ends a waiting call without a reply (its connection went).
  void cancel(agent::CallId call);

 private:
  // Adopts agent session `agent_id` as a process of `owner`, unless an MCP call started it
  // (no owner) or the id is taken.
  void adopt(long agent_id, ProtocolSession& owner);
  // The sessions call `call` started before it returned (the AgentService's event log).
  void adopt_started_by(agent::CallId call, ProtocolSession& owner);
  // A session started later by a pending call: adopted by that call's session.
  void on_session_started(long agent_id, agent::CallId call);

  agent::AgentService* exec_;
  std::unique_ptr<AgentTools> tools_;
  session::ProcessManager& pm_;
  ProcessTable& table_;
  ApprovalBroker& approvals_;
};

}  // namespace uexec::rpc
