// env_lookup.h: the two environments a policy is resolved against: the request's (HOME,
// TMPDIR, XDG_RUNTIME_DIR, SSH_AUTH_SOCK as the command will see them) and the manager's own
// (where uexec's control, state and config directories are).
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace uexec::policy {

// The value of `name` in a "NAME=value" list, or "" when absent.
inline std::string env_get(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& kv : env)
    if (kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 && kv[name.size()] == '=')
      return kv.substr(name.size() + 1);
  return {};
}

// The manager's own variable `name`, or "" when unset.
inline std::string own_env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace uexec::policy
