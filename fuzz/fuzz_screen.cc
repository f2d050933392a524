// fuzz_screen.cc: term::Screen (libvterm 0.1.4 behind uexec's guards) fed arbitrary bytes.
//
// libvterm 0.1.4 is fragile: vt_filter.h's essay says what the filter in front of it lets
// through (well-formed UTF-8 without C1 controls, whole sequences of at most 16 parameters,
// REP only after printable ASCII, no strings), and screen.cc guards writes, margins and the
// cursor across a resize. This target is the regression net for those guards; everything it
// found is under regressions/fuzz_screen/.
//
// Input: byte 0 rows (1-48), byte 1 cols (1-160), byte 2 flags (bit 0: tiny scrollback;
// bit 1: resizes allowed; bit 2: check the repaint), then the output stream. The stream is
// fed in pieces whose sizes come from the bytes themselves, so sequences and UTF-8 straddle
// feeds; with bit 1 a 0x00 0x00 pair resizes the screen to the next two bytes' size.
//
// Checked after every resize, every 8th feed and at the end: `rows` lines of valid UTF-8 (a wide character once), text()
// is lines() joined with trailing empty lines dropped, the cursor inside the screen, the
// scrollback within its line count and 4 KiB a line, the title within 1 KiB. With bit 2, at the end: ansi() replayed
// on a fresh Screen of the same size gives the same lines, cursor, alternate-screen state
// and title (the repaint promise of screen.h).
#include <string>

#include "fuzz/fuzz_common.h"
#include "term/screen.h"

namespace {

using uexec::fuzz::excerpt;
using uexec::term::Screen;

void check_state(const Screen& s, std::size_t scrollback_max) {
  auto size = s.size();
  auto lines = s.lines();
  FUZZ_CHECK("screen-rows", lines.size() == size.rows, "{} lines for {} rows", lines.size(), size.rows);
  std::string joined;
  std::size_t keep = lines.size();
  while (keep > 0 && lines[keep - 1].empty()) --keep;
  for (std::size_t i = 0; i < keep; ++i) {
    FUZZ_CHECK("screen-utf8", uexec::fuzz::valid_utf8(lines[i]), "line {} is not UTF-8: {}", i, excerpt(lines[i]));
    if (i) joined += '\n';
    joined += lines[i];
  }
  FUZZ_CHECK("screen-text", s.text() == joined, "text() is not lines() joined");
  auto c = s.cursor();
  FUZZ_CHECK("screen-cursor", c.row >= 0 && c.row < size.rows && c.col >= 0 && c.col <= size.cols,
             "cursor ({}, {}) outside {}x{}", c.row, c.col, size.rows, size.cols);
  FUZZ_CHECK("screen-scrollback", s.scrollback().size() <= scrollback_max, "{} scrollback lines (max {})",
             s.scrollback().size(), scrollback_max);
  for (const auto& l : s.scrollback())
    FUZZ_CHECK("screen-scrollback-line", l.size() <= 4096 + 4 * 16, "a scrollback line of {} bytes", l.size());
  // The title is kept as the program sent it (the JSON layer dumps it with replacement), but bounded.
  FUZZ_CHECK("screen-title", s.title().size() <= 1024 + 4, "a title of {} bytes", s.title().size());
}

// libvterm 0.1.4 writes through a null pointer when a double-width character meets a
// one-column screen (regressions/fuzz_screen/wide-char-one-column). Until screen.cc guards
// it, UEXEC_FUZZ_IGNORE=screen-one-column keeps the fuzzer off one-column screens.
unsigned short pick_cols(unsigned char b) {
  auto c = static_cast<unsigned short>(1 + b % 160);
  return c == 1 && uexec::fuzz::ignored("screen-one-column") ? 2 : c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3 || !Screen::available()) return 0;
  unsigned short rows = static_cast<unsigned short>(1 + data[0] % 48);
  unsigned short cols = pick_cols(data[1]);
  std::uint8_t flags = data[2];
  std::size_t scrollback = flags & 1 ? 3 : Screen::kDefaultScrollback;
  auto made = Screen::create({rows, cols}, scrollback);
  FUZZ_CHECK("screen-create", made.has_value(), "Screen::create failed");
  Screen& s = **made;
  std::string_view in(reinterpret_cast<const char*>(data) + 3, size - 3);
  std::size_t pos = 0, feeds = 0;
  while (pos < in.size()) {
    if ((flags & 2) && pos + 4 <= in.size() && in[pos] == '\0' && in[pos + 1] == '\0') {
      s.resize({static_cast<unsigned short>(1 + static_cast<unsigned char>(in[pos + 2]) % 48),
                pick_cols(static_cast<unsigned char>(in[pos + 3]))});
      pos += 4;
      check_state(s, scrollback);
      continue;
    }
    // A piece ends after 1-32 bytes, chosen by the byte where it starts.
    std::size_t n = std::min<std::size_t>(in.size() - pos, 1 + static_cast<unsigned char>(in[pos]) % 32);
    s.feed(in.substr(pos, n));
    pos += n;
    if (++feeds % 8 == 0) check_state(s, scrollback);  // lines() reads every cell: not after each piece
  }
  check_state(s, scrollback);
  if (flags & 4) {
    auto fresh = Screen::create(s.size(), scrollback);
    FUZZ_CHECK("screen-create", fresh.has_value(), "Screen::create failed");
    Screen& t = **fresh;
    t.feed(s.ansi());
    check_state(t, scrollback);
    auto a = s.cursor(), b = t.cursor();
    FUZZ_CHECK("screen-repaint", s.lines() == t.lines(), "ansi() repaints different text:\n{}\nvs\n{}",
               excerpt(s.text(), 400), excerpt(t.text(), 400));
    FUZZ_CHECK("screen-repaint-cursor", a.row == b.row && a.col == b.col && a.visible == b.visible,
               "ansi() repaints the cursor at ({}, {}, {}) instead of ({}, {}, {})", b.row, b.col, b.visible, a.row,
               a.col, a.visible);
    FUZZ_CHECK("screen-repaint-modes", s.alt_screen() == t.alt_screen() && s.title() == t.title() &&
                                           s.app_cursor_keys() == t.app_cursor_keys(),
               "ansi() repaints different modes");
  }
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  uexec::fuzz::quiet_logs();
  return 0;
}
