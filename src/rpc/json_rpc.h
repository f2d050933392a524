// json_rpc.h: the JSON-RPC 2.0 envelope, the one both JSON front doors speak: the native
// protocol (ExecServer::Connection, docs/protocol.md §1 and §5) and MCP (McpEndpoint and McpRelay,
// docs/protocol.md §6).
//
// Everything about a message that is not its method lives here: the error codes (declared
// once), the line decoder (depth limit before parsing, parsing without exceptions, the
// envelope checks) and the encoders of the four message shapes. The two protocols check the
// same envelope with a few different rules and word their errors differently; both
// differences are data (a JsonRpcDialect), so the checks themselves are written once and the
// words each client sees stay byte-identical:
//
//   line ─► decode_json_rpc_line(line, dialect) ─► JsonRpcMessage
//             kRequest | kNotification | kResponse  (to the front door)
//             kInvalid: id, code, message, data     (answer it with encode_error)
//
// Pure: no libuv, no state. JSON exceptions never leave decode_json_rpc_line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace uexec::rpc {

using nlohmann::json;

// The JSON-RPC 2.0 error codes uexec answers with.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Server-defined: resume of a session another connection holds (Codex exec-server's code).
inline constexpr int kSessionBusy = -32010;

// What is wrong with a line's envelope, in the order the decoder checks.
enum class EnvelopeProblem {
  kTooDeep,     // nested deeper than kMaxJsonDepth (json_depth.h)
  kNotJson,     // does not parse
  kBatch,       // an array (batches are not supported)
  kNotObject,   // another non-object
  kBadVersion,  // "jsonrpc" missing (where required) or not "2.0"
  kBadId,       // an id that is neither a string nor an integer (nor null, where allowed)
  kBadMethod,   // a method that is not a string
  kNoMethod,    // neither a method (a request) nor a result or an error (a response)
  kBadParams,   // params that are not an object (or an array, where allowed)
};

// How one error reads on the wire: code, message, and `data` (null: no data member).
struct EnvelopeWording {
  int code = kInvalidRequest;
  std::string message;
  json data;
};

// The rules and words that differ between the two protocols (see kNativeDialect and
// kMcpDialect in json_rpc.cc for each one's values and why).
struct JsonRpcDialect {
  json unknown_id;                   // the id of an error whose request's id cannot be used
  bool version_required = true;      // "jsonrpc" must be present (else: only never wrong)
  bool null_id_valid = true;         // `"id": null` is an id
  bool responses_check_id = true;    // a response's id is checked before it is handed on
  bool array_params = true;          // params may be an array
  bool null_params_empty = false;    // `"params": null` reads as {}
  bool notifications_check_params = true;
  EnvelopeWording (*wording)(EnvelopeProblem) = nullptr;
};

extern const JsonRpcDialect kNativeDialect;  // uexec's native protocol (Codex exec-server's)
extern const JsonRpcDialect kMcpDialect;     // MCP

// One decoded line. For kInvalid, `id`, `code`, `message` and `data` are the error to send.
struct JsonRpcMessage {
  enum Kind { kRequest, kNotification, kResponse, kInvalid } kind = kInvalid;
  json id;             // requests, and invalid messages (the dialect's unknown_id when unusable)
  std::string method;  // requests and notifications
  json params;         // requests and notifications: an object ({} when absent), or an array
  json response;       // kResponse: the whole message
  int code = 0;        // kInvalid
  std::string message; // kInvalid
  json data;           // kInvalid: null, or {"kind": ..., ...}
};

// Decodes and checks one line under `dialect`. Never throws.
JsonRpcMessage decode_json_rpc_line(std::string_view line, const JsonRpcDialect& dialect);

// The error for a line over `limit` bytes (messageTooLarge), as `dialect` answers it.
JsonRpcMessage oversize_message(std::size_t limit, const JsonRpcDialect& dialect);
// The error reply to an invalid message (kInvalid).
std::string encode_invalid(const JsonRpcMessage& invalid);

// The encoded messages (one line each, no newline). Invalid UTF-8 in strings is replaced,
// never thrown.
std::string encode_json(const json& message);
std::string encode_result(const json& id, json result);
// encode_result(id, {key: clean}) for a `clean` string that needs no JSON escaping (base64),
// copied into the line as it is: nlohmann escapes a string a character at a time, which was
// the largest cost of an fs/readFile reply.
std::string encode_clean_string_result(const json& id, const std::string& key, std::string_view clean);
// `data` is left out when null.
std::string encode_error(const json& id, int code, const std::string& message, json data = nullptr);
std::string encode_notification(const std::string& method, json params);
std::string encode_request(const json& id, const std::string& method, json params);

}  // namespace uexec::rpc
