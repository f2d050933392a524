// mode_scanner.h: the DEC private modes and margins a repaint must restore, read off the
// bytes libvterm gets.
//
// libvterm 0.1 follows more modes than it reports (it has no callback for cursor keys,
// mouse reporting, bracketed paste, focus events, origin mode, autowrap or the margins), and
// a repaint (repaint.h) has to set them again on a fresh terminal. A ModeScanner sits beside
// libvterm in term::Screen and is fed the same filtered bytes (vt_filter.h: whole escape
// sequences and CSIs, no strings), a byte at a time, keeping its state across feeds:
//
//   ground ──ESC──► esc ──'['──► csi ──final byte──► ground
//                    └──final byte──► ground
//
// It reads the margins as libvterm 0.1.4 does (DECSTBM clamped to the screen, a region of no
// rows being the full screen), forgets everything on RIS (ESC c), and reports two events
// that Screen acts on at once: the alternate screen is being entered (?47h, ?1047h, ?1049h:
// the main screen must be saved first) and DECRC (ESC 8: the cursor may need a clamp). It
// also tells whether the byte just scanned completed a plain SGR, which the flood skipping
// needs (flood.h). Memory is bounded (a CSI is kept up to 128 bytes). Pure: no libvterm, no
// libuv; one thread.
#pragma once

#include <cstddef>
#include <string>

namespace uexec::term {

// DEC private modes and margins that a repaint restores (the scanner's view).
struct Modes {
  bool app_cursor = false;      // ?1 DECCKM
  bool origin = false;          // ?6 DECOM
  bool autowrap = true;         // ?7 DECAWM
  bool bracketed_paste = false; // ?2004
  bool focus_events = false;    // ?1004
  bool lr_margins = false;      // ?69 DECLRMM (not repainted; keeps the fast path off)
  int mouse = 0;                // ?1000 / ?1002 / ?1003 (0: off)
  bool mouse_sgr = false;       // ?1006
  int top = 0, bottom = 0;      // DECSTBM, 1-based; 0: the full screen
};

class ModeScanner {
 public:
  enum class State { kGround, kEsc, kCsi };

  // Scans one byte that libvterm gets; `rows` is the screen's height (margins clamp to it).
  void scan(unsigned char c, int rows);
  // Where the scanner stands after the last byte: kGround outside any sequence.
  State state() const noexcept { return state_; }
  const Modes& modes() const noexcept { return modes_; }
  // The last byte scanned ended a CSI of digits and separators only with 'm' (an SGR).
  bool sgr_ended() const noexcept { return sgr_ended_; }
  // Whether ?47h, ?1047h or ?1049h was scanned since the last call; clears it.
  bool take_alt_enter() noexcept;
  // Whether DECRC (ESC 8) was scanned since the last call; clears it.
  bool take_cursor_restore() noexcept;
  // A resize: terminals reset the margins (and libvterm is told to, see screen.cc).
  void reset_margins() noexcept { modes_.top = modes_.bottom = 0; }

 private:
  void csi_done(int rows);

  State state_ = State::kGround;
  std::string csi_;  // parameter, intermediate and final bytes of the CSI being scanned (bounded)
  Modes modes_;
  bool sgr_ended_ = false;
  bool alt_enter_ = false;
  bool cursor_restore_ = false;
};

}  // namespace uexec::term
