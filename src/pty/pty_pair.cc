#include "pty/pty_pair.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <cstdlib>

namespace uexec::pty {

using base::Error;
using base::Result;
using base::UniqueFd;

Result<PtyPair> open_pty(PtySize size) {
  if (size.rows == 0 || size.cols == 0) return Error::invalid("open_pty: rows and cols must be >= 1");
  UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
  if (!master) return Error::sys("posix_openpt");
  master = base::above_stdio(std::move(master));
  if (!master) return Error::sys("open_pty: dup master");
  if (::unlockpt(master.get()) != 0) return Error::sys("unlockpt");

  // TIOCGPTPEER (Linux 4.13) opens the peer without a path lookup, immune to a /dev/pts
  // that is not ours; fall back to ptsname for older kernels.
  UniqueFd slave(::ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave) {
    char name[128];
    if (::ptsname_r(master.get(), name, sizeof name) != 0) return Error::sys("ptsname_r");
    slave.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!slave) return Error::sys("open pty slave");
  }
  slave = base::above_stdio(std::move(slave));
  if (!slave) return Error::sys("open_pty: dup slave");

  termios tio{};
  if (::tcgetattr(slave.get(), &tio) != 0) return Error::sys("tcgetattr pty slave");
  tio.c_iflag |= IUTF8;
  if (::tcsetattr(slave.get(), TCSANOW, &tio) != 0) return Error::sys("tcsetattr pty slave");
  if (auto r = set_size(master.get(), size); !r) return std::move(r).error();
  return PtyPair{std::move(master), std::move(slave)};
}

Result<void> set_size(int master_fd, PtySize size) {
  if (size.rows == 0 || size.cols == 0) return Error::invalid("resize: rows and cols must be >= 1");
  winsize ws{};
  ws.ws_row = size.rows;
  ws.ws_col = size.cols;
  if (::ioctl(master_fd, TIOCSWINSZ, &ws) != 0) return Error::sys("TIOCSWINSZ");
  return {};
}

Result<PtySize> get_size(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0) return Error::sys("TIOCGWINSZ");
  return PtySize{ws.ws_row, ws.ws_col};
}

}  // namespace uexec::pty
