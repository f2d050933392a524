// host.cc: what the front doors share while they run (host.h).
#include "cli/host.h"

#include <signal.h>

namespace uexec::cli {

std::vector<std::unique_ptr<loop::SignalWatcher>> on_stop_signals(loop::Loop& loop, std::function<void()> stop) {
  std::vector<std::unique_ptr<loop::SignalWatcher>> watchers;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    auto w = std::make_unique<loop::SignalWatcher>(loop);
    if (w->start(sig, [stop](int) { stop(); })) watchers.push_back(std::move(w));
  }
  return watchers;
}

}  // namespace uexec::cli
