// screen.h: the server-side terminal model of one tty session (libvterm behind a small API).
//
// A Screen is fed the same bytes as the session's OutputRing and holds what a terminal of
// that size would show: the text grid with colours and attributes, the cursor, the
// alternate screen, the title, and a bounded scrollback of plain lines that scrolled off the
// main screen. It answers three questions:
//
//   lines()/text()  what a person would read: `rows` strings, trailing blanks trimmed, a
//                   wide character once, half of one as a blank (libvterm keeps a left
//                   half whose right half was written over or cut off by a resize; a
//                   terminal shows a blank) (agents get TUIs such as top, less, vim as text)
//   ansi()          the bytes that repaint this state on a *fresh* terminal of the same size
//                   (xterm.js on attach): scrollback first, so it lands in the viewer's
//                   history, then the grid cell by cell with SGR, then the modes a program
//                   set (alternate screen, cursor keys, mouse, bracketed paste, margins,
//                   cursor visibility, title) and the cursor position
//   cursor()/...    the details, for process/snapshot
//
// Screen composes the pieces that do the work, each a type of its own in src/term/:
//   VtFilter (vt_filter.h)      every byte passes it before libvterm 0.1.4, which crashes or
//                               hangs on some output; it also takes the title from OSC 0/2
//                               and holds back what a feed leaves unfinished, which ansi()
//                               appends for a viewer to finish (none of it has been executed)
//   ModeScanner (mode_scanner.h) libvterm 0.1 does not report every DEC private mode it
//                               follows; the scanner tracks, on the filtered bytes, the ones
//                               a repaint must restore, and the margins
//   repaint (repaint.h)         ansi(): a function over a read-only view of the model
//   flood skipping (flood.h)    a run of many CRLF-ended lines that scroll away before anyone
//                               could see them is not drawn line by line: its effect is
//                               applied at once and its lines go to the scrollback
// Screen itself owns libvterm and the state around it, and adds two guards: DECRC (ESC 8)
// is followed by a clamp when it put the cursor outside the screen (a position saved before
// a shrinking resize), and a resize resets the margins and puts the cursor back inside.
// Memory is bounded: the grid is rows×cols cells, the scrollback at most `scrollback_lines`
// lines of at most 4 KiB each. Widths are libvterm's (its wcwidth); the tests compare them
// with utf8proc's. Pure: no libuv, no JSON; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
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

  base::PtySize size() const noexcept;
  std::vector<std::string> lines() const;  // `rows` lines, trailing blanks trimmed
  // The screen as text: lines() joined by '\n', trailing empty lines dropped.
  std::string text() const;
  Cursor cursor() const;
  bool alt_screen() const noexcept;
  // The last title set by OSC 0 or 2 (bounded); empty until one came.
  const std::string& title() const noexcept;
  bool app_cursor_keys() const noexcept;  // DECCKM (?1h)
  // Lines that scrolled off the main screen, oldest first, at most `scrollback_lines`.
  const std::deque<std::string>& scrollback() const noexcept;
  // Repaints this state on a fresh terminal of size() (see the essay).
  std::string ansi() const;

 private:
  // The model itself (screen.cc): libvterm, the filter, the scanner, the scrollback. Kept
  // out of this header, which session.h and so most of the tree include.
  struct Impl;
  explicit Screen(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace uexec::term
