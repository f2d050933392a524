#include "agent/agent_env.h"

#include <fnmatch.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>

#include "pty/spawn.h"

namespace uexec::agent {

namespace {

std::string name_of(const std::string& kv) { return kv.substr(0, kv.find('=')); }

bool glob(const std::string& pattern, const std::string& name, bool casefold) {
  return ::fnmatch(pattern.c_str(), name.c_str(), casefold ? FNM_CASEFOLD : 0) == 0;
}

}  // namespace

void env_put(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  std::erase_if(env, [&](const std::string& kv) { return name_of(kv) == name; });
  env.push_back(name + "=" + value);
}

const std::vector<std::pair<std::string, std::string>>& agent_preset() {
  static const std::vector<std::pair<std::string, std::string>> preset = {
      {"NO_COLOR", "1"},         {"TERM", "dumb"},           {"COLORTERM", ""},
      {"LANG", "C.UTF-8"},       {"LC_CTYPE", "C.UTF-8"},    {"LC_ALL", "C.UTF-8"},
      {"PAGER", "cat"},          {"GIT_PAGER", "cat"},       {"GH_PAGER", "cat"},
      {"MANPAGER", "cat"},       {"SYSTEMD_PAGER", "cat"},   {"AWS_PAGER", ""},
      {"GIT_TERMINAL_PROMPT", "0"}, {"GH_PROMPT_DISABLED", "1"}, {"GIT_EDITOR", "true"},
      {"EDITOR", "true"},        {"VISUAL", "true"},         {"DEBIAN_FRONTEND", "noninteractive"},
      {"npm_config_yes", "true"}, {"UEXEC_AGENT", "1"},
  };
  return preset;
}

std::optional<std::string> env_get(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& kv : env)
    if (kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 && kv[name.size()] == '=')
      return kv.substr(name.size() + 1);
  return std::nullopt;
}

std::vector<std::string> apply_env_policy(const std::vector<std::string>& base, const EnvPolicy& policy) {
  static const char* kCore[] = {"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP"};
  std::vector<std::string> env;
  for (const auto& kv : base) {
    if (kv.find('=') == std::string::npos) continue;
    std::string name = name_of(kv);
    if (policy.inherit == EnvPolicy::Inherit::kNone) continue;
    if (policy.inherit == EnvPolicy::Inherit::kCore &&
        std::none_of(std::begin(kCore), std::end(kCore), [&](const char* c) { return name == c; }))
      continue;
    if (!policy.ignore_default_excludes &&
        (glob("*KEY*", name, true) || glob("*SECRET*", name, true) || glob("*TOKEN*", name, true)))
      continue;
    if (std::any_of(policy.exclude.begin(), policy.exclude.end(), [&](const auto& g) { return glob(g, name, false); }))
      continue;
    env.push_back(kv);
  }
  for (const auto& [k, v] : policy.set) env_put(env, k, v);
  if (!policy.include_only.empty())
    std::erase_if(env, [&](const std::string& kv) {
      return std::none_of(policy.include_only.begin(), policy.include_only.end(),
                          [&](const auto& g) { return glob(g, name_of(kv), false); });
    });
  return env;
}

std::vector<std::string> build_agent_env(const std::vector<std::string>& base, const EnvPolicy& policy,
                                         long session_id, bool preset) {
  std::vector<std::string> env = apply_env_policy(base, policy);
  if (preset)
    for (const auto& [k, v] : agent_preset()) env_put(env, k, v);
  env_put(env, "UEXEC_SESSION_ID", std::to_string(session_id));
  if (!env_get(env, "PATH")) env.push_back("PATH=/usr/local/bin:/usr/bin:/bin");
  return env;
}

base::Result<std::string> resolve_shell(const std::optional<std::string>& requested,
                                        const std::vector<std::string>& env) {
  if (requested) {
    if (requested->empty()) return base::Error::invalid("shell not found: (empty)");
    if ((*requested)[0] == '/') {
      if (::access(requested->c_str(), X_OK) == 0) return *requested;
      return base::Error::invalid("shell not found: " + *requested);
    }
    auto found = pty::resolve_program(*requested, env, "");
    if (!found) return base::Error::invalid("shell not found: " + *requested);
    return *found;
  }
  if (auto sh = env_get(env, "SHELL"); sh && !sh->empty() && ::access(sh->c_str(), X_OK) == 0) return *sh;
  if (passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_shell && ::access(pw->pw_shell, X_OK) == 0)
    return std::string(pw->pw_shell);
  return std::string("/bin/sh");
}

}  // namespace uexec::agent
