// result.h: how every layer reports failure.
//
// A failure is a value: `Error` says what kind (`Errc`), the errno when the system gave one,
// and what we were doing (`context`, e.g. "execve make"). `Result<T>` is an
// std::expected-shaped type: GCC 12 ships <expected> only above C++20, so ours uses the same
// names and can be swapped for std::expected under C++23. libuv's negative codes are negated
// once, where they are returned (`Error::uv`), never later.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace uexec::base {

enum class Errc {
  kOk = 0,
  kSystem,        // a syscall failed; sys_errno says which errno
  kExecFailed,    // the child could not exec: sys_errno and context name the step
  kInvalidArgument,
  kNotFound,      // an unknown session id or similar lookup miss
  kClosed,        // writing to a closed stdin, a finished session
  kLimit,         // a configured limit was reached
  kUnsupported,
  kPolicy,        // a sandbox policy that cannot be enforced as asked: never weakened, refused
};

const char* errc_name(Errc code) noexcept;

struct Error {
  Errc code = Errc::kSystem;
  int sys_errno = 0;     // positive errno; 0 when not a system error
  std::string context;   // what we were doing

  // A failed syscall: captures errno at the call site.
  static Error sys(std::string context, int err = errno) {
    return Error{Errc::kSystem, err, std::move(context)};
  }
  // A libuv return code (negative errno on Unix).
  static Error uv(int rc, std::string context) { return Error{Errc::kSystem, -rc, std::move(context)}; }
  static Error invalid(std::string context) {
    return Error{Errc::kInvalidArgument, 0, std::move(context)};
  }
  // A sandbox policy refused: `context` opens with the refusal's kind ("SymlinkedRoot: …").
  static Error policy(std::string context) { return Error{Errc::kPolicy, 0, std::move(context)}; }

  // "execve /nonexistent: No such file or directory (ENOENT)": for people, formatted where shown.
  std::string message() const;
};

template <class E>
class Unexpected {
 public:
  explicit Unexpected(E e) : error_(std::move(e)) {}
  E& error() & { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  E error_;
};

// The std::expected subset we use: value or error, checked access.
template <class T, class E>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit on purpose
  Expected(Unexpected<E> e) : v_(std::in_place_index<1>, std::move(e).error()) {}  // NOLINT
  Expected(E e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & {
    UEXEC_CHECK(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    UEXEC_CHECK(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    UEXEC_CHECK(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const& {
    UEXEC_CHECK(!has_value());
    return std::get<1>(v_);
  }
  E&& error() && {
    UEXEC_CHECK(!has_value());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, E> v_;
};

// Result<void>: success carries nothing.
template <class E>
class [[nodiscard]] Expected<void, E> {
 public:
  Expected() = default;
  Expected(Unexpected<E> e) : err_(std::move(e).error()), ok_(false) {}  // NOLINT
  Expected(E e) : err_(std::move(e)), ok_(false) {}  // NOLINT

  bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  void value() const { UEXEC_CHECK(ok_); }
  const E& error() const& {
    UEXEC_CHECK(!ok_);
    return err_;
  }
  E&& error() && {
    UEXEC_CHECK(!ok_);
    return std::move(err_);
  }

 private:
  E err_{};
  bool ok_ = true;
};

template <class T>
using Result = Expected<T, Error>;

}  // namespace uexec::base
