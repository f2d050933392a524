// home_dir.h: the user's home directory, found the way a login shell and Codex find it.
//
// One rule for every place that needs a home (the config file's location, environment/info's
// userHomeDir, environmentConfig/read's $CODEX_HOME default): an absolute $HOME wins, else the
// passwd entry of the real uid, else nothing.
#pragma once

#include <pwd.h>
#include <unistd.h>

#include <string>
#include <string_view>

namespace uexec::base {

// `home_env` (a HOME value; empty or relative is ignored), else the passwd entry's directory,
// else "".
inline std::string home_dir(std::string_view home_env) {
  if (!home_env.empty() && home_env.front() == '/') return std::string(home_env);
  if (passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return {};
}

}  // namespace uexec::base
