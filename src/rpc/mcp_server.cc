#include "rpc/mcp_server.h"

#include <fmt/core.h>

#include <cstdlib>
#include <set>

#include "rpc/agent_tools.h"
#include "rpc/json_depth.h"
#include "base/log.h"

namespace uexec::rpc {

namespace {

constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601, kInvalidParams = -32602;

}  // namespace

McpServer::McpServer(agent::ExecService& exec, std::function<void(std::string)> send)
    : tools_(exec), send_(std::move(send)) {}

void McpServer::reply(const json& id, json result) {
  send_(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}.dump(-1, ' ', false,
                                                                               json::error_handler_t::replace));
}

void McpServer::error(const json& id, int code, const std::string& message, json data) {
  json err = {{"code", code}, {"message", message}};
  if (!data.is_null()) err["data"] = std::move(data);
  send_(json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(err)}}.dump(-1, ' ', false,
                                                                           json::error_handler_t::replace));
}

void McpServer::handle_oversize(std::size_t limit) {
  error(nullptr, kInvalidRequest, fmt::format("message larger than {} bytes", limit),
        {{"kind", "messageTooLarge"}, {"limit", limit}});
}

void McpServer::handle_line(std::string_view line) {
  if (json_nested_deeper_than(line, kMaxJsonDepth))
    return error(nullptr, kParseError, fmt::format("Parse error: nested deeper than {} levels", kMaxJsonDepth));
  json msg = json::parse(line.begin(), line.end(), nullptr, false);
  if (msg.is_discarded()) return error(nullptr, kParseError, "Parse error: the line is not valid JSON");
  if (!msg.is_object()) return error(nullptr, kInvalidRequest, "Invalid Request: expected a JSON object");
  json id = msg.contains("id") ? msg["id"] : json();
  bool valid_id = id.is_null() || id.is_string() || id.is_number_integer();
  if (!msg.contains("jsonrpc") || msg["jsonrpc"] != "2.0")
    return error(valid_id ? id : json(), kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  if (!valid_id) return error(nullptr, kInvalidRequest, "Invalid Request: id must be a string or an integer");
  if (!msg.contains("method")) return;  // a response to a request we never sent: ignore
  if (!msg["method"].is_string()) return error(id, kInvalidRequest, "Invalid Request: method must be a string");
  std::string method = msg["method"].get<std::string>();
  json params = msg.contains("params") ? msg["params"] : json::object();
  if (!params.is_object() && !params.is_array()) return error(id, kInvalidParams, "params must be an object");
  if (!msg.contains("id")) return handle_notification(method, params);
  handle_request(id, method, params);
}

void McpServer::handle_notification(const std::string& method, const json& params) {
  if (method == "notifications/cancelled") {
    if (!params.is_object() || !params.contains("requestId")) return;
    auto it = pending_.find(params["requestId"].dump());
    if (it == pending_.end()) return;
    tools_.cancel(it->second);
    pending_.erase(it);
    return;
  }
  if (method == "notifications/initialized") return;
  UEXEC_LOG(kInfo, "ignoring notification {}", method);
}

void McpServer::handle_request(const json& id, const std::string& method, const json& params) {
  if (method == "initialize") {
    if (params.is_object() && params.contains("protocolVersion") && params["protocolVersion"].is_string()) {
      std::string v = params["protocolVersion"];
      version_ = (v == "2025-06-18" || v == "2025-03-26" || v == "2024-11-05") ? v : kDefaultVersion;
    }
    initialized_ = true;
    return reply(id, {{"protocolVersion", version_},
                      {"capabilities", {{"tools", {{"listChanged", false}}}}},
                      {"serverInfo", {{"name", "uexec"}, {"version", "0.1.0"}}},
                      {"instructions",
                       "uexec runs shell commands in long-lived sessions. exec_command starts one and returns its "
                       "output after a yield window (or when it exits, or an `until` condition holds); while it runs, "
                       "poll or type with write_stdin, and use list_sessions, read_output and kill_session."}});
  }
  if (!initialized_) return error(id, kInvalidRequest, "the server is not initialized: send initialize first");
  if (method == "ping") return reply(id, json::object());
  if (method == "tools/list") return reply(id, {{"tools", AgentTools::tools_list(version_)}});
  if (method == "tools/call") {
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
      return error(id, kInvalidParams, "tools/call needs params.name");
    json args = params.contains("arguments") ? params["arguments"] : json::object();
    // A progressToken asks for progress: the output streams as notifications/progress.
    json token;
    if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken")) {
      const auto& t = params["_meta"]["progressToken"];
      if (t.is_string() || t.is_number_integer()) token = t;
    }
    return call_tool(id, params["name"].get<std::string>(), args, token);
  }
  error(id, kMethodNotFound, "Method not found: " + method);
}

void McpServer::call_tool(const json& id, const std::string& name, const json& args, const json& progress_token) {
  bool structured = version_ == "2025-06-18";
  std::string key = id.dump();
  agent::CallId cid = 0;
  std::function<void(std::string_view)> on_delta;
  if (!progress_token.is_null()) {
    // The call ends (replied or cancelled) before this server goes, so `this` outlives it.
    on_delta = [this, progress_token, n = 0L](std::string_view text) mutable {
      json note = {{"jsonrpc", "2.0"},
                   {"method", "notifications/progress"},
                   {"params", {{"progressToken", progress_token}, {"progress", ++n}, {"message", text}}}};
      send_(note.dump());
    };
  }
  bool known = tools_.call(
      name, args, structured,
      [this, id, key](json result) {
        pending_.erase(key);
        reply(id, std::move(result));
      },
      &cid, std::move(on_delta));
  if (!known) return error(id, kInvalidParams, "Unknown tool: " + name, {{"kind", "invalidParams"}, {"field", "name"}});
  if (cid != 0) pending_[key] = cid;
}

}  // namespace uexec::rpc
