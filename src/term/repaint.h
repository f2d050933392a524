// repaint.h: the bytes that redraw a screen model on a fresh terminal of the same size
// (term::Screen::ansi(); xterm.js on attach, process/snapshot's repaint).
//
// repaint() reads a RepaintView, a read-only view of the model that Screen assembles (the
// grid through libvterm, the main screen it saved, the modes its ModeScanner followed, what
// its VtFilter holds back), and writes, in this order:
//
//   reset, clear   the scrollback, each line pushed past the top so it lands in the viewer's
//                  history (autowrap off: a line too wide is cut, never spread over two rows)
//   main screen    only under the alternate screen: the screen 1049 left behind and the
//                  cursor it saved, then ?1049h, so that leaving it shows what the model shows
//   grid           cell by cell with SGR (Pen), a wide character once, half of one as a
//                  blank (cells.h), cells of lone combining marks painted first (see paint())
//   pen            the program's current pen, so what it writes next keeps its attributes
//   modes          margins, cursor keys, autowrap, mouse, focus, bracketed paste, title
//   cursor         its position (relative to the margins in origin mode), its visibility
//   pending        what the program is in the middle of writing, unexecuted (vt_filter.h)
//
// Feeding the result to a fresh Screen gives the same lines, cursor, modes and title
// (tests/unit/test_screen.cc's check_repaint, fuzz_screen's bit 2). Pure over the view; only
// built with libvterm.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <string_view>

#include <vterm.h>

#include "base/config.h"
#include "term/mode_scanner.h"
#include "term/screen.h"

namespace uexec::term {

// The attributes and colours a cell is drawn with, rendered as one SGR.
struct Pen {
  VTermScreenCellAttrs attrs{};
  VTermColor fg{}, bg{};
};

// A grid of cells read by position: `rows` × `cols`, cell(row, col) 0-based.
struct Grid {
  int rows = 0;
  int cols = 0;
  std::function<VTermScreenCell(int row, int col)> cell;
};

// Everything a repaint reads; it points into the model and lives no longer than one call.
struct RepaintView {
  base::PtySize size;
  const std::deque<std::string>& scrollback;  // oldest first
  Grid grid;                                  // what the screen shows now
  bool alt_screen = false;
  const Grid* main_screen = nullptr;          // under the alternate screen, when saved
  Cursor main_cursor;                         // the cursor 1049 saved with it
  Pen pen;                                    // the program's current pen
  const Modes& modes;
  std::string_view title;
  Cursor cursor;
  std::string_view pending;                   // VtFilter::pending()
};

// The bytes that repaint `view` on a fresh terminal of view.size (see the essay).
std::string repaint(const RepaintView& view);

}  // namespace uexec::term
