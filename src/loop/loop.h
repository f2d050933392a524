// loop.h: the one event loop every session, connection and timer runs on.
//
// `Loop` owns the uv_loop_t. Everything libuv happens on the thread that calls run(); the
// one thread-safe entry point is post(fn), a mutex-guarded vector plus uv_async_send (which
// coalesces, so the callback swaps the vector out and runs the batch outside the lock).
// On destruction it closes every handle it can, runs until uv_loop_close succeeds, and logs
// what was still open, by type (Neovim's habit): `open_handles()` lets tests fail on a leak.
//
// It also owns the 64 KiB read slab: only the loop thread reads, and readers copy the bytes
// out before their callback returns, so one slab serves every session.
#pragma once

#include <uv.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "base/config.h"

namespace uexec::loop {

class ManualClock;

class Loop {
 public:
  Loop();
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  uv_loop_t* get() noexcept { return &loop_; }

  // Runs until stop() or until nothing keeps the loop alive.
  void run();
  // One iteration; blocks for I/O when `wait`. Returns true while handles remain active.
  bool run_once(bool wait = true);
  void stop() noexcept { uv_stop(&loop_); }
  // Runs non-blocking turns until only the loop's own handles remain open or `turns` ran:
  // lets close callbacks (ours and libraries') finish. Never call it from a callback.
  void settle(int turns = 16);

  // Tests: from now on timers (loop::Timer, kLoopTime) run on a fake clock that moves only
  // when the test advances it. Call before any timer is armed.
  ManualClock& use_manual_clock();
  ManualClock* manual_clock() noexcept { return manual_.get(); }

  // Thread-safe: runs fn on the loop thread soon.
  void post(std::function<void()> fn);

  // Handles that are open and not closing, excluding the loop's own. 0 means no leak.
  std::size_t open_handles() const;
  // Logs each open handle's type; returns open_handles().
  std::size_t report_open_handles() const;

  // The shared read buffer (kReadSlabSize bytes). Loop thread only; contents do not
  // survive the current callback.
  std::span<std::byte> read_slab() noexcept { return {slab_.get(), base::kReadSlabSize}; }

 private:
  static void on_async(uv_async_t* h) noexcept;
  void run_posted() noexcept;

  uv_loop_t loop_{};
  uv_async_t* async_ = nullptr;  // freed in its close_cb
  std::mutex mu_;
  std::vector<std::function<void()>> posted_;
  std::unique_ptr<std::byte[]> slab_;
  std::unique_ptr<ManualClock> manual_;
};

}  // namespace uexec::loop
