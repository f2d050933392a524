#include "term/repaint.h"

#include <algorithm>

#include <fmt/format.h>

#include "term/cells.h"

namespace uexec::term {

namespace {

bool same_color(const VTermColor& a, const VTermColor& b) {
  if (VTERM_COLOR_IS_DEFAULT_FG(&a) != VTERM_COLOR_IS_DEFAULT_FG(&b)) return false;
  if (VTERM_COLOR_IS_DEFAULT_BG(&a) != VTERM_COLOR_IS_DEFAULT_BG(&b)) return false;
  if (VTERM_COLOR_IS_DEFAULT_FG(&a) || VTERM_COLOR_IS_DEFAULT_BG(&a)) return true;
  if (VTERM_COLOR_IS_INDEXED(&a) != VTERM_COLOR_IS_INDEXED(&b)) return false;
  if (VTERM_COLOR_IS_INDEXED(&a)) return a.indexed.idx == b.indexed.idx;
  return a.rgb.red == b.rgb.red && a.rgb.green == b.rgb.green && a.rgb.blue == b.rgb.blue;
}

bool same_pen(const Pen& a, const Pen& b) {
  return a.attrs.bold == b.attrs.bold && a.attrs.underline == b.attrs.underline && a.attrs.italic == b.attrs.italic &&
         a.attrs.blink == b.attrs.blink && a.attrs.reverse == b.attrs.reverse && a.attrs.strike == b.attrs.strike &&
         same_color(a.fg, b.fg) && same_color(a.bg, b.bg);
}

void color_sgr(std::string& out, const VTermColor& c, bool fg) {
  if (VTERM_COLOR_IS_DEFAULT_FG(&c) || VTERM_COLOR_IS_DEFAULT_BG(&c)) return;  // after 0: the default
  if (VTERM_COLOR_IS_INDEXED(&c)) {
    int i = c.indexed.idx;
    if (i < 8) out += fmt::format(";{}", (fg ? 30 : 40) + i);
    else if (i < 16) out += fmt::format(";{}", (fg ? 90 : 100) + i - 8);
    else out += fmt::format(";{};5;{}", fg ? 38 : 48, i);
  } else {
    out += fmt::format(";{};2;{};{};{}", fg ? 38 : 48, c.rgb.red, c.rgb.green, c.rgb.blue);
  }
}

void pen_sgr(std::string& out, const Pen& p) {
  out += "\x1b[0";
  if (p.attrs.bold) out += ";1";
  if (p.attrs.italic) out += ";3";
  if (p.attrs.underline == 1) out += ";4";
  if (p.attrs.underline == 2) out += ";21";
  if (p.attrs.blink) out += ";5";
  if (p.attrs.reverse) out += ";7";
  if (p.attrs.strike) out += ";9";
  color_sgr(out, p.fg, true);
  color_sgr(out, p.bg, false);
  out += 'm';
}

// A cell that a repaint must draw even when it holds no character.
bool visible_blank(const VTermScreenCell& c) {
  return !VTERM_COLOR_IS_DEFAULT_BG(&c.bg) || c.attrs.reverse || c.attrs.underline || c.attrs.strike;
}

// A cell of only combining characters (libvterm makes one, of width 0, when a mark follows a
// cursor move).
bool lone_mark(const VTermScreenCell& c) { return c.chars[0] != kWideContinuation && vterm_width(c.chars[0]) == 0; }

// Appends the grid's cells, row by row, each drawn with its pen. A lone mark would join the
// cell printed before it, and the cursor would not move past it: such cells are painted
// first, each over a space of its own, and the row's other cells then jump over them.
void paint(std::string& out, const Grid& grid) {
  const auto& get = grid.cell;
  Pen pen;
  bool pen_set = false;
  auto use_pen = [&](const VTermScreenCell& cell) {
    Pen p{cell.attrs, cell.fg, cell.bg};
    if (!pen_set || !same_pen(p, pen)) {
      pen_sgr(out, p);
      pen = p;
      pen_set = true;
    }
  };
  for (int r = 0; r < grid.rows; ++r) {
    int last = -1;
    bool marks = false;
    for (int c = 0; c < grid.cols; ++c) {
      VTermScreenCell cell = get(r, c);
      if ((cell.chars[0] != 0 && cell.chars[0] != kWideContinuation) || visible_blank(cell)) last = c;
      marks = marks || lone_mark(cell);
    }
    if (last < 0) continue;
    for (int c = 0; marks && c <= last; ++c) {
      VTermScreenCell cell = get(r, c);
      if (!lone_mark(cell)) continue;
      // A space there first: libvterm joins a mark to the last character printed when the
      // cursor stands right after it, wherever that character has gone since (scrolled away).
      out += fmt::format("\x1b[{0};{1}H \x1b[{0};{1}H", r + 1, c + 1);
      use_pen(cell);
      cell_text(out, cell);
    }
    out += fmt::format("\x1b[{};1H", r + 1);
    bool jump = false;
    auto row = [&get, r](int c) { return get(r, c); };
    for (int c = 0; c <= last; ++c) {
      VTermScreenCell cell = get(r, c);
      if (lone_mark(cell)) {
        jump = true;
        continue;
      }
      if (jump) out += fmt::format("\x1b[{};{}H", r + 1, c + 1);
      jump = false;
      use_pen(cell);
      if (whole_wide(cell, c, grid.cols, row)) {
        cell_text(out, cell);
        ++c;
      } else if (half_wide(cell)) {
        out += ' ';  // half a wide character (whole_wide): printed, it would wrap or overlap
      } else {
        cell_text(out, cell);
      }
    }
  }
}

}  // namespace

std::string repaint(const RepaintView& view) {
  const Modes& modes = view.modes;
  const base::PtySize size = view.size;
  std::string out = "\x1b[0m\x1b[H\x1b[2J";
  // Scrollback first, each line pushed past the top so it lands in the viewer's history.
  if (!view.scrollback.empty()) {
    out += "\x1b[?7l";  // a line a little too wide for the viewer is cut, never spread over two rows
    for (const auto& line : view.scrollback) {
      out += line;
      out += "\r\n";
    }
    out += "\x1b[?7h";
    out.append(static_cast<std::size_t>(size.rows - 1), '\n');
    out += "\x1b[H";
  }
  if (view.alt_screen) {
    // The main screen under the alternate one, and the cursor 1049 saved, so that leaving
    // the alternate screen shows what the model shows.
    if (view.main_screen) {
      paint(out, *view.main_screen);
      out += fmt::format("\x1b[0m\x1b[{};{}H", std::min<int>(view.main_cursor.row, size.rows - 1) + 1,
                         std::min<int>(view.main_cursor.col, size.cols - 1) + 1);
    }
    out += "\x1b[?1049h\x1b[H\x1b[2J";
  }
  paint(out, view.grid);
  // The program's current pen, so what it writes next keeps its attributes.
  pen_sgr(out, view.pen);
  // Modes, then the cursor (margins and origin mode change what a cursor address means).
  if (modes.top || modes.bottom) out += fmt::format("\x1b[{};{}r", modes.top ? modes.top : 1, modes.bottom ? modes.bottom : size.rows);
  if (modes.app_cursor) out += "\x1b[?1h";
  if (!modes.autowrap) out += "\x1b[?7l";
  if (modes.mouse) out += fmt::format("\x1b[?{}h", modes.mouse);
  if (modes.mouse_sgr) out += "\x1b[?1006h";
  if (modes.focus_events) out += "\x1b[?1004h";
  if (modes.bracketed_paste) out += "\x1b[?2004h";
  if (!view.title.empty()) {
    out += "\x1b]2;";
    out += view.title;
    out += "\x07";
  }
  const Cursor& cur = view.cursor;
  if (modes.origin) {
    out += "\x1b[?6h";
    int top = modes.top ? modes.top : 1;
    out += fmt::format("\x1b[{};{}H", std::max(1, cur.row + 2 - top), cur.col + 1);
  } else {
    out += fmt::format("\x1b[{};{}H", cur.row + 1, cur.col + 1);
  }
  out += cur.visible ? "\x1b[?25h" : "\x1b[?25l";
  // What the program is in the middle of writing (a character or a sequence split by a
  // read), as the filter holds it: libvterm has executed none of it (C0 controls inside a
  // sequence have run, and are not repeated).
  out += view.pending;
  return out;
}

}  // namespace uexec::term
