// timer.h: a one-shot or repeating timer with a chrono interface.
//
// The uv_timer_t is created on the first start(), so an idle session that never arms a
// timer pays nothing but this object. The callback may destroy the Timer's owner: the
// handle is detached first and closed afterwards.
//
// Time is injectable, so tests check every window exactly (docs/agent.md §1.1, §7):
// after Loop::use_manual_clock(), timers wait for ManualClock::advance
// instead of real time, and fire in due order, each at its exact time. A Timer made with
// kRealTime ignores that (a test's own hang guard).
//
// Rules: as UvHandle (uv_handle.h). Loop thread only.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "loop/loop.h"
#include "loop/uv_handle.h"

namespace uexec::loop {

class Timer;

// A loop's fake time, for tests: starts at 0 and moves only in advance().
class ManualClock {
 public:
  std::chrono::milliseconds now() const noexcept { return now_; }
  // Moves time forward by `d`, running every timer that falls due on the way, in order,
  // with now() at its due time. Timers armed by those callbacks fire too if due in time.
  void advance(std::chrono::milliseconds d);

 private:
  friend class Timer;
  using Key = std::pair<std::chrono::milliseconds, std::uint64_t>;  // due, then arming order
  Key arm(Timer* t, std::chrono::milliseconds after);
  void disarm(const Key& k) noexcept { due_.erase(k); }

  std::chrono::milliseconds now_{0};
  std::uint64_t seq_ = 0;
  std::map<Key, Timer*> due_;
};

class Timer {
 public:
  enum Kind { kLoopTime, kRealTime };
  explicit Timer(Loop& loop, Kind kind = kLoopTime) noexcept : loop_(&loop), kind_(kind) {}
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // (Re)arms: fn runs once after `after`, then every `repeat` if non-zero.
  void start(std::chrono::milliseconds after, std::function<void()> fn,
             std::chrono::milliseconds repeat = std::chrono::milliseconds{0});
  void stop() noexcept;
  bool active() const noexcept { return manual_ || (h_ && uv_is_active(h_.handle())); }

 private:
  friend class ManualClock;
  static void on_timer(uv_timer_t* t) noexcept;
  ManualClock* manual_clock() const noexcept;

  Loop* loop_;
  Kind kind_;
  bool manual_ = false;  // armed on the manual clock under manual_key_
  ManualClock::Key manual_key_{};
  std::chrono::milliseconds repeat_{0};
  UvHandle<uv_timer_t> h_;
  std::function<void()> fn_;
};

}  // namespace uexec::loop
