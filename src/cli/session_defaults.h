// session_defaults.h: what a `uexec` command hands the sessions it starts by default: its own
// environment and working directory, and the containment mode UEXEC_CONTAINMENT asks for.
#pragma once

#include <string>
#include <vector>

#include "base/config.h"

namespace uexec::cli {

// This process's environment, NAME=VALUE each.
std::vector<std::string> process_environment();

// This process's working directory, or "/" when it has none.
std::string current_directory();

// UEXEC_CONTAINMENT=auto|cgroup|tracked|off picks how sessions' descendants are contained
// (session/containment.h); unset means auto. False, with a message prefixed by `who`, for
// another value.
bool containment_from_env(base::Config& cfg, const char* who);

}  // namespace uexec::cli
