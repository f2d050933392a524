// request_params.h: reading a native request's params, field by field, with the protocol's
// refusals (docs/protocol.md §5: -32602 with `data.kind` "invalidParams" and the field).
//
// A method handler reads its params with these; a missing or mistyped field throws a
// ParamError, which the method table (rpc/method_table.h) catches and answers, so a handler
// reads like the happy path. ParamError is the only exception the handlers throw, and it
// never leaves the rpc layer (docs/architecture.md §6.3).
#pragma once

#include <optional>
#include <string>
#include <type_traits>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "rpc/json_rpc.h"

namespace uexec::rpc {

// A JSON-RPC failure raised while decoding params: answered as an error to the request.
struct ParamError {
  int code;
  std::string message;
  json data;
};

// The -32602 refusal of `field`: {"kind": "invalidParams", "field": field}.
ParamError invalid_param(const std::string& field, std::string message);

// `params[field]`, present and not null, or a ParamError ("missing field").
const json& need(const json& params, const char* field);
// `params[field]` as a string, or a ParamError.
std::string need_string(const json& params, const char* field);
// `params[field]` as a boolean; nullopt when absent or null.
std::optional<bool> opt_bool(const json& params, const char* field);

// `params[field]` as an integer (non-negative for an unsigned T); nullopt when absent or null.
template <class T>
std::optional<T> opt_number(const json& params, const char* field) {
  if (!params.is_object() || !params.contains(field) || params[field].is_null()) return std::nullopt;
  const json& v = params[field];
  if (!v.is_number_integer() && !v.is_number_unsigned())
    throw invalid_param(field, fmt::format("invalid type for `{}`: expected an integer", field));
  if (std::is_unsigned_v<T> && v.is_number_integer() && v.get<long long>() < 0)
    throw invalid_param(field, fmt::format("invalid value for `{}`: expected a non-negative integer", field));
  return v.get<T>();
}

}  // namespace uexec::rpc
