// mcp_protocol.h: what both MCP front doors share (protocol.md §6): McpServer (`uexec mcp`,
// the tools in this process) and McpRelay (`uexec mcp --connect`, the tools in the daemon).
//
// decode_mcp_line checks one line's JSON-RPC 2.0 envelope (JSON exceptions stop here: an
// unparsable line is -32700 with id null); McpLifecycle answers initialize (the protocol
// version, the client's capabilities), gates everything else on it, answers ping and
// tools/list, and decodes tools/call for the front door to run. Pure functions of their
// input and state: no I/O, no loop.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rpc/mcp_elicitation.h"

namespace uexec::rpc {

using nlohmann::json;

// One line from an MCP client, its JSON-RPC 2.0 envelope checked. kInvalid carries the error to answer: `id` (null when unknown), `code`, `message`.
struct McpMessage {
  enum Kind { kRequest, kNotification, kResponse, kInvalid } kind = kInvalid;
  json id;             // requests, and invalid messages whose id could be read
  std::string method;  // requests and notifications
  json params;         // requests and notifications: an object or an array ({} when absent)
  json response;       // kResponse: the whole message
  int code = 0;        // kInvalid
  std::string message; // kInvalid
};
McpMessage decode_mcp_line(std::string_view line);

// One MCP client's lifecycle: the protocol version agreed at initialize (the client's
// capabilities go to the ApprovalElicitor), the gate before it, ping, tools/list, and the
// decoding of tools/call. Running the tool and the instructions text stay with the front door.
class McpLifecycle {
 public:
  static constexpr const char* kDefaultVersion = "2025-06-18";
  // What to do with one request.
  struct Step {
    enum Kind { kReply, kError, kToolCall } kind = kError;
    json result;                     // kReply
    int code = 0;                    // kError
    std::string message;             // kError
    std::string tool;                // kToolCall
    json args;                       // kToolCall: {} when absent
    json progress_token;             // kToolCall: null unless the client asked for progress
  };
  // `instructions` goes into initialize's result.
  Step on_request(const std::string& method, const json& params, std::string_view instructions,
                  ApprovalElicitor& elicitor);
  const std::string& version() const noexcept { return version_; }
  // Tool results carry structuredContent (MCP 2025-06-18).
  bool structured() const noexcept { return version_ == "2025-06-18"; }

 private:
  bool initialized_ = false;
  std::string version_ = kDefaultVersion;
};

}  // namespace uexec::rpc
