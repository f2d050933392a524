// check.h: always-on invariant checks (Node's CHECK, mosh's fatal_assert).
//
// UEXEC_CHECK guards invariants in every build type; a failure logs file:line and the
// expression, then aborts. Use it for "cannot happen" states, never for input validation:
// bad input from a client, a child or the file system is a `Result` error.
#pragma once

namespace uexec::base {
[[noreturn]] void check_failed(const char* file, int line, const char* expr) noexcept;
}  // namespace uexec::base

#define UEXEC_CHECK(expr)                                          \
  do {                                                             \
    if (!(expr)) ::uexec::base::check_failed(__FILE__, __LINE__, #expr); \
  } while (0)

#define UEXEC_CHECK_EQ(a, b) UEXEC_CHECK((a) == (b))
