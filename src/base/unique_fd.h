// unique_fd.h: a move-only owner of one file descriptor.
//
// Closes on destruction; `release()` hands the fd over. Every fd the project creates is
// CLOEXEC from birth, so owning it here is the only cleanup needed.
#pragma once

#include <unistd.h>

#include <utility>

namespace uexec::base {

class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }

  // Gives up ownership; the caller closes the returned fd.
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes the current fd (if any) and takes `fd`.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace uexec::base

#include <fcntl.h>

namespace uexec::base {

// Returns `fd` moved above 0-2 (CLOEXEC kept), or an invalid fd with errno set. Fds we pass
// to a child must not sit on 0-2: a dup2 onto the same number is a no-op that leaves
// CLOEXEC set, so the child would lose that stdio stream at exec.
inline UniqueFd above_stdio(UniqueFd fd) noexcept {
  if (!fd || fd.get() > 2) return fd;
  return UniqueFd(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3));
}

}  // namespace uexec::base
