// host.h: what the long-running front doors (`serve`, `exec-server`, `mcp`) share while they
// run: the signals that stop them.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "loop/loop.h"
#include "loop/signal_watcher.h"

namespace uexec::cli {

// SIGTERM, SIGINT and SIGHUP run `stop` on the loop; keep the result alive while it runs.
std::vector<std::unique_ptr<loop::SignalWatcher>> on_stop_signals(loop::Loop& loop, std::function<void()> stop);

}  // namespace uexec::cli
