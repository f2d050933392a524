// signal_watcher.h: a process signal delivered as a loop callback (uv_signal_t).
//
// Rules: as UvHandle (uv_handle.h). Loop thread only. The watcher does not keep the loop
// alive (it is unref'd): a CLI waiting for SIGWINCH should still exit when its work ends.
#pragma once

#include <functional>

#include "base/result.h"
#include "loop/loop.h"
#include "loop/uv_handle.h"

namespace uexec::loop {

class SignalWatcher {
 public:
  explicit SignalWatcher(Loop& loop) noexcept : loop_(&loop) {}
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Starts watching `signum`; fn runs on the loop thread for each delivery.
  [[nodiscard]] base::Result<void> start(int signum, std::function<void(int)> fn);
  void stop() noexcept { h_.close(); }

 private:
  static void on_signal(uv_signal_t* h, int signum) noexcept;

  Loop* loop_;
  UvHandle<uv_signal_t> h_;
  std::function<void(int)> fn_;
};

}  // namespace uexec::loop
