// cursor_mode.h: which arrow keys a tty session's program asked for (DECCKM), followed in
// its output, so write_stdin's named keys (keys.h) send what the program expects: CSI
// arrows normally, SS3 arrows in application cursor mode (docs/agent.md §2.5).
//
// The screen model (term/screen.h) will follow every mode; until an agent call needs more,
// this one tracker is enough for agents driving full-screen programs. It scans the ring's
// bytes in place, keeping only a 4-byte carry for a sequence split across chunks (ESC [ ? 1
// h/l is 5 bytes), so it adds no copy of the output. Pure but for reading an OutputRing.
#pragma once

#include <string>

#include "session/output_ring.h"

namespace uexec::agent {

class CursorKeyMode {
 public:
  // Follows the mode through the output in [from, ring.total()).
  void scan(const session::OutputRing& ring, session::Offset from);
  // The program asked for application cursor keys (ESC [ ? 1 h), and has not reset them since.
  bool application() const noexcept { return application_; }

 private:
  void scan_text(std::string_view text);

  bool application_ = false;
  std::string carry_;  // the last (up to) 4 bytes scanned
};

}  // namespace uexec::agent
