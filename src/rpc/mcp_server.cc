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
    : exec_(exec), tools_(exec), send_(std::move(send)), elicitor_(send_) {}

// The orchestrator of this client's exec_command calls, when approvals apply (a sandbox and a
// policy other than never); null otherwise. Its approver asks the client (elicitation/create)
// or, for a client that cannot be asked, answers denied and leaves a note for the result.
std::shared_ptr<policy::ToolOrchestrator> McpServer::orchestrator() {
  if (exec_.approval_policy() == policy::ApprovalPolicy::kNever) return nullptr;
  if (!orchestrator_)
    orchestrator_ = std::make_shared<policy::ToolOrchestrator>(
        [this](const policy::ApprovalRequest& req, std::function<void(policy::Decision)> answer) {
          ApprovalQuestion q = question_for(req);
          if (!elicitor_.enabled()) {
            if (approval_notes_.size() >= 64) approval_notes_.clear();  // bounded: notes are best effort
            approval_notes_[q.command] = approval_needed_note(q);
          }
          elicitor_.ask(q, std::move(answer));
        });
  return orchestrator_;
}

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

void McpServer::handle_line(std::string_view line) {
  McpMessage m = decode_mcp_line(line);
  switch (m.kind) {
    case McpMessage::kInvalid: return error(m.id, m.code, m.message);
    case McpMessage::kResponse: elicitor_.on_response(m.response); return;  // to our elicitation/create
    case McpMessage::kNotification: return handle_notification(m.method, m.params);
    case McpMessage::kRequest: return handle_request(m.id, m.method, m.params);
  }
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
    elicitor_.set_client_capabilities(params);
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
  std::shared_ptr<policy::ToolOrchestrator> approvals;
  std::string cmd;
  if (name == "exec_command") {
    approvals = orchestrator();
    if (approvals && args.is_object() && args.contains("cmd") && args["cmd"].is_string()) cmd = args["cmd"];
  }
  bool known = tools_.call(
      name, args, structured,
      [this, id, key, cmd](json result) {
        pending_.erase(key);
        if (auto note = approval_notes_.find(cmd); !cmd.empty() && note != approval_notes_.end()) {
          if (result.contains("content") && result["content"].is_array() && !result["content"].empty() &&
              result["content"][0].contains("text") && result["content"][0]["text"].is_string())
            result["content"][0]["text"] = result["content"][0]["text"].get<std::string>() + "\n" + note->second;
          approval_notes_.erase(note);
        }
        reply(id, std::move(result));
      },
      &cid, std::move(on_delta), std::move(approvals));
  if (!known) return error(id, kInvalidParams, "Unknown tool: " + name, {{"kind", "invalidParams"}, {"field", "name"}});
  if (cid != 0) pending_[key] = cid;
}

}  // namespace uexec::rpc
