#include "loop/loop.h"

#include "loop/timer.h"

#include "base/check.h"
#include "base/log.h"

namespace uexec::loop {

Loop::Loop() : slab_(new std::byte[base::kReadSlabSize]) {
  UEXEC_CHECK(uv_loop_init(&loop_) == 0);
  async_ = new uv_async_t{};
  UEXEC_CHECK(uv_async_init(&loop_, async_, &Loop::on_async) == 0);
  async_->data = this;
  // The async handle must not keep run() alive on its own.
  uv_unref(reinterpret_cast<uv_handle_t*>(async_));
}

Loop::~Loop() {
  async_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(async_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_async_t*>(h); });
  // Let pending close callbacks run. Anything still open is a leak by its owner: report it,
  // then close it so uv_loop_close can succeed and the process does not abort.
  uv_run(&loop_, UV_RUN_NOWAIT);
  if (report_open_handles() > 0) {
    uv_walk(
        &loop_,
        [](uv_handle_t* h, void*) {
          if (!uv_is_closing(h)) uv_close(h, nullptr);
        },
        nullptr);
  }
  while (uv_loop_close(&loop_) == UV_EBUSY) uv_run(&loop_, UV_RUN_NOWAIT);
}

void Loop::run() { uv_run(&loop_, UV_RUN_DEFAULT); }

ManualClock& Loop::use_manual_clock() {
  if (!manual_) manual_ = std::make_unique<ManualClock>();
  return *manual_;
}

void Loop::settle(int turns) {
  for (int i = 0; i < turns; ++i) {
    uv_run(&loop_, UV_RUN_NOWAIT);
    if (open_handles() == 0 && !uv_loop_alive(&loop_)) break;
  }
}

bool Loop::run_once(bool wait) { return uv_run(&loop_, wait ? UV_RUN_ONCE : UV_RUN_NOWAIT) != 0; }

void Loop::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(std::move(fn));
  }
  uv_async_send(async_);
}

void Loop::on_async(uv_async_t* h) noexcept {
  if (auto* self = static_cast<Loop*>(h->data)) self->run_posted();
}

void Loop::run_posted() noexcept {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) fn();
}

std::size_t Loop::open_handles() const {
  std::size_t n = 0;
  struct Ctx {
    const uv_async_t* own;
    std::size_t* n;
  } ctx{async_, &n};
  uv_walk(
      const_cast<uv_loop_t*>(&loop_),
      [](uv_handle_t* h, void* arg) {
        auto* c = static_cast<Ctx*>(arg);
        if (reinterpret_cast<const uv_handle_t*>(c->own) == h) return;
        if (!uv_is_closing(h)) ++*c->n;
      },
      &ctx);
  return n;
}

std::size_t Loop::report_open_handles() const {
  struct Ctx {
    const uv_async_t* own;
    std::size_t n;
  } ctx{async_, 0};
  uv_walk(
      const_cast<uv_loop_t*>(&loop_),
      [](uv_handle_t* h, void* arg) {
        auto* c = static_cast<Ctx*>(arg);
        if (reinterpret_cast<const uv_handle_t*>(c->own) == h || uv_is_closing(h)) return;
        ++c->n;
        UEXEC_LOG(kError, "leaked libuv handle: {} (active={})", uv_handle_type_name(h->type),
                  uv_is_active(h));
      },
      &ctx);
  return ctx.n;
}

}  // namespace uexec::loop
