// term::repaint on its own, over a hand-built RepaintView: the order of what it writes
// (repaint.h's essay). test_screen.cc checks the round trip through a Screen (check_repaint).
#include <doctest/doctest.h>

#include <cstring>
#include <deque>
#include <string>

#include "term/repaint.h"

using uexec::term::Grid;
using uexec::term::Modes;
using uexec::term::RepaintView;
using uexec::term::repaint;

namespace {

VTermScreenCell cell(char ch, int fg_index = -1) {
  VTermScreenCell c;
  std::memset(&c, 0, sizeof c);
  c.chars[0] = static_cast<std::uint32_t>(static_cast<unsigned char>(ch));
  c.width = 1;
  c.fg.type = VTERM_COLOR_DEFAULT_FG;
  c.bg.type = VTERM_COLOR_DEFAULT_BG;
  if (fg_index >= 0) vterm_color_indexed(&c.fg, static_cast<std::uint8_t>(fg_index));
  return c;
}

// "ab" over "c" in red, in a 2×4 grid.
Grid small_grid() {
  return {2, 4, [](int r, int c) {
            if (r == 0 && c < 2) return cell(static_cast<char>('a' + c));
            if (r == 1 && c == 0) return cell('c', 1);
            return cell('\0');
          }};
}

}  // namespace

TEST_CASE("repaint: scrollback, grid, pen, modes, title, cursor, then what is pending") {
  const std::deque<std::string> scrollback{"old"};
  Modes modes;
  modes.bracketed_paste = true;
  RepaintView view{.size = {2, 4},
                   .scrollback = scrollback,
                   .grid = small_grid(),
                   .alt_screen = false,
                   .main_screen = nullptr,
                   .main_cursor = {},
                   .pen = {{}, cell('\0').fg, cell('\0').bg},
                   .modes = modes,
                   .title = "t",
                   .cursor = {1, 1, true},
                   .pending = "\x1b[3"};
  CHECK(repaint(view) ==
        "\x1b[0m\x1b[H\x1b[2J"                                   // reset, clear
        "\x1b[?7lold\r\n\x1b[?7h\n\x1b[H"                          // the scrollback, pushed past the top
        "\x1b[1;1H\x1b[0mab\x1b[2;1H\x1b[0;31mc"                   // the grid
        "\x1b[0m"                                                  // the program's pen
        "\x1b[?2004h\x1b]2;t\x07"                                  // modes, title
        "\x1b[2;2H\x1b[?25h"                                       // the cursor
        "\x1b[3");                                                 // pending
}

TEST_CASE("repaint: the main screen before the alternate one; the cursor in origin mode") {
  const std::deque<std::string> none;
  Modes modes;
  modes.origin = true;
  modes.top = 2;
  modes.bottom = 2;
  Grid main = small_grid();
  RepaintView view{.size = {2, 4},
                   .scrollback = none,
                   .grid = {2, 4, [](int, int) { return cell('\0'); }},
                   .alt_screen = true,
                   .main_screen = &main,
                   .main_cursor = {0, 3, true},
                   .pen = {{}, cell('\0').fg, cell('\0').bg},
                   .modes = modes,
                   .title = "",
                   .cursor = {1, 0, false},
                   .pending = ""};
  std::string out = repaint(view);
  CHECK(out.find("\x1b[1;1H\x1b[0mab\x1b[2;1H\x1b[0;31mc\x1b[0m\x1b[1;4H\x1b[?1049h\x1b[H\x1b[2J") != std::string::npos);
  const std::string tail = "\x1b[2;2r\x1b[?6h\x1b[1;1H\x1b[?25l";  // row 2 is the region's first
  CHECK(out.substr(out.size() - tail.size()) == tail);
}
