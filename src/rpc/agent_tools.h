// agent_tools.h: the agent tools as JSON: argument decoding (strict: unknown properties are
// refused; integers may come as decimal strings), the tool list with full input schemas,
// and results as MCP CallToolResult objects (the Codex text envelope plus
// structuredContent). Shared by `uexec mcp` (tools/call) and the native exec/* methods.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/agent_service.h"

namespace uexec::rpc {

using nlohmann::json;

class AgentTools {
 public:
  using Done = std::function<void(json call_tool_result)>;
  explicit AgentTools(agent::AgentService& exec) : exec_(exec) {}

  // Runs tool `name` (exec_command, write_stdin, list_sessions, kill_session, read_output).
  // `done` gets the CallToolResult, possibly before this returns; *call_id is the call to
  // cancel (0 when none is pending). False when no tool has that name.
  // `on_delta`, when set, streams exec_command / write_stdin output while the call waits.
  // `approvals`: who decides exec_command's approvals (ExecParams::approvals).
  bool call(const std::string& name, const json& args, bool structured, Done done, agent::CallId* call_id,
            std::function<void(std::string_view)> on_delta = {},
            std::shared_ptr<policy::ToolOrchestrator> approvals = {});
  void cancel(agent::CallId id) { exec_.cancel(id); }

  // The tools for MCP revision `version`; with `structured`, each declares its outputSchema.
  static json tools_list(const std::string& version, bool structured, long default_output_tokens);
  static json tool_result(const agent::Response& r, bool structured);
  // [{pid, comm, command, killed}]: a session's lingering processes, for tools and process/*.
  static json lingering(const std::vector<session::LingeringProcess>& l);
  static json error_result(const std::string& text);
  // The argument of tool `name` that becomes a C string (exec_command's cmd, workdir, shell,
  // prefix_rule, additional_permissions) and holds a NUL byte (rpc/c_strings.h), or nullopt.
  // call() refuses such a call; the native exec/* methods check first, to answer -32602.
  static std::optional<std::string> field_with_nul(const std::string& name, const json& args);

 private:
  agent::AgentService& exec_;
};

}  // namespace uexec::rpc
