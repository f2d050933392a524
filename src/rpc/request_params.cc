#include "rpc/request_params.h"

namespace uexec::rpc {

ParamError invalid_param(const std::string& field, std::string message) {
  return ParamError{kInvalidParams, std::move(message), {{"kind", "invalidParams"}, {"field", field}}};
}

const json& need(const json& params, const char* field) {
  if (!params.is_object() || !params.contains(field) || params[field].is_null())
    throw invalid_param(field, fmt::format("missing field `{}`", field));
  return params[field];
}

std::string need_string(const json& params, const char* field) {
  const json& v = need(params, field);
  if (!v.is_string()) throw invalid_param(field, fmt::format("invalid type for `{}`: expected a string", field));
  return v.get<std::string>();
}

std::optional<bool> opt_bool(const json& params, const char* field) {
  if (!params.is_object() || !params.contains(field) || params[field].is_null()) return std::nullopt;
  if (!params[field].is_boolean())
    throw invalid_param(field, fmt::format("invalid type for `{}`: expected a boolean", field));
  return params[field].get<bool>();
}

}  // namespace uexec::rpc
