#include "loop/signal_watcher.h"

namespace uexec::loop {

base::Result<void> SignalWatcher::start(int signum, std::function<void(int)> fn) {
  h_.close();
  auto h = make_handle<uv_signal_t>([&](uv_signal_t* s) { return uv_signal_init(loop_->get(), s); },
                                    "uv_signal_init");
  if (!h) return std::move(h).error();
  h_ = std::move(h).value();
  fn_ = std::move(fn);
  h_.get()->data = this;
  if (int rc = uv_signal_start(h_.get(), &SignalWatcher::on_signal, signum); rc < 0) {
    h_.close();
    return base::Error::uv(rc, "uv_signal_start");
  }
  uv_unref(h_.handle());
  return {};
}

void SignalWatcher::on_signal(uv_signal_t* h, int signum) noexcept {
  if (auto* self = static_cast<SignalWatcher*>(h->data)) {
    auto fn = self->fn_;
    fn(signum);
  }
}

}  // namespace uexec::loop
