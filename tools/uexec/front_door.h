// front_door.h: what every long-running front door (`mcp`, `exec-server`, `serve`) sets up
// the same way: the environment and directory it hands to its sessions, and the signals
// that end it cleanly.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <climits>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loop/loop.h"
#include "loop/signal_watcher.h"

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

// SIGTERM, SIGINT and SIGHUP run `stop` on the loop; keep the result alive while it runs.
inline std::vector<std::unique_ptr<loop::SignalWatcher>> on_stop_signals(loop::Loop& loop, std::function<void()> stop) {
  std::vector<std::unique_ptr<loop::SignalWatcher>> watchers;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    auto w = std::make_unique<loop::SignalWatcher>(loop);
    if (w->start(sig, [stop](int) { stop(); })) watchers.push_back(std::move(w));
  }
  return watchers;
}

}  // namespace uexec::cli
