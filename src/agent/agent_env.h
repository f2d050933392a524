// agent_env.h: the environment and shell an agent's command runs with (docs/agent.md §4).
//
// The base is the front door's own environment, filtered in Codex's order: inherit
// all/core/none → drop *KEY*, *SECRET*, *TOKEN* (any case) unless told not to → exclude
// globs → set → include_only globs; then the agent preset (NO_COLOR, TERM=dumb, pagers to
// cat, editors to true, …) overrides, then UEXEC_SESSION_ID. Pure.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace uexec::agent {

struct EnvPolicy {
  enum class Inherit { kAll, kCore, kNone };
  Inherit inherit = Inherit::kAll;
  bool ignore_default_excludes = false;
  std::vector<std::string> exclude;                         // globs on names
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> include_only;                    // globs; empty keeps all
};

// The 20 pairs of the agent preset, in table order.
const std::vector<std::pair<std::string, std::string>>& agent_preset();

// Applies `policy` to `base` ("NAME=value" entries): inherit, default excludes, exclude,
// set, include_only. No preset: process/start's envPolicy uses this as is.
std::vector<std::string> apply_env_policy(const std::vector<std::string>& base, const EnvPolicy& policy);

// Sets NAME=value in `env`, replacing an earlier value.
void env_put(std::vector<std::string>& env, const std::string& name, const std::string& value);

// Builds the agent env ("NAME=value" list) from `base` ("NAME=value" entries); without
// `preset` (the config's agent.env_preset = false) the preset's pairs are left out.
std::vector<std::string> build_agent_env(const std::vector<std::string>& base, const EnvPolicy& policy,
                                         long session_id, bool preset = true);

// The value of NAME in an env list, or nullopt.
std::optional<std::string> env_get(const std::vector<std::string>& env, std::string_view name);

// The shell for [shell, "-lc"|"-c", cmd]: `requested` (absolute and executable, or a name
// looked up on the env's PATH), else SHELL from `env`, else the passwd entry, else /bin/sh.
// Failure: kInvalidArgument "shell not found: X".
[[nodiscard]] base::Result<std::string> resolve_shell(const std::optional<std::string>& requested,
                                                      const std::vector<std::string>& env);

}  // namespace uexec::agent
