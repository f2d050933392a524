// The screen model (term::Screen) against recorded byte streams (tests/data/*.bin, made by
// tests/data/record_streams.py from real programs on a real PTY), and the repaint: feeding
// ansi() to a fresh Screen of the same size must reproduce the same screen.
#include <doctest/doctest.h>
#include <utf8proc.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "term/screen.h"

using uexec::base::PtySize;
using uexec::term::Screen;

namespace {

std::string data_file(const std::string& name) {
  const char* dir = std::getenv("UEXEC_DATA_DIR");
  REQUIRE_MESSAGE(dir != nullptr, "UEXEC_DATA_DIR is not set");
  std::ifstream in(std::string(dir) + "/" + name, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing " << name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<Screen> screen(PtySize size = {24, 80}) {
  auto s = Screen::create(size);
  REQUIRE(s);
  return std::move(*s);
}

// The repaint is faithful: a fresh screen fed ansi() shows the same text, cursor and modes
// (and, unless `exact_scrollback` is false, the same scrollback: lines reconstructed from
// a skipped flood of arbitrary bytes may wrap differently in libvterm).
void check_repaint(const Screen& s, bool exact_scrollback = true) {
  auto copy = screen(s.size());
  copy->feed(s.ansi());
  CHECK(copy->lines() == s.lines());
  CHECK(copy->cursor().row == s.cursor().row);
  CHECK(copy->cursor().col == s.cursor().col);
  CHECK(copy->cursor().visible == s.cursor().visible);
  CHECK(copy->alt_screen() == s.alt_screen());
  CHECK(copy->title() == s.title());
  CHECK(copy->app_cursor_keys() == s.app_cursor_keys());
  std::string a = copy->ansi(), b = s.ansi();
  if (exact_scrollback) CHECK(a == b);  // cell for cell, colours included
  CHECK(a.substr(a.rfind("\x1b[H")) == b.substr(b.rfind("\x1b[H")));  // the grid and modes
}

// Display width of UTF-8 text by utf8proc (what the tests hold libvterm's widths against):
// per extended grapheme cluster, the width of its first code point, as terminals draw them
// (a combining mark or a conjoining jamo joins the cell of its base).
int utf8proc_width(const std::string& text) {
  int w = 0;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_int32_t prev = -1, state = 0;
  while (left > 0) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    REQUIRE(n > 0);
    if (prev < 0 || utf8proc_grapheme_break_stateful(prev, cp, &state)) w += utf8proc_charwidth(cp);
    prev = cp;
    p += n;
    left -= n;
  }
  return w;
}

}  // namespace

TEST_CASE("screen: colours and attributes from a recorded stream") {
  auto s = screen();
  s->feed(data_file("colour.bin"));
  auto lines = s->lines();
  CHECK(lines[0] == "red boldgreen brightblue orange rgb rev ul");
  CHECK(lines[1] == "still-magenta");
  std::string a = s->ansi();
  // Each colour form comes back in the repaint, in its own notation.
  CHECK(a.find("\x1b[0;31mred") != std::string::npos);
  CHECK(a.find("\x1b[0;1;32mboldgreen") != std::string::npos);
  CHECK(a.find("\x1b[0;94mbrightblue") != std::string::npos);
  CHECK(a.find("\x1b[0;38;5;208morange") != std::string::npos);
  CHECK(a.find("\x1b[0;38;2;10;20;30mrgb") != std::string::npos);
  CHECK(a.find("\x1b[0;7mrev") != std::string::npos);
  CHECK(a.find("\x1b[0;4mul") != std::string::npos);
  CHECK(a.find("\x1b[0;41m  ") != std::string::npos);  // a coloured blank is painted
  // The program's pen is still magenta: the repaint hands it back before the cursor.
  CHECK(a.find("\x1b[0;35m\x1b[2;14H") != std::string::npos);
  check_repaint(*s);
}

TEST_CASE("screen: cursor movement, carriage returns and absolute moves") {
  auto s = screen();
  s->feed(data_file("cursor.bin"));
  auto lines = s->lines();
  CHECK(lines[0] == "progress 100%");
  CHECK(lines[9] == "                   at-10-20");
  CHECK(lines[7] == std::string(27, ' ') + "up-two" + std::string(5, ' ') + "right-five");
  CHECK(s->cursor().row == 14);
  CHECK(s->cursor().col == 0);
  check_repaint(*s);
}

TEST_CASE("screen: the alternate screen of vim, and the shell's screen after :q") {
  auto s = screen();
  s->feed(data_file("vim_open.bin"));
  CHECK(s->alt_screen());
  CHECK(s->app_cursor_keys());  // vim asked for DECCKM
  auto lines = s->lines();
  CHECK(lines[0] == "line 1 of the file");
  CHECK(lines[22] == "line 23 of the file");
  CHECK(lines[23].find("40L") != std::string::npos);
  std::string a = s->ansi();
  CHECK(a.find("\x1b[?1049h") != std::string::npos);
  CHECK(a.find("\x1b[?2004h") != std::string::npos);
  check_repaint(*s);
  // A viewer attached during vim: after :q it shows the shell's screen under vim too.
  auto viewer = screen();
  viewer->feed(s->ansi());

  s->feed(data_file("vim_quit.bin"));
  viewer->feed(data_file("vim_quit.bin"));
  CHECK(viewer->lines() == s->lines());
  CHECK(viewer->cursor().row == s->cursor().row);
  CHECK_FALSE(s->alt_screen());
  CHECK(s->lines()[0] == "before vim");
  CHECK_FALSE(s->app_cursor_keys());
  check_repaint(*s);
}

TEST_CASE("screen: wide and combining characters, with utf8proc's widths") {
  auto s = screen();
  s->feed(data_file("wide.bin"));
  auto lines = s->lines();
  CHECK(lines[0] == "wide:\u65e5\u672c\u8a9e|emoji:\U0001F600|comb:e\u0301|hangul:\u1100\u1161");
  // Where "|emoji" lands says how wide libvterm made the three CJK characters: as utf8proc says.
  CHECK(utf8proc_width("\u65e5\u672c\u8a9e") == 6);
  CHECK(utf8proc_width("\U0001F600") == 2);
  CHECK(utf8proc_width("e\u0301") == 1);
  // Cursor columns after each piece agree with utf8proc's widths of the same text.
  for (const std::string piece : {"\u65e5\u672c\u8a9e", "\U0001F600", "e\u0301", "\u1100\u1161", "abc"}) {
    auto t = screen();
    t->feed(piece);
    CHECK_MESSAGE(t->cursor().col == utf8proc_width(piece), "piece " << piece);
  }
  // A wide character that does not fit in the last column wraps whole to the next line.
  CHECK(lines[1] == std::string(79, '0'));
  CHECK(lines[2] == "\u4e2d");
  check_repaint(*s);
}

TEST_CASE("screen: UTF-8 split across feeds, titles, resizes and bounded scrollback") {
  auto s = screen({5, 20});
  std::string text = "\xe6\x97\xa5";  // one CJK character fed a byte at a time
  for (char c : text) s->feed(std::string(1, c));
  CHECK(s->lines()[0] == "\u65e5");
  s->feed("abc\xc3");  // split right after text (libvterm alone shows U+FFFD)
  s->feed("\xa9");
  CHECK(s->lines()[0] == "\u65e5abc\u00e9");
  s->feed("\x1b]2;my title\x07");
  CHECK(s->title() == "my title");
  // An OSC split across feeds, and a CSI split across feeds, are still seen whole.
  s->feed("\x1b]2;sec");
  s->feed("ond\x1b\\");
  CHECK(s->title() == "second");
  s->feed("\x1b[?");
  s->feed("1h");
  CHECK(s->app_cursor_keys());
  s->feed("\x1b" "c");  // RIS resets the modes
  CHECK_FALSE(s->app_cursor_keys());

  auto small = Screen::create({3, 10}, 4);
  REQUIRE(small);
  for (int i = 0; i < 20; ++i) (*small)->feed("l" + std::to_string(i) + "\r\n");
  CHECK((*small)->scrollback().size() == 4);  // bounded
  CHECK((*small)->scrollback().back() == "l17");
  CHECK((*small)->lines()[0] == "l18");
  (*small)->resize({6, 40});
  CHECK((*small)->size().rows == 6);
  CHECK((*small)->size().cols == 40);
  (*small)->feed("\x1b[6;40Hz");
  CHECK((*small)->lines()[5] == std::string(39, ' ') + "z");
  // The repaint of a screen with scrollback puts the history above and the screen in place.
  auto copy = screen({6, 40});
  copy->feed((*small)->ansi());
  CHECK(copy->lines() == (*small)->lines());
  CHECK(copy->scrollback().size() == 4);
  CHECK(copy->scrollback().back() == "l17");
  CHECK(Screen::create({0, 0}).value()->size().rows == 1);  // clamped, never zero
}

TEST_CASE("screen: hostile input stays bounded and never breaks the model") {
  auto s = screen({4, 10});
  s->feed(std::string("\x1b[") + std::string(10000, '9') + "h");  // an absurd CSI
  s->feed("\x1b]2;" + std::string(100000, 'x') + "\x07");       // a huge title
  CHECK(s->title().size() <= 1024);
  std::string noise;
  for (int i = 0; i < 100000; ++i) noise += static_cast<char>((i * 7919) & 0xFF);
  s->feed(noise);
  s->feed("\x1b" "c" "ok");
  CHECK(s->lines()[0] == "ok");
  check_repaint(*s, false);
}

TEST_CASE("screen: a flood skips scrolled-away lines and ends exactly as drawing every line") {
  // Lines with colours, a progress CR, tabs and UTF-8, then a tail; fed whole (the fast path
  // skips) and a line at a time (every line drawn): the screens, cursors and pens agree.
  std::string flood = "start\r\n";
  for (int i = 0; i < 3000; ++i) {
    if (i % 7 == 0) flood += "\x1b[3" + std::to_string(i % 8) + "m";
    flood += "line " + std::to_string(i) + "\t\u00e9t\u00e9";
    if (i % 11 == 0) flood += "\rrewritten " + std::to_string(i);
    if (i % 13 == 0) flood += "\x1b[0m";
    flood += "\r\n";
  }
  flood += "\x1b[1;35mtail without newline";
  for (PtySize size : {PtySize{24, 80}, PtySize{5, 20}, PtySize{50, 132}}) {
    auto fast = screen(size);
    fast->feed("some\r\nearlier\r\nscreen\r\n");
    fast->feed(flood);
    auto slow = screen(size);
    slow->feed("some\r\nearlier\r\nscreen\r\n");
    std::size_t pos = 0;
    while (pos < flood.size()) {
      std::size_t nl = flood.find('\n', pos);
      std::size_t end = nl == std::string::npos ? flood.size() : nl + 1;
      slow->feed(flood.substr(pos, end - pos));
      pos = end;
    }
    CHECK(fast->lines() == slow->lines());
    CHECK(fast->cursor().row == slow->cursor().row);
    CHECK(fast->cursor().col == slow->cursor().col);
    // The pen carries over: what is drawn next has the same attributes.
    fast->feed("!");
    slow->feed("!");
    std::string fa = fast->ansi(), sa = slow->ansi();
    CHECK(fa.substr(fa.rfind("\x1b[H")) == sa.substr(sa.rfind("\x1b[H")));
    CHECK(fast->scrollback().size() == slow->scrollback().size());
    CHECK(fast->scrollback().back() == slow->scrollback().back());
  }
  // Margins (a scroll region) turn the fast path off: still exact.
  auto a = screen({10, 40}), b = screen({10, 40});
  std::string region = "\x1b[2;8r\x1b[8;1H";
  for (int i = 0; i < 500; ++i) region += "r" + std::to_string(i) + "\r\n";
  a->feed(region);
  for (char c : region) b->feed(std::string(1, c));
  CHECK(a->lines() == b->lines());
}

TEST_CASE("screen: inputs that crash or hang libvterm 0.1.4 are defused (a review's fuzzing)") {
  auto a = screen();
  a->feed("\x1b[4h\xc2\x9bo");  // insert mode + a UTF-8-encoded C1 CSI: SIGSEGV in vterm_scroll_rect
  a->feed("ok");
  CHECK(a->lines()[0].find("ok") != std::string::npos);
  auto b = screen();
  b->feed("\x1b(0" + std::string(80, '0') + "\xcc\x81\x1b[b");  // REP after a combining mark: an endless loop
  b->feed("\x1b(Bdone");
  CHECK(b->text().find("done") != std::string::npos);
  auto c = screen();
  c->feed("\x1b[4h\x1b[20;1Hd\x1b[r");  // insert mode and margins, then a smaller screen
  c->resize({15, 80});
  c->feed("j");  // CSI r homed the cursor
  CHECK(c->lines()[0].find('j') != std::string::npos);
  auto d = screen({5, 20});
  d->feed(std::string(2 << 20, 'x'));  // one huge write: libvterm's stack grows with it
  CHECK(d->lines()[3] == std::string(20, 'x'));
}

TEST_CASE("screen: review findings on the fast path and the repaint") {
  // A reset inside a skipped run: the pen ends at the default, as when every line is drawn.
  std::string run = "x\r\n";
  for (int i = 0; i < 100; ++i) run += (i == 50 ? "\x1b[0mline\r\n" : "line\r\n");
  auto fast = screen({5, 20}), slow = screen({5, 20});
  fast->feed("\x1b[1;31m");
  slow->feed("\x1b[1;31m");
  fast->feed(run);
  std::size_t pos = 0;
  while (pos < run.size()) {
    std::size_t nl = run.find('\n', pos) + 1;
    slow->feed(run.substr(pos, nl - pos));
    pos = nl;
  }
  fast->feed("!");
  slow->feed("!");
  std::string fa = fast->ansi(), sa = slow->ansi();
  CHECK(fa.substr(fa.rfind("\x1b[H")) == sa.substr(sa.rfind("\x1b[H")));
  // No blank rows in the history from a skip.
  auto h = screen({5, 20});
  for (int i = 0; i < 100; ++i) h->feed("line " + std::to_string(i) + "\r\n");
  std::string all;
  auto t = screen({5, 20});
  for (int i = 0; i < 100; ++i) all += "line " + std::to_string(i) + "\r\n";
  t->feed(all);
  for (const auto& line : t->scrollback()) CHECK_MESSAGE(!line.empty(), "a blank history row");
  CHECK(t->scrollback() == h->scrollback());
  // A snapshot taken in the middle of a sequence: the viewer finishes it as the program does.
  auto m = screen();
  m->feed("hello \x1b[3");
  auto viewer = screen();
  viewer->feed(m->ansi());
  viewer->feed("1mred");
  m->feed("1mred");
  CHECK(viewer->lines()[0] == "hello red");
  CHECK(viewer->lines() == m->lines());
  // A wide character cropped into the last column by a resize is not repainted as a wrap.
  auto w = screen({3, 10});
  w->feed("1\r\n2\r\nabcdefgh\xe4\xb8\xad");
  w->resize({3, 9});
  auto copy = screen({3, 9});
  copy->feed(w->ansi());
  CHECK(copy->lines()[0] == w->lines()[0]);
  CHECK(copy->lines()[1] == w->lines()[1]);
  // DECSTR keeps libvterm's margins: the fast path must stay off.
  auto r1 = screen({6, 20}), r2 = screen({6, 20});
  std::string margins = "\x1b[2;3r\x1b[!p";
  for (int i = 0; i < 60; ++i) margins += "m" + std::to_string(i) + "\r\n";
  r1->feed(margins);
  for (char ch : margins) r2->feed(std::string(1, ch));
  CHECK(r1->lines() == r2->lines());
  CHECK(r1->cursor().row == r2->cursor().row);
}
