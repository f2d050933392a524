// term::ModeScanner on its own: the modes and margins it reads off the bytes libvterm gets,
// its events, and where it stands (mode_scanner.h). test_screen.cc checks the repaint that
// restores them.
#include <doctest/doctest.h>

#include <string_view>

#include "term/mode_scanner.h"

using uexec::term::Modes;
using uexec::term::ModeScanner;

namespace {

void scan(ModeScanner& s, std::string_view bytes, int rows = 24) {
  for (char c : bytes) s.scan(static_cast<unsigned char>(c), rows);
}

}  // namespace

TEST_CASE("mode_scanner: DEC private modes on and off") {
  ModeScanner s;
  scan(s, "\x1b[?1;6;2004h\x1b[?7l\x1b[?1004h\x1b[?1006h");
  CHECK(s.modes().app_cursor);
  CHECK(s.modes().origin);
  CHECK_FALSE(s.modes().autowrap);
  CHECK(s.modes().bracketed_paste);
  CHECK(s.modes().focus_events);
  CHECK(s.modes().mouse_sgr);
  scan(s, "\x1b[?1000h\x1b[?1002h");
  CHECK(s.modes().mouse == 1002);
  scan(s, "\x1b[?1000l");  // not the one on: kept
  CHECK(s.modes().mouse == 1002);
  scan(s, "\x1b[?1002l\x1b[?1l");
  CHECK(s.modes().mouse == 0);
  CHECK_FALSE(s.modes().app_cursor);
  scan(s, "\x1b[1h");  // ANSI mode 1, not DECCKM
  CHECK_FALSE(s.modes().app_cursor);
  // DECSTR resets some; RIS all of them.
  scan(s, "\x1b[?1h\x1b[2;5r\x1b[!p");
  CHECK_FALSE(s.modes().app_cursor);
  CHECK_FALSE(s.modes().origin);
  CHECK(s.modes().autowrap);
  CHECK(s.modes().top == 2);  // libvterm 0.1 keeps the margins on DECSTR
  scan(s, "\x1b" "c");
  CHECK(s.modes().top == 0);
  CHECK_FALSE(s.modes().bracketed_paste);
  CHECK_FALSE(s.modes().focus_events);
}

TEST_CASE("mode_scanner: margins as libvterm 0.1.4 reads DECSTBM") {
  struct Case {
    std::string_view bytes;
    int rows, top, bottom;
  };
  for (const Case& c : {Case{"\x1b[2;4r", 6, 2, 4}, Case{"\x1b[;r", 6, 0, 0}, Case{"\x1b[5;0r", 6, 0, 0},
                        Case{"\x1b[2;99r", 6, 2, 6}, Case{"\x1b[;4r", 6, 1, 4}, Case{"\x1b[1;6r", 6, 0, 0},
                        Case{"\x1b[23r", 12, 0, 0}, Case{"\x1b[3;3r", 6, 3, 3}}) {
    ModeScanner s;
    scan(s, c.bytes, c.rows);
    INFO("margins " << c.bytes.substr(1));
    CHECK(s.modes().top == c.top);
    CHECK(s.modes().bottom == c.bottom);
  }
  ModeScanner s;
  scan(s, "\x1b[1:2r", 10);  // a form we do not read: margins assumed
  CHECK(s.modes().top == 1);
  CHECK(s.modes().bottom == 10);
  s.reset_margins();
  CHECK(s.modes().top == 0);
  CHECK(s.modes().bottom == 0);
  scan(s, "\x1b[?69h\x1b[2;5s", 10);  // DECSLRM
  CHECK(s.modes().lr_margins);
  CHECK(s.modes().top == 1);
}

TEST_CASE("mode_scanner: events are reported once, SGRs and the state as scanned") {
  ModeScanner s;
  CHECK_FALSE(s.take_alt_enter());
  scan(s, "\x1b[?1049h");
  CHECK(s.take_alt_enter());
  CHECK_FALSE(s.take_alt_enter());
  scan(s, "\x1b[?1049l\x1b[?47h");
  CHECK(s.take_alt_enter());
  scan(s, "\x1b" "8");
  CHECK(s.take_cursor_restore());
  CHECK_FALSE(s.take_cursor_restore());
  scan(s, "\x1b#8");  // DECALN, not DECRC
  CHECK_FALSE(s.take_cursor_restore());

  scan(s, "\x1b[");
  CHECK(s.state() == ModeScanner::State::kCsi);
  scan(s, "1;3");
  CHECK_FALSE(s.sgr_ended());
  scan(s, "1m");
  CHECK(s.sgr_ended());
  CHECK(s.state() == ModeScanner::State::kGround);
  scan(s, "x");
  CHECK_FALSE(s.sgr_ended());
  scan(s, "\x1b[?1m");  // a leader: not an SGR
  CHECK_FALSE(s.sgr_ended());
  scan(s, "\x1b");
  CHECK(s.state() == ModeScanner::State::kEsc);
  scan(s, "(");
  CHECK(s.state() == ModeScanner::State::kEsc);
  scan(s, "0");
  CHECK(s.state() == ModeScanner::State::kGround);
  CHECK(Modes{}.autowrap);
}
