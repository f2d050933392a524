// pty_pair.h: opening one pseudo-terminal, sized and in UTF-8 mode.
//
// open_pty() gives the master (non-blocking, CLOEXEC) and the slave (CLOEXEC, NOCTTY:
// opening it must not make it *our* controlling tty). The size is set before any child
// exists, so the first prompt already fits, and IUTF8 is on so the line discipline erases
// whole characters. The caller hands the slave to spawn() and closes it right after: while
// the parent holds a slave fd, the master never sees EOF.
#pragma once

#include <string>

#include "base/config.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace uexec::pty {

using base::PtySize;

struct PtyPair {
  base::UniqueFd master;
  base::UniqueFd slave;
};

// Opens a PTY with the default termios plus IUTF8, sized `size`.
[[nodiscard]] base::Result<PtyPair> open_pty(PtySize size);
// TIOCSWINSZ on the master; the foreground process group gets SIGWINCH.
[[nodiscard]] base::Result<void> set_size(int master_fd, PtySize size);
// The current size (TIOCGWINSZ).
[[nodiscard]] base::Result<PtySize> get_size(int fd);

}  // namespace uexec::pty
