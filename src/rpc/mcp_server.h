// mcp_server.h: the MCP front door (`uexec mcp`): JSON-RPC 2.0 over NDJSON on stdio,
// serving the agent tools of agent::AgentService (docs/protocol.md §6).
//
// The only JSON-aware layer: each line is decoded and its envelope checked, and initialize
// gates the rest (mcp_protocol.h, shared with McpRelay); it maps tools/call arguments
// (strictly: unknown properties are refused, integers may come as decimal strings) to
// AgentService calls. Tool failures are isError results with Codex's
// wording; protocol failures are JSON-RPC errors; the server stays up on any input.
// tools/call replies may come in any order; notifications/cancelled ends a call's wait
// without a reply, and the process keeps running.
// Approvals (docs/sandbox.md §6.5): when the AgentService has a sandbox and an approval policy other
// than never, exec_command runs through one ToolOrchestrator per server (its
// approved-for-session cache lives as long as the client), whose questions go to the client as
// elicitation/create if it declared `elicitation` (mcp_elicitation.h); otherwise each answer is
// denied and the tool result says that approval was needed. Loop thread only.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/agent_service.h"
#include "rpc/agent_tools.h"
#include "rpc/mcp_elicitation.h"
#include "rpc/mcp_protocol.h"

namespace uexec::rpc {

using nlohmann::json;

class McpServer final : public McpEndpoint {
 public:
  // `send` writes one JSON message (one line). Lines go to handle_line / handle_oversize.
  McpServer(agent::AgentService& exec, std::function<void(std::string)> send);

  // Questions still waiting for the client (it went away): withdrawn, answered denied.
  void deny_pending_approvals() { elicitor_.deny_all(); }

 private:
  void call_tool(const json& id, const std::string& name, const json& args, const json& progress_token) override;
  void cancel(const std::string& request_key) override;

  std::shared_ptr<policy::ToolOrchestrator> orchestrator();

  agent::AgentService& exec_;
  AgentTools tools_;
  std::shared_ptr<policy::ToolOrchestrator> orchestrator_;  // made at the first exec_command that needs it
  // Approvals that were needed but could not be asked (no elicitation): the note for the
  // result of the exec_command with that command text.
  std::map<std::string, std::string> approval_notes_;
  std::map<std::string, agent::CallId> pending_;  // request id (dumped) → call
};

}  // namespace uexec::rpc
