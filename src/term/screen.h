// screen.h: the server-side terminal model of one tty session (libvterm behind a small API).
//
// A Screen is fed the same bytes as the session's OutputRing and holds what a terminal of
// that size would show: the text grid with colours and attributes, the cursor, the
// alternate screen, the title, and a bounded scrollback of plain lines that scrolled off the
// main screen. It answers three questions:
//
//   lines()/text()  what a person would read: `rows` strings, trailing blanks trimmed, a
//                   wide character once (agents get TUIs such as top, less, vim as text)
//   ansi()          the bytes that repaint this state on a *fresh* terminal of the same size
//                   (xterm.js on attach): scrollback first, so it lands in the viewer's
//                   history, then the grid cell by cell with SGR, then the modes a program
//                   set (alternate screen, cursor keys, mouse, bracketed paste, margins,
//                   cursor visibility, title) and the cursor position
//   cursor()/...    the details, for process/snapshot
//
// libvterm 0.1 does not report every DEC private mode it follows, so a small scanner beside
// it tracks the ones a repaint must restore; it keeps its state across chunk boundaries.
// Memory is bounded: the grid is rows×cols cells, the scrollback at most `scrollback_lines`
// lines of at most 4 KiB each. Widths are libvterm's (its wcwidth); the tests compare them
// with utf8proc's. Pure: no libuv, no JSON; one thread.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/config.h"
#include "base/result.h"

namespace uexec::term {

struct Cursor {
  int row = 0;  // 0-based
  int col = 0;
  bool visible = true;
};

class Screen {
 public:
  static constexpr std::size_t kDefaultScrollback = 1000;  // lines

  // Whether this build has the model (libvterm).
  static bool available() noexcept;
  // kUnsupported when uexec was built without libvterm.
  static base::Result<std::unique_ptr<Screen>> create(base::PtySize size,
                                                      std::size_t scrollback_lines = kDefaultScrollback);
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // Applies output bytes as a terminal would; a UTF-8 sequence may straddle two calls.
  void feed(std::string_view bytes);
  // Resizes the grid (rows and cols 1-1000); libvterm reflows nothing, it crops and pads.
  void resize(base::PtySize size);

  base::PtySize size() const noexcept { return size_; }
  std::vector<std::string> lines() const;  // `rows` lines, trailing blanks trimmed
  // The screen as text: lines() joined by '\n', trailing empty lines dropped.
  std::string text() const;
  Cursor cursor() const;
  bool alt_screen() const noexcept { return alt_screen_; }
  const std::string& title() const noexcept { return title_; }
  bool app_cursor_keys() const noexcept { return modes_.app_cursor; }
  const std::deque<std::string>& scrollback() const noexcept { return scrollback_; }
  // Repaints this state on a fresh terminal of size() (see the essay).
  std::string ansi() const;

  // Internal, for libvterm's callbacks.
  struct Callbacks;

 private:
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
  enum class ScanState { kGround, kEsc, kCsi, kString, kStringEsc };

  Screen(base::PtySize size, std::size_t scrollback_lines);
  void feed_whole(std::string_view bytes);
  void write_vt(std::string_view bytes);
  void scan(std::string_view bytes);
  void scan_byte(unsigned char c);
  void skip_lines(std::string_view run);
  void csi_done();
  void string_done();
  void push_scrollback(std::string line);
  std::string row_text(int row) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  base::PtySize size_;
  std::size_t scrollback_max_;
  std::deque<std::string> scrollback_;
  std::string title_;
  bool alt_screen_ = false;
  bool cursor_visible_ = true;
  Modes modes_;
  ScanState scan_ = ScanState::kGround;
  std::string csi_;  // parameter and intermediate bytes of the CSI being scanned (bounded)
  bool osc_ = false; // the string being scanned is an OSC
  std::string str_;  // its bytes (bounded)
  std::vector<std::size_t> crlf_ends_;  // feed(): where the last rows+2 CRLFs of a run end
  std::string utf8_hold_;  // an incomplete UTF-8 sequence at the end of the last feed
  std::string pending_seq_;  // an escape sequence still open at the end of the last feed
  std::size_t seq_start_ = 0;  // feed_whole(): where the open sequence began (npos: earlier)
  int drop_blank_pushes_ = 0;  // blank rows a skip left, not to be pushed as history
  bool alt_enter_ = false;  // the scanner just saw ?47h, ?1047h or ?1049h
  void capture_primary();
};

}  // namespace uexec::term
