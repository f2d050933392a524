// session_defaults.cc: what a command hands its sessions by default (session_defaults.h).
#include "cli/session_defaults.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

extern char** environ;

namespace uexec::cli {

std::vector<std::string> process_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::string current_directory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? buf : "/";
}

bool containment_from_env(base::Config& cfg, const char* who) {
  const char* v = std::getenv("UEXEC_CONTAINMENT");
  if (!v || !*v) return true;
  std::string m = v;
  if (m == "auto") cfg.containment = base::ContainmentMode::kAuto;
  else if (m == "cgroup") cfg.containment = base::ContainmentMode::kCgroup;
  else if (m == "tracked") cfg.containment = base::ContainmentMode::kTracked;
  else if (m == "off") cfg.containment = base::ContainmentMode::kOff;
  else {
    std::fprintf(stderr, "%s: UEXEC_CONTAINMENT must be auto, cgroup, tracked or off (not \"%s\")\n", who, v);
    return false;
  }
  return true;
}

}  // namespace uexec::cli
