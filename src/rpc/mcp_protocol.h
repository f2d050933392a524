// mcp_protocol.h: what both MCP front doors share (docs/protocol.md §6): McpServer (`uexec mcp`,
// the tools in this process) and McpRelay (`uexec mcp --connect`, the tools in the daemon).
//
// The JSON-RPC 2.0 envelope is json_rpc.h's, under MCP's dialect (an unparsable line is
// -32700 with id null); McpEndpoint, the base of both, does the MCP lifecycle around the
// tools (initialize, the gate, ping, tools/list, cancellation), and the front door runs the
// tools. Loop thread only.
#pragma once

#include "base/config.h"

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rpc/mcp_elicitation.h"

namespace uexec::rpc {

using nlohmann::json;

// The half of an MCP front door that does not depend on where the tools run: it decodes each
// client line, answers initialize (the protocol version, the client's capabilities for the
// elicitor) and gates the rest on it, answers ping and tools/list, routes responses to the
// elicitor, and hands tools/call and notifications/cancelled to the front door.
class McpEndpoint {
 public:
  // The MCP revisions served, newest first: an initialize asking for one of them gets it back,
  // any other request gets the newest (the client then decides whether it can go on).
  static constexpr const char* kVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  static constexpr const char* kDefaultVersion = kVersions[0];
  // `send` writes one message (one line) to the client; `instructions` goes into
  // initialize's result.
  McpEndpoint(std::function<void(std::string)> send, std::string instructions);
  virtual ~McpEndpoint() = default;
  McpEndpoint(const McpEndpoint&) = delete;
  McpEndpoint& operator=(const McpEndpoint&) = delete;

  // Off by default: Codex and Claude Code show the model JSON.stringify(structuredContent)
  // whenever it is there (escaped output, two id fields) and Gemini CLI ignores it, so every
  // model reads the text envelope best; a client that wants the data asks for it
  // (`uexec mcp --structured-content`). docs/protocol.md §6.
  void set_structured_content(bool on) noexcept { structured_content_ = on; }
  // The output budget tools/list declares as max_output_tokens' default: the one the sessions'
  // service applies to a call that names none (the config's agent.max_output_tokens).
  void set_default_output_tokens(long tokens) noexcept { default_output_tokens_ = tokens; }

  // One MCP input line from the client.
  void handle_line(std::string_view line);
  // Answers an oversize line (-32600 messageTooLarge, id null).
  void handle_oversize(std::size_t limit);

 protected:
  // tools/call, decoded: `args` is {} when absent, `progress_token` null unless the client
  // asked for progress.
  virtual void call_tool(const json& id, const std::string& name, const json& args, const json& progress_token) = 0;
  // notifications/cancelled for the request whose id dumps to `request_key`.
  virtual void cancel(const std::string& request_key) = 0;

  void reply(const json& id, json result);
  void error(const json& id, int code, const std::string& message, json data = nullptr);
  // Tool results carry structuredContent, and tools an outputSchema: when asked for
  // (set_structured_content) and the revision has them (2025-06-18 and later; revisions are dates).
  bool structured() const noexcept { return structured_content_ && version_ >= "2025-06-18"; }

  std::function<void(std::string)> send_;
  ApprovalElicitor elicitor_;

 private:
  void handle_request(const json& id, const std::string& method, const json& params);
  void handle_notification(const std::string& method, const json& params);

  std::string instructions_;
  bool initialized_ = false;
  std::string version_ = kDefaultVersion;
  bool structured_content_ = false;
  long default_output_tokens_ = base::AgentConfig{}.max_output_tokens;
};

}  // namespace uexec::rpc
