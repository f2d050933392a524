#include "loop/timer.h"

#include "base/check.h"

namespace uexec::loop {

void Timer::start(std::chrono::milliseconds after, std::function<void()> fn,
                  std::chrono::milliseconds repeat) {
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
  if (h_) uv_timer_stop(h_.get());
}

void Timer::on_timer(uv_timer_t* t) noexcept {
  auto* self = static_cast<Timer*>(t->data);
  if (!self) return;
  // Copy: the callback may restart this timer (replacing fn_) or destroy it.
  auto fn = self->fn_;
  fn();
}

}  // namespace uexec::loop
