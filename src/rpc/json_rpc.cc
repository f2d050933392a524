#include "rpc/json_rpc.h"

#include <fmt/core.h>

#include "rpc/json_depth.h"

namespace uexec::rpc {

namespace {

// The native protocol's words: Codex exec-server's, which its clients match on
// (docs/protocol.md §2), with a `data.kind` uexec adds.
EnvelopeWording native_wording(EnvelopeProblem p) {
  const std::string parse = "failed to parse JSON-RPC message: ";
  switch (p) {
    case EnvelopeProblem::kTooDeep:
      return {kInvalidRequest, parse + fmt::format("nested deeper than {} levels", kMaxJsonDepth),
              {{"kind", "parseError"}, {"detail", "too deep"}}};
    case EnvelopeProblem::kNotJson: return {kInvalidRequest, parse + "invalid JSON", {{"kind", "parseError"}}};
    case EnvelopeProblem::kBatch: return {kInvalidRequest, parse + "batches are not supported", {{"kind", "parseError"}}};
    case EnvelopeProblem::kNotObject: return {kInvalidRequest, parse + "not an object", {{"kind", "parseError"}}};
    case EnvelopeProblem::kBadVersion:
      return {kInvalidRequest, "invalid request: \"jsonrpc\" must be \"2.0\"", {{"kind", "invalidRequest"}}};
    case EnvelopeProblem::kBadId:
      return {kInvalidRequest, "invalid request: id must be a string or an integer", {{"kind", "invalidRequest"}}};
    case EnvelopeProblem::kBadMethod:
      return {kInvalidRequest, "invalid request: method must be a string", {{"kind", "invalidRequest"}}};
    case EnvelopeProblem::kNoMethod:
      return {kInvalidRequest, "invalid request: a message needs a method, or a result or an error",
              {{"kind", "invalidRequest"}}};
    case EnvelopeProblem::kBadParams: return {kInvalidParams, "params must be an object", {{"kind", "invalidParams"}}};
  }
  return {};
}

// MCP's words: the JSON-RPC specification's error names, no data.
EnvelopeWording mcp_wording(EnvelopeProblem p) {
  switch (p) {
    case EnvelopeProblem::kTooDeep:
      return {kParseError, fmt::format("Parse error: nested deeper than {} levels", kMaxJsonDepth), nullptr};
    case EnvelopeProblem::kNotJson: return {kParseError, "Parse error: the line is not valid JSON", nullptr};
    case EnvelopeProblem::kBatch:
    case EnvelopeProblem::kNotObject: return {kInvalidRequest, "Invalid Request: expected a JSON object", nullptr};
    case EnvelopeProblem::kBadVersion: return {kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"", nullptr};
    case EnvelopeProblem::kBadId: return {kInvalidRequest, "Invalid Request: id must be a string or an integer", nullptr};
    case EnvelopeProblem::kBadMethod: return {kInvalidRequest, "Invalid Request: method must be a string", nullptr};
    case EnvelopeProblem::kNoMethod:
      return {kInvalidRequest, "Invalid Request: a message needs a method, or a result or an error", nullptr};
    case EnvelopeProblem::kBadParams: return {kInvalidParams, "params must be an object", nullptr};
  }
  return {};
}

}  // namespace

// Codex's clients omit "jsonrpc" and never send a null id; errors about an unusable id carry
// -1; a response goes to the approval logic unchecked (it ignores ids it never sent);
// notifications' params are not looked at.
const JsonRpcDialect kNativeDialect = {
    .unknown_id = -1,
    .version_required = false,
    .null_id_valid = false,
    .responses_check_id = false,
    .array_params = false,
    .null_params_empty = true,
    .notifications_check_params = false,
    .wording = native_wording,
};

// MCP follows JSON-RPC 2.0 to the letter: "jsonrpc" required, null ids, by-position params.
const JsonRpcDialect kMcpDialect = {
    .unknown_id = nullptr,
    .version_required = true,
    .null_id_valid = true,
    .responses_check_id = true,
    .array_params = true,
    .null_params_empty = false,
    .notifications_check_params = true,
    .wording = mcp_wording,
};

JsonRpcMessage decode_json_rpc_line(std::string_view line, const JsonRpcDialect& dialect) {
  JsonRpcMessage m;
  auto invalid = [&](json id, EnvelopeProblem problem) {
    EnvelopeWording w = dialect.wording(problem);
    m.kind = JsonRpcMessage::kInvalid;
    m.id = std::move(id);
    m.code = w.code;
    m.message = std::move(w.message);
    m.data = std::move(w.data);
    return std::move(m);
  };
  // Before parsing: nlohmann::json recurses once per level (json_depth.h).
  if (json_nested_deeper_than(line, kMaxJsonDepth)) return invalid(dialect.unknown_id, EnvelopeProblem::kTooDeep);
  json msg = json::parse(line.begin(), line.end(), nullptr, false);
  if (msg.is_discarded()) return invalid(dialect.unknown_id, EnvelopeProblem::kNotJson);
  if (msg.is_array()) return invalid(dialect.unknown_id, EnvelopeProblem::kBatch);
  if (!msg.is_object()) return invalid(dialect.unknown_id, EnvelopeProblem::kNotObject);
  json id = msg.contains("id") ? msg["id"] : json();
  bool valid_id = id.is_string() || id.is_number_integer() || (dialect.null_id_valid && id.is_null());
  json usable_id = valid_id ? id : dialect.unknown_id;
  bool has_version = msg.contains("jsonrpc");
  if ((dialect.version_required && !has_version) || (has_version && msg["jsonrpc"] != "2.0"))
    return invalid(usable_id, EnvelopeProblem::kBadVersion);
  if (dialect.responses_check_id && !valid_id) return invalid(dialect.unknown_id, EnvelopeProblem::kBadId);
  if (!msg.contains("method")) {
    // Neither a request nor a response: answered (Codex answers it too), with the id when it
    // is usable, so that a client waiting on that id is not left hanging.
    if (!msg.contains("result") && !msg.contains("error")) return invalid(usable_id, EnvelopeProblem::kNoMethod);
    m.kind = JsonRpcMessage::kResponse;
    m.response = std::move(msg);
    return m;
  }
  if (!msg["method"].is_string()) return invalid(usable_id, EnvelopeProblem::kBadMethod);
  bool params_absent = !msg.contains("params") || (dialect.null_params_empty && msg["params"].is_null());
  json params = params_absent ? json::object() : msg["params"];
  bool params_ok = params.is_object() || (dialect.array_params && params.is_array());
  if (dialect.notifications_check_params && !params_ok) return invalid(id, EnvelopeProblem::kBadParams);
  m.method = msg["method"].get<std::string>();
  m.params = std::move(params);
  if (!msg.contains("id")) {
    m.kind = JsonRpcMessage::kNotification;
    return m;
  }
  if (!valid_id) return invalid(dialect.unknown_id, EnvelopeProblem::kBadId);
  if (!params_ok) return invalid(id, EnvelopeProblem::kBadParams);
  m.kind = JsonRpcMessage::kRequest;
  m.id = std::move(id);
  return m;
}

JsonRpcMessage oversize_message(std::size_t limit, const JsonRpcDialect& dialect) {
  JsonRpcMessage m;
  m.id = dialect.unknown_id;
  m.code = kInvalidRequest;
  m.message = fmt::format("message larger than {} bytes", limit);
  m.data = {{"kind", "messageTooLarge"}, {"limit", limit}};
  return m;
}

std::string encode_invalid(const JsonRpcMessage& invalid) {
  return encode_error(invalid.id, invalid.code, invalid.message, invalid.data);
}

std::string encode_json(const json& message) { return message.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string encode_result(const json& id, json result) {
  return encode_json({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

std::string encode_clean_string_result(const json& id, const std::string& key, std::string_view clean) {
  // Members are written in key order, so "result" is the message's last and the line ends
  // with the empty value's closing quote and two braces: `..."result":{"KEY":""}}`.
  std::string line = encode_result(id, {{key, ""}});
  line.insert(line.size() - 3, clean);
  return line;
}

std::string encode_error(const json& id, int code, const std::string& message, json data) {
  json err = {{"code", code}, {"message", message}};
  if (!data.is_null()) err["data"] = std::move(data);
  return encode_json({{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(err)}});
}

std::string encode_notification(const std::string& method, json params) {
  return encode_json({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

std::string encode_request(const json& id, const std::string& method, json params) {
  return encode_json({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
}

}  // namespace uexec::rpc
