#include "rpc/mcp_protocol.h"

#include <fmt/core.h>

#include "base/log.h"
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

McpEndpoint::McpEndpoint(std::function<void(std::string)> send, std::string instructions)
    : send_(std::move(send)), elicitor_(send_), instructions_(std::move(instructions)) {}

void McpEndpoint::reply(const json& id, json result) {
  send_(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}.dump(-1, ' ', false,
                                                                               json::error_handler_t::replace));
}

void McpEndpoint::error(const json& id, int code, const std::string& message, json data) {
  json err = {{"code", code}, {"message", message}};
  if (!data.is_null()) err["data"] = std::move(data);
  send_(json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(err)}}.dump(-1, ' ', false,
                                                                           json::error_handler_t::replace));
}

void McpEndpoint::handle_oversize(std::size_t limit) {
  error(nullptr, kInvalidRequest, fmt::format("message larger than {} bytes", limit),
        {{"kind", "messageTooLarge"}, {"limit", limit}});
}

void McpEndpoint::handle_line(std::string_view line) {
  McpMessage m = decode_mcp_line(line);
  switch (m.kind) {
    case McpMessage::kInvalid: return error(m.id, m.code, m.message);
    case McpMessage::kResponse: elicitor_.on_response(m.response); return;  // to our elicitation/create
    case McpMessage::kNotification: return handle_notification(m.method, m.params);
    case McpMessage::kRequest: return handle_request(m.id, m.method, m.params);
  }
}

void McpEndpoint::handle_notification(const std::string& method, const json& params) {
  if (method == "notifications/cancelled") {
    if (params.is_object() && params.contains("requestId")) cancel(params["requestId"].dump());
    return;
  }
  if (method == "notifications/initialized") return;
  UEXEC_LOG(kInfo, "ignoring notification {}", method);
}

void McpEndpoint::handle_request(const json& id, const std::string& method, const json& params) {
  if (method == "initialize") {
    if (params.is_object() && params.contains("protocolVersion") && params["protocolVersion"].is_string()) {
      std::string v = params["protocolVersion"];
      version_ = (v == "2025-06-18" || v == "2025-03-26" || v == "2024-11-05") ? v : kDefaultVersion;
    }
    initialized_ = true;
    elicitor_.set_client_capabilities(params);
    return reply(id, {{"protocolVersion", version_},
                      {"capabilities", {{"tools", {{"listChanged", false}}}}},
                      {"serverInfo", {{"name", "uexec"}, {"version", "0.1.0"}}},
                      {"instructions", instructions_}});
  }
  if (!initialized_) return error(id, kInvalidRequest, "the server is not initialized: send initialize first");
  if (method == "ping") return reply(id, json::object());
  if (method == "tools/list") return reply(id, {{"tools", AgentTools::tools_list(version_)}});
  if (method != "tools/call") return error(id, kMethodNotFound, "Method not found: " + method);
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
    return error(id, kInvalidParams, "tools/call needs params.name");
  json args = params.contains("arguments") ? params["arguments"] : json::object();
  // A progressToken asks for progress: the output streams as notifications/progress.
  json token;
  if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken")) {
    const auto& t = params["_meta"]["progressToken"];
    if (t.is_string() || t.is_number_integer()) token = t;
  }
  call_tool(id, params["name"].get<std::string>(), args, token);
}

}  // namespace uexec::rpc
