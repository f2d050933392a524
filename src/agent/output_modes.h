// output_modes.h: the two terminal modes of a tty session's program that the agent tools act
// on, followed in its output:
//   - DECCKM (ESC [ ? 1 h/l): which arrow keys it asked for, so write_stdin's named keys
//     (keys.h) send what it expects: CSI arrows normally, SS3 arrows in application mode
//     (docs/agent.md §2.5);
//   - the alternate screen (ESC [ ? 1049 / 1047 / 47 h/l): a full-screen program (top, less,
//     vim), whose last output line is a piece of its screen, never a prompt (§6.5).
//
// The screen model (term/screen.h) follows every mode; these two are enough for agents driving
// full-screen programs. It scans the ring's bytes in place, in order (the last sequence wins),
// keeping only a carry of the last 7 bytes for a sequence split across chunks
// (ESC [ ? 1 0 4 9 h is 8 bytes), so it adds no copy of the output. RIS (ESC c) resets both.
// Pure but for reading an OutputRing.
#pragma once

#include <string>
#include <string_view>

#include "session/output_ring.h"

namespace uexec::agent {

class OutputModes {
 public:
  // Follows the modes through the output in [from, ring.total()).
  void scan(const session::OutputRing& ring, session::Offset from);
  // The program asked for application cursor keys (ESC [ ? 1 h), and has not reset them since.
  bool application() const noexcept { return application_; }
  // The program is on the alternate screen (a full-screen program).
  bool alternate_screen() const noexcept { return alternate_; }

 private:
  void scan_text(std::string_view text);

  bool application_ = false;
  bool alternate_ = false;
  std::string carry_;  // the last (up to) 7 bytes scanned
};

}  // namespace uexec::agent
