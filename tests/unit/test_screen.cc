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
  // The resize erased it, as xterm.js does (fuzz: a repaint cannot put half a character back).
  CHECK(w->lines()[2] == "abcdefgh");
  CHECK(copy->lines() == w->lines());
  CHECK(copy->cursor().col == w->cursor().col);
  // DECSTR keeps libvterm's margins: the fast path must stay off.
  auto r1 = screen({6, 20}), r2 = screen({6, 20});
  std::string margins = "\x1b[2;3r\x1b[!p";
  for (int i = 0; i < 60; ++i) margins += "m" + std::to_string(i) + "\r\n";
  r1->feed(margins);
  for (char ch : margins) r2->feed(std::string(1, ch));
  CHECK(r1->lines() == r2->lines());
  CHECK(r1->cursor().row == r2->cursor().row);
}

// ---- The filter in front of libvterm (vt_filter.h's essay), one case per fuzz_screen finding ----

namespace {

// "\x1b[" + n parameters "1;1;…;1" + final.
std::string csi_with_params(int n, const std::string& last, char final) {
  std::string s = "\x1b[";
  for (int i = 1; i < n; ++i) s += "0;";
  return s + last + final;
}

// The cell SGR in front of `text` in the repaint.
bool painted_with(const Screen& s, const std::string& sgr_and_text) { return s.ansi().find(sgr_and_text) != std::string::npos; }

}  // namespace

TEST_CASE("screen: a CSI with more than 16 parameters never reaches libvterm (fuzz: csi-with-17-params)") {
  // libvterm 0.1.4 keeps 16 parameters and wrote the 17th past its array.
  auto s = screen();
  s->feed(csi_with_params(17, "1", 'm') + "A");
  CHECK(s->lines()[0] == "A");
  CHECK(painted_with(*s, "\x1b[0mA"));  // dropped whole: not bold
  s->feed(csi_with_params(16, "1", 'm') + "B");
  CHECK(painted_with(*s, "\x1b[0;1mB"));  // 16 fit
  // The same, a byte per feed: the count goes on across feeds.
  auto t = screen();
  for (char c : csi_with_params(17, "1", 'm') + "A" + csi_with_params(40, "1", 'm') + "C") t->feed(std::string(1, c));
  CHECK(t->lines()[0] == "AC");
  CHECK(painted_with(*t, "\x1b[0mAC"));
  for (char c : csi_with_params(16, "1", 'm') + "B") t->feed(std::string(1, c));
  CHECK(painted_with(*t, "\x1b[0;1mB"));
  // ':' separates parameters too; a C0 control inside runs, the CSI is still counted.
  auto u = screen();
  std::string colons = "\x1b[38:2";
  for (int i = 0; i < 20; ++i) colons += ":1";
  u->feed(colons + "m" + "x\r\x1b[1;\n" + std::string(15, ';') + "5m" + "y");
  CHECK(u->lines()[0] == "x");
  CHECK(u->lines()[1] == "y");
  CHECK(painted_with(*u, "\x1b[0mx\x1b[2;1Hy"));  // one default pen for both
  // A huge parameter saturates instead of overflowing libvterm's long: the cursor stops at
  // the last column; more than one leader or intermediate byte: ignored, like libvterm.
  auto v = screen({5, 20});
  v->feed("\x1b[99999999999999999999999999C");
  CHECK(v->cursor().col == 19);
  v->feed("\r\x1b[??1h\x1b[1$$p");
  CHECK_FALSE(v->app_cursor_keys());
  check_repaint(*v);
}

TEST_CASE("screen: C1 controls never reach libvterm, even with C0 controls inside (fuzz: c1-split)") {
  // C2 <C0> 8F passed the old byte-pair filter; libvterm decoded U+008F and crashed.
  auto s = screen();
  s->feed(std::string("\x1b[4h\xc2\x00\x8f" "ABC", 10));
  CHECK(s->lines()[0] == "ABC");
  CHECK(s->cursor().col == 3);
  auto t = screen();
  t->feed("\x1b[4h\xc2\n\x8fX");  // the LF runs; U+008F is dropped
  CHECK(t->cursor().row == 1);
  CHECK(t->lines()[1] == "X");
  for (const char* piece : {"\xc2", "\x1b[1m", "\r", "\x85", "Y"}) t->feed(piece);  // NEL as UTF-8, in pieces
  CHECK(t->lines()[1] == "YX");  // (insert mode)
  CHECK(t->cursor().row == 1);
  // A character cut by a C0 control or a sequence is finished after it, as libvterm's own
  // decoder does; printable ASCII cuts it short (U+FFFD); ill-formed bytes are U+FFFD each
  // maximal subpart (a surrogate's three bytes: three).
  auto u = screen();
  u->feed("x\xc3\r\xa9\r\n\xc3" "A\r\n\xed\xa0\x80\r\n\xe6\x1b[1m\x97\xa5\r\n\xff\xc0\x80");
  auto lines = u->lines();
  CHECK(lines[0] == "\u00e9");
  CHECK(lines[1] == "\ufffdA");
  CHECK(lines[2] == "\ufffd\ufffd\ufffd");
  CHECK(lines[3] == "\u65e5");
  CHECK(painted_with(*u, "\x1b[0;1m\u65e5"));  // bold: the SGR ran before the character ended
  CHECK(lines[4] == "\ufffd\ufffd\ufffd");
  // RIS forgets half a character, as libvterm's decoders are reset.
  auto r = screen();
  r->feed("\xe6\x1b" "c\x97\xa5");
  CHECK(r->lines()[0] == "\ufffd\ufffd");
  check_repaint(*u);
}

TEST_CASE("screen: REP only right after a printable ASCII character (fuzz: rep-without-previous-character)") {
  // libvterm 0.1.4 loops forever on REP when it knows no previous character of width 1.
  auto s = screen({5, 20});
  s->feed("\x1b[b");  // at the start
  s->feed("\x1b[?1049h\x1b[5b");  // right after the switch to the alternate screen
  s->feed("\x1b[?1049l\x1b" "c\x1b[3b");  // after a reset
  s->feed("\xe4\xb8\xad\x1b[3b");  // after a wide character
  s->feed("\xcc\x81\x1b[3b");  // after a combining mark
  s->feed("\r\n\x1b[3b|");  // after a control
  CHECK(s->lines()[0] == "\u4e2d\u0301");
  CHECK(s->lines()[1] == "|");
  auto t = screen({5, 20});
  t->feed("a\x1b[3b");
  CHECK(t->lines()[0] == "aaaa");
  t->feed("\x1b[2b");  // REP after REP: the character is still there
  CHECK(t->lines()[0] == "aaaaaa");
  t->feed("b\x1b[");  // split across feeds
  t->feed("2b");
  CHECK(t->lines()[0] == "aaaaaabbb");
  t->feed("c\x1b[1m\x1b[2b");  // a sequence in between: dropped (the simple rule)
  CHECK(t->lines()[0] == "aaaaaabbbc");
  t->feed("d");
  t->resize({6, 20});  // a resize in between: dropped
  t->feed("\x1b[2b");
  CHECK(t->lines()[0] == "aaaaaabbbcd");
  check_repaint(*t);
}

TEST_CASE("screen: the repaint appends only what libvterm has not executed (fuzz: repaint-open-csi-*)") {
  // An open CSI with a C0 control inside: the LF ran once; the viewer gets "ESC [" only.
  auto s = screen({24, 80});
  s->feed("Ow\x1b[\n");
  CHECK(s->cursor().row == 1);
  check_repaint(*s);
  auto viewer = screen({24, 80});
  viewer->feed(s->ansi());
  viewer->feed("31mred");
  s->feed("31mred");
  CHECK(viewer->lines() == s->lines());
  CHECK(viewer->ansi() == s->ansi());
  // A CSI ended by a byte of 0x80 or more (libvterm drops both): nothing is open any more,
  // and the lone continuation byte after it was drawn once, as U+FFFD.
  auto t = screen({24, 117});
  t->feed("tw\x1b[\xb8\xad");
  CHECK(t->lines()[0] == "tw\ufffd");
  check_repaint(*t);
  // Half a character, then an open OSC: both are handed on, in that order, unexecuted.
  auto u = screen({5, 20});
  u->feed("ab\xe6\r\x1b]2;ti");
  std::string a = u->ansi();
  CHECK(a.substr(a.size() - 7) == "\xe6\x1b]2;ti");
  check_repaint(*u);
  auto v = screen({5, 20});
  v->feed(a);
  v->feed("tle\x07\x97\xa5z");
  u->feed("tle\x07\x97\xa5z");
  CHECK(u->title() == "title");
  CHECK(v->title() == "title");
  CHECK(u->lines()[0] == "\u65e5z");  // the character ends after the string, at column 0 (the CR)
  CHECK(v->lines() == u->lines());
  CHECK(v->cursor().col == u->cursor().col);
}

TEST_CASE("screen: DECRC after a shrinking resize keeps the cursor inside (fuzz: decrc-after-shrinking-resize)") {
  // libvterm 0.1.4 restores the saved position as it is: row 23 of a one-row screen, where
  // the next character would be written out of bounds.
  auto s = screen({24, 80});
  s->feed("\x1b[24;5H\x1b" "7");
  s->resize({1, 2});
  s->feed("\x1b" "8");
  CHECK(s->cursor().row == 0);
  CHECK(s->cursor().col == 1);
  s->feed("X");
  CHECK(s->lines()[0] == " X");
  // Inside the screen, DECRC restores exactly.
  auto t = screen({10, 20});
  t->feed("\x1b[3;7H\x1b" "7\x1b[H\x1b" "8");
  CHECK(t->cursor().row == 2);
  CHECK(t->cursor().col == 6);
  check_repaint(*t);
  // In origin mode, a position above the margins: clamped into them, as any CSI would
  // (fuzz: decrc-above-the-margins-in-origin-mode); a repaint can only address the region.
  auto u = screen({16, 96});
  u->feed("\x1b[?6h\x1b[2r\x1b" "8");
  CHECK(u->cursor().row == 1);
  check_repaint(*u);
}

TEST_CASE("screen: a mode set naming several modes sets each (fuzz: decset-several-modes-origin)") {
  // libvterm 0.1.4 alone sets only the first; the mode scanner and the repaint took both, so
  // the cursor was repainted inside margins libvterm did not apply it to.
  auto s = screen({24, 80});
  s->feed("\x1b[?;6h\x1b[3r");
  CHECK(s->cursor().row == 2);  // origin mode is on: DECSTBM homes into the region
  check_repaint(*s);
  auto t = screen({24, 80});
  t->feed("\x1b[?25;1h");
  CHECK(t->app_cursor_keys());
  t->feed("\x1b[?1;25l");
  CHECK_FALSE(t->app_cursor_keys());
  CHECK_FALSE(t->cursor().visible);
  check_repaint(*t);
}

TEST_CASE("screen: a cell of only combining marks is repainted as it is (fuzz: repaint-lone-combining-mark)") {
  // A mark after a cursor move gets a cell of its own, of width 0 in libvterm; printed in
  // order it would join the cell before it and hide the one after it.
  auto s = screen({5, 20});
  s->feed("0\xb0\xdf\x1b" "8\xb0");  // '0', U+FFFD, then U+07F0 (a mark) at the restored (0, 0)
  CHECK(s->lines()[0] == "\u07f0\ufffd");
  check_repaint(*s);
  auto t = screen({5, 20});
  t->feed("ab\x1b[1;2H\xcc\x81\xcc\x82\x1b[1;3H|x\x1b[1;6H\xe1\x85\xa1");  // U+0301 U+0302 alone, a jamo vowel alone
  CHECK(t->lines()[0] == "a\u0301\u0302|x \u1161");
  check_repaint(*t);
  // The last character printed before the mark has scrolled away, but the cursor stands
  // right after where it was (fuzz: repaint-lone-mark-after-scrollback).
  auto u = Screen::create({5, 24}, 3);
  REQUIRE(u);
  (*u)->feed("e\xcc\x1b" "D\xad");  // 'e', then U+032D one line down (IND inside the character)
  (*u)->resize({1, 2});
  CHECK((*u)->lines()[0] == " \u032d");
  auto copy = screen({1, 2});  // (libvterm keeps no history on one row: lines and cursor only)
  copy->feed((*u)->ansi());
  CHECK(copy->lines() == (*u)->lines());
  CHECK(copy->cursor().col == (*u)->cursor().col);
}

TEST_CASE("screen: half a wide character shows as a blank, as terminals show it (fuzz: repaint-wide-char-*)") {
  // libvterm 0.1.4 keeps the left half of a wide character when its right half is written
  // over or cut off by a resize; a terminal shows a blank, and a repaint cannot do otherwise.
  auto s = screen({5, 10});
  s->feed("\xe6\x9c\xac\x1b[1;2Hx");  // over the right half
  CHECK(s->lines()[0] == " x");
  s->feed("\r\nab\xe6\x9c\xac\x1b[2;3Hy\x1b[2;5Hz");  // over the left half: the right one is blank
  CHECK(s->lines()[1] == "aby z");
  s->feed("\r\n12345678\xe6\x9c\xac");  // fits exactly
  CHECK(s->lines()[2] == "12345678\u672c");
  check_repaint(*s);
  s->resize({5, 9});  // cut in half by a resize
  CHECK(s->lines()[2] == "12345678");
  check_repaint(*s);
  auto t = screen({1, 2});  // fuzz: repaint-wide-char-half-overwritten, on a 1x2 screen
  t->feed("\xe6\x9c\xac\x1b[1;2H\xef\xbf\xbd");
  CHECK(t->lines()[0] == " \ufffd");
  check_repaint(*t);
}

TEST_CASE("screen: margins are followed as libvterm reads DECSTBM (fuzz: repaint-margins-outside-the-screen)") {
  // A top margin below the screen, or a bottom of 0, is no region at all for libvterm: the
  // repaint must not restore one (in origin mode it would move the cursor).
  auto s = screen({12, 2});
  s->feed("\x1b[23r\x1b[?6h\x0b");
  CHECK(s->cursor().row == 1);
  check_repaint(*s);
  for (const char* margins : {"\x1b[5;0r", "\x1b[0;0r", "\x1b[3;3r", "\x1b[;4r", "\x1b[2r", "\x1b[2;99r", "\x1b[;r"}) {
    auto t = screen({6, 10});
    t->feed(std::string(margins) + "\x1b[?6h\x1b[3;2Hx\n\n\n\n\ny");
    INFO("margins " << margins + 1);
    check_repaint(*t);
  }
}
