// timer.h: a one-shot or repeating timer with a chrono interface.
//
// The uv_timer_t is created on the first start(), so an idle session that never arms a
// timer pays nothing but this object. The callback may destroy the Timer's owner: the
// handle is detached first and closed afterwards.
//
// Rules: as UvHandle (uv_handle.h). Loop thread only.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>

#include "loop/loop.h"
#include "loop/uv_handle.h"

namespace uexec::loop {

class Timer {
 public:
  explicit Timer(Loop& loop) noexcept : loop_(&loop) {}
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // (Re)arms: fn runs once after `after`, then every `repeat` if non-zero.
  void start(std::chrono::milliseconds after, std::function<void()> fn,
             std::chrono::milliseconds repeat = std::chrono::milliseconds{0});
  void stop() noexcept;
  bool active() const noexcept { return h_ && uv_is_active(h_.handle()); }

 private:
  static void on_timer(uv_timer_t* t) noexcept;

  Loop* loop_;
  UvHandle<uv_timer_t> h_;
  std::function<void()> fn_;
};

}  // namespace uexec::loop
