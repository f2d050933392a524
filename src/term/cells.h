// cells.h: libvterm's cells read as text, the way a terminal shows them (term::Screen's
// lines() and scrollback, and the repaint, repaint.h).
//
// libvterm 0.1.4 stores a wide character in its left cell and marks the right one as a
// continuation (kWideContinuation). It keeps the left half when a character is written over
// the right one or a resize cuts it off; a terminal shows a blank there, and so does every
// reader here (whole_wide, row_chars). Widths are libvterm's own (vterm_width), asked of a
// scratch terminal (one per thread), since its tables are not utf8proc's. Only built with
// libvterm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <vterm.h>

namespace uexec::term {

inline constexpr std::uint32_t kWideContinuation = 0xFFFFFFFFu;  // libvterm's cell right of a wide one
inline constexpr std::size_t kMaxScrollbackLine = 4096;  // bytes kept of one line of scrollback

// Appends `cp` as UTF-8; a surrogate or a value above U+10FFFF as U+FFFD.
void put_utf8(std::string& out, std::uint32_t cp);
// Drops trailing spaces.
void rtrim(std::string& s);
// Appends one cell's characters (base + combining) as UTF-8; an empty cell is a space.
void cell_text(std::string& out, const VTermScreenCell& cell);
// The width libvterm gives `cp` printed alone: 0 (its combining table), 1 or 2.
int vterm_width(std::uint32_t cp);

// A wide character whose right half is still there (at `c + 1`, the continuation cell);
// `get(col)` reads the row's cells, `cols` wide.
template <class Get>
bool whole_wide(const VTermScreenCell& cell, int c, int cols, Get&& get) {
  return cell.chars[0] != 0 && cell.chars[0] != kWideContinuation && vterm_width(cell.chars[0]) == 2 &&
         c + 1 < cols && get(c + 1).chars[0] == kWideContinuation;
}

// Half of a wide character without the other (see whole_wide): shown as a blank.
inline bool half_wide(const VTermScreenCell& cell) {
  return cell.chars[0] == kWideContinuation || (cell.chars[0] != 0 && vterm_width(cell.chars[0]) == 2);
}

// Appends a row's characters as a terminal shows them, up to about `max` bytes: a wide
// character once, half of one as a space.
template <class Get>
void row_chars(std::string& out, int cols, Get&& get, std::size_t max) {
  for (int c = 0; c < cols && out.size() < max; ++c) {
    VTermScreenCell cell = get(c);
    if (whole_wide(cell, c, cols, get)) {
      cell_text(out, cell);
      ++c;
    } else if (half_wide(cell)) {
      out += ' ';
    } else {
      cell_text(out, cell);
    }
  }
}

}  // namespace uexec::term
