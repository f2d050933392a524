// mcp_server.h: the MCP front door (`uexec mcp`): JSON-RPC 2.0 over NDJSON on stdio,
// serving the agent tools of agent::ExecService (protocol.md §6).
//
// The only JSON-aware layer: it decodes each line (JSON exceptions stop here: an
// unparsable line is -32700 with id null), checks the envelope, gates on initialize, and
// maps tools/call arguments (strictly: unknown properties are refused, integers may come as
// decimal strings) to ExecService calls. Tool failures are isError results with Codex's
// wording; protocol failures are JSON-RPC errors; the server stays up on any input.
// tools/call replies may come in any order; notifications/cancelled ends a call's wait
// without a reply, and the process keeps running. Loop thread only.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/exec_service.h"
#include "rpc/agent_tools.h"

namespace uexec::rpc {

using nlohmann::json;

class McpServer {
 public:
  // `send` writes one JSON message (one line).
  McpServer(agent::ExecService& exec, std::function<void(std::string)> send);

  // Handles one input line.
  void handle_line(std::string_view line);
  // Answers an oversize line (-32600 messageTooLarge, id null).
  void handle_oversize(std::size_t limit);

  static constexpr const char* kDefaultVersion = "2025-06-18";

 private:
  void handle_request(const json& id, const std::string& method, const json& params);
  void handle_notification(const std::string& method, const json& params);
  void call_tool(const json& id, const std::string& name, const json& args, const json& progress_token);
  void reply(const json& id, json result);
  void error(const json& id, int code, const std::string& message, json data = nullptr);

  AgentTools tools_;
  std::function<void(std::string)> send_;
  bool initialized_ = false;
  std::string version_ = kDefaultVersion;
  std::map<std::string, agent::CallId> pending_;  // request id (dumped) → call
};

}  // namespace uexec::rpc
