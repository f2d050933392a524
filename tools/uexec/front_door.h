// front_door.h: what every long-running front door (`mcp`, `exec-server`, `serve`) sets up
// the same way: the environment and directory it hands to its sessions, and the signals
// that end it cleanly.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "loop/loop.h"
#include "loop/signal_watcher.h"
#include "policy/profile.h"
#include "policy/sandbox_attempt.h"

extern char** environ;

namespace uexec::cli {

inline std::vector<std::string> process_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

inline std::string current_directory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? buf : "/";
}

// UEXEC_CONTAINMENT=auto|cgroup|tracked|off picks how sessions' descendants are contained
// (session/containment.h); unset means auto. False, with a message, for another value.
inline bool containment_from_env(base::Config& cfg, const char* who) {
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

// SIGTERM, SIGINT and SIGHUP run `stop` on the loop; keep the result alive while it runs.
inline std::vector<std::unique_ptr<loop::SignalWatcher>> on_stop_signals(loop::Loop& loop, std::function<void()> stop) {
  std::vector<std::unique_ptr<loop::SignalWatcher>> watchers;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    auto w = std::make_unique<loop::SignalWatcher>(loop);
    if (w->start(sig, [stop](int) { stop(); })) watchers.push_back(std::move(w));
  }
  return watchers;
}

// The agent tools' default sandbox, from a front door's flags: --sandbox MODE, then
// --writable DIR, --deny-read GLOB, --network on|off, --backend B (each may repeat where it
// makes sense). consume() takes the flag at args[i] (and its value) and returns true, or
// returns false for a flag that is not one of these; `error` says what was wrong.
struct SandboxFlags {
  std::optional<policy::PermissionProfile> profile;
  policy::Backend backend = policy::Backend::kAuto;
  std::vector<std::string> writable, deny_read;
  std::optional<bool> network;
  std::string error;

  static constexpr const char* kHelp =
      "  --sandbox MODE      run every exec_command under read-only | workspace-write |\n"
      "                      danger-full-access (approval policy never: denials are reported)\n"
      "  --writable DIR, --deny-read GLOB, --network on|off, --backend auto|namespaces|landlock|bwrap\n";

  bool consume(const std::vector<std::string>& args, std::size_t& i) {
    const std::string& a = args[i];
    if (a != "--sandbox" && a != "--writable" && a != "--deny-read" && a != "--network" && a != "--backend")
      return false;
    if (i + 1 >= args.size()) {
      error = a + " needs a value";
      return true;
    }
    const std::string& v = args[++i];
    if (a == "--sandbox") {
      auto m = policy::parse_sandbox_mode(v);
      if (!m) error = m.error().context;
      else profile = policy::PermissionProfile::for_mode(*m);
    } else if (a == "--writable") {
      writable.push_back(v);
    } else if (a == "--deny-read") {
      deny_read.push_back(v);
    } else if (a == "--network") {
      if (v != "on" && v != "off") error = "--network needs on or off";
      network = v == "on";
    } else {
      auto b = policy::parse_backend(v);
      if (!b) error = b.error().context;
      else backend = *b;
    }
    return true;
  }

  // After all flags: the profile, or an error for sandbox flags without --sandbox.
  bool finish() {
    if (!error.empty()) return false;
    if (!profile) {
      if (!writable.empty() || !deny_read.empty() || network) error = "sandbox options need --sandbox MODE";
      return error.empty();
    }
    profile->writable_roots = writable;
    profile->deny_read = deny_read;
    if (network) profile->network = *network;
    return true;
  }
};

}  // namespace uexec::cli
