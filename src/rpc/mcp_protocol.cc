#include "rpc/mcp_protocol.h"

#include <fmt/core.h>

#include "base/log.h"
#include "rpc/agent_tools.h"
#include "rpc/json_rpc.h"

namespace uexec::rpc {

McpEndpoint::McpEndpoint(std::function<void(std::string)> send, std::string instructions)
    : send_(std::move(send)), elicitor_(send_), instructions_(std::move(instructions)) {}

void McpEndpoint::reply(const json& id, json result) { send_(encode_result(id, std::move(result))); }

void McpEndpoint::error(const json& id, int code, const std::string& message, json data) {
  send_(encode_error(id, code, message, std::move(data)));
}

void McpEndpoint::handle_oversize(std::size_t limit) { send_(encode_invalid(oversize_message(limit, kMcpDialect))); }

void McpEndpoint::handle_line(std::string_view line) {
  JsonRpcMessage m = decode_json_rpc_line(line, kMcpDialect);
  switch (m.kind) {
    case JsonRpcMessage::kInvalid: return send_(encode_invalid(m));
    case JsonRpcMessage::kResponse: elicitor_.on_response(m.response); return;  // to our elicitation/create
    case JsonRpcMessage::kNotification: return handle_notification(m.method, m.params);
    case JsonRpcMessage::kRequest: return handle_request(m.id, m.method, m.params);
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
      const std::string& v = params["protocolVersion"].get_ref<const std::string&>();
      version_ = kDefaultVersion;
      for (const char* served : kVersions)
        if (v == served) version_ = v;
    }
    initialized_ = true;
    elicitor_.set_client_capabilities(params);
    return reply(id, {{"protocolVersion", version_},
                      {"capabilities", {{"tools", {{"listChanged", false}}}}},
                      {"serverInfo", {{"name", "uexec"}, {"version", "0.1.0"}}},
                      {"instructions", instructions_}});
  }
  // An unknown method is -32601 whether or not initialize came first (clients probe with
  // methods such as server/discover before it).
  if (method != "ping" && method != "tools/list" && method != "tools/call")
    return error(id, kMethodNotFound, "Method not found: " + method);
  if (!initialized_) return error(id, kInvalidRequest, "the server is not initialized: send initialize first");
  if (method == "ping") return reply(id, json::object());
  if (method == "tools/list") return reply(id, {{"tools", AgentTools::tools_list(version_, structured(), default_output_tokens_)}});
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
