#include "rpc/mcp_protocol.h"

#include <fmt/core.h>

#include "rpc/agent_tools.h"
#include "rpc/json_depth.h"

namespace uexec::rpc {

namespace {

constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601, kInvalidParams = -32602;

}  // namespace

McpMessage decode_mcp_line(std::string_view line) {
  McpMessage m;
  auto invalid = [&m](json id, int code, std::string message) {
    m.kind = McpMessage::kInvalid;
    m.id = std::move(id);
    m.code = code;
    m.message = std::move(message);
    return std::move(m);
  };
  if (json_nested_deeper_than(line, kMaxJsonDepth))
    return invalid(nullptr, kParseError, fmt::format("Parse error: nested deeper than {} levels", kMaxJsonDepth));
  json msg = json::parse(line.begin(), line.end(), nullptr, false);
  if (msg.is_discarded()) return invalid(nullptr, kParseError, "Parse error: the line is not valid JSON");
  if (!msg.is_object()) return invalid(nullptr, kInvalidRequest, "Invalid Request: expected a JSON object");
  json id = msg.contains("id") ? msg["id"] : json();
  bool valid_id = id.is_null() || id.is_string() || id.is_number_integer();
  if (!msg.contains("jsonrpc") || msg["jsonrpc"] != "2.0")
    return invalid(valid_id ? id : json(), kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  if (!valid_id) return invalid(nullptr, kInvalidRequest, "Invalid Request: id must be a string or an integer");
  if (!msg.contains("method")) {
    m.kind = McpMessage::kResponse;
    m.response = std::move(msg);
    return m;
  }
  if (!msg["method"].is_string()) return invalid(id, kInvalidRequest, "Invalid Request: method must be a string");
  json params = msg.contains("params") ? msg["params"] : json::object();
  if (!params.is_object() && !params.is_array()) return invalid(id, kInvalidParams, "params must be an object");
  m.kind = msg.contains("id") ? McpMessage::kRequest : McpMessage::kNotification;
  m.id = std::move(id);
  m.method = msg["method"].get<std::string>();
  m.params = std::move(params);
  return m;
}

McpLifecycle::Step McpLifecycle::on_request(const std::string& method, const json& params,
                                            std::string_view instructions, ApprovalElicitor& elicitor) {
  auto reply = [](json result) {
    Step s;
    s.kind = Step::kReply;
    s.result = std::move(result);
    return s;
  };
  auto fail = [](int code, std::string message) {
    Step s;
    s.code = code;
    s.message = std::move(message);
    return s;
  };
  if (method == "initialize") {
    if (params.is_object() && params.contains("protocolVersion") && params["protocolVersion"].is_string()) {
      std::string v = params["protocolVersion"];
      version_ = (v == "2025-06-18" || v == "2025-03-26" || v == "2024-11-05") ? v : kDefaultVersion;
    }
    initialized_ = true;
    elicitor.set_client_capabilities(params);
    return reply({{"protocolVersion", version_},
                  {"capabilities", {{"tools", {{"listChanged", false}}}}},
                  {"serverInfo", {{"name", "uexec"}, {"version", "0.1.0"}}},
                  {"instructions", std::string(instructions)}});
  }
  if (!initialized_) return fail(kInvalidRequest, "the server is not initialized: send initialize first");
  if (method == "ping") return reply(json::object());
  if (method == "tools/list") return reply({{"tools", AgentTools::tools_list(version_)}});
  if (method != "tools/call") return fail(kMethodNotFound, "Method not found: " + method);
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
    return fail(kInvalidParams, "tools/call needs params.name");
  Step call;
  call.kind = Step::kToolCall;
  call.tool = params["name"].get<std::string>();
  call.args = params.contains("arguments") ? params["arguments"] : json::object();
  // A progressToken asks for progress: the output streams as notifications/progress.
  if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken")) {
    const auto& t = params["_meta"]["progressToken"];
    if (t.is_string() || t.is_number_integer()) call.progress_token = t;
  }
  return call;
}

}  // namespace uexec::rpc
