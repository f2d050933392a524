// uv_handle.h: RAII ownership of one libuv handle.
//
// libuv frees nothing itself and its docs say a handle's memory "can only be released in
// close_cb or after it has returned". So the uv struct lives on the heap and outlives its
// C++ owner until close_cb runs.
//
// Rules:
// - Adopt only a handle whose uv_*_init succeeded; uv_close on anything else is undefined.
//   `make_handle` allocates, runs the init and adopts in one step.
// - Destroying or close()-ing detaches: `data` becomes nullptr, uv_close runs once, and
//   close_cb frees the struct. Trampolines return early on a null `data`.
// - Set `data = this` only once the owner is fully built.
// - Never throws. Loop thread only.
#pragma once

#include <uv.h>

#include <utility>

#include "base/result.h"

namespace uexec::loop {

template <class UvT>
class UvHandle {
 public:
  UvHandle() noexcept = default;
  explicit UvHandle(UvT* adopted) noexcept : h_(adopted) {}
  UvHandle(UvHandle&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  UvHandle& operator=(UvHandle&& other) noexcept {
    if (this != &other) {
      close();
      h_ = std::exchange(other.h_, nullptr);
    }
    return *this;
  }
  UvHandle(const UvHandle&) = delete;
  UvHandle& operator=(const UvHandle&) = delete;
  ~UvHandle() { close(); }

  UvT* get() const noexcept { return h_; }
  uv_handle_t* handle() const noexcept { return reinterpret_cast<uv_handle_t*>(h_); }
  explicit operator bool() const noexcept { return h_ != nullptr; }

  // Detaches and closes; the struct is freed in close_cb. Safe to call twice.
  void close() noexcept {
    if (!h_) return;
    h_->data = nullptr;
    uv_close(handle(), [](uv_handle_t* h) { delete reinterpret_cast<UvT*>(h); });
    h_ = nullptr;
  }

 private:
  UvT* h_ = nullptr;
};

// Allocates a UvT, runs `init(ptr)` (a uv_*_init call returning libuv's int), and adopts it.
template <class UvT, class Init>
[[nodiscard]] base::Result<UvHandle<UvT>> make_handle(Init&& init, const char* context) {
  auto* raw = new UvT{};
  if (int rc = init(raw); rc < 0) {
    delete raw;  // init failed: libuv never saw it, so a plain delete is right
    return base::Error::uv(rc, context);
  }
  raw->data = nullptr;
  return UvHandle<UvT>(raw);
}

}  // namespace uexec::loop
