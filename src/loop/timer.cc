#include "loop/timer.h"

#include "base/check.h"

namespace uexec::loop {

Timer::~Timer() { stop(); }

ManualClock* Timer::manual_clock() const noexcept { return kind_ == kLoopTime ? loop_->manual_clock() : nullptr; }

void Timer::start(std::chrono::milliseconds after, std::function<void()> fn,
                  std::chrono::milliseconds repeat) {
  if (auto* clock = manual_clock()) {
    stop();
    fn_ = std::move(fn);
    repeat_ = repeat;
    manual_key_ = clock->arm(this, after);
    manual_ = true;
    return;
  }
  if (!h_) {
    auto h = make_handle<uv_timer_t>([&](uv_timer_t* t) { return uv_timer_init(loop_->get(), t); },
                                     "uv_timer_init");
    UEXEC_CHECK(h.has_value());  // uv_timer_init cannot fail on a live loop
    h_ = std::move(h).value();
    h_.get()->data = this;
  }
  fn_ = std::move(fn);
  uv_timer_start(h_.get(), &Timer::on_timer, static_cast<uint64_t>(after.count()),
                 static_cast<uint64_t>(repeat.count()));
}

void Timer::stop() noexcept {
  if (manual_) {
    if (auto* clock = manual_clock()) clock->disarm(manual_key_);
    manual_ = false;
  }
  if (h_) uv_timer_stop(h_.get());
}

ManualClock::Key ManualClock::arm(Timer* t, std::chrono::milliseconds after) {
  Key k{now_ + after, seq_++};
  due_.emplace(k, t);
  return k;
}

void ManualClock::advance(std::chrono::milliseconds d) {
  const auto target = now_ + d;
  while (!due_.empty() && due_.begin()->first.first <= target) {
    auto [key, timer] = *due_.begin();
    due_.erase(due_.begin());
    now_ = key.first;
    timer->manual_ = false;
    if (timer->repeat_.count() > 0) {
      timer->manual_key_ = arm(timer, timer->repeat_);
      timer->manual_ = true;
    }
    auto fn = timer->fn_;  // the callback may restart or destroy the timer
    fn();
  }
  now_ = target;
}

void Timer::on_timer(uv_timer_t* t) noexcept {
  auto* self = static_cast<Timer*>(t->data);
  if (!self) return;
  // Copy: the callback may restart this timer (replacing fn_) or destroy it.
  auto fn = self->fn_;
  fn();
}

}  // namespace uexec::loop
