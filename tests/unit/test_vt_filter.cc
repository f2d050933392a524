// term::VtFilter on its own: what of the program's bytes it hands libvterm, what it holds
// back between calls (pending()), and the title. test_screen.cc checks the same rules
// through a Screen; these pin the filter's own contract (vt_filter.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "term/vt_filter.h"

using uexec::term::VtFilter;

namespace {

// What one call hands on.
std::string pass(VtFilter& f, std::string_view in) {
  std::string out;
  f.filter(in, out);
  return out;
}

std::string pass(std::string_view in) {
  VtFilter f;
  return pass(f, in);
}

const std::string kFffd = "\xef\xbf\xbd";

}  // namespace

TEST_CASE("vt_filter: text, UTF-8 and C1 controls") {
  CHECK(pass("plain text, 123 ~") == "plain text, 123 ~");
  CHECK(pass("\xe6\x97\xa5\xc3\xa9") == "\xe6\x97\xa5\xc3\xa9");  // well-formed: as it is
  CHECK(pass("a\xc2\x85z") == "az");                              // NEL as UTF-8: dropped
  CHECK(pass("\xff") == kFffd);
  CHECK(pass("\xed\xa0\x80") == kFffd + kFffd + kFffd);  // a surrogate: one per maximal subpart
  CHECK(pass("\xc3" "A") == kFffd + "A");                // printable ASCII cuts a character short
  // A C0 control inside a character runs first; the character is finished after it.
  CHECK(pass("\xc3\r\xa9") == "\r\xc3\xa9");
  // RIS forgets half a character, as libvterm's decoders are reset.
  CHECK(pass("\xe6\x1b" "c\x97") == "\x1b" "c" + kFffd);
}

TEST_CASE("vt_filter: a character or a sequence split across calls waits, and pending() says what waits") {
  VtFilter f;
  CHECK(pass(f, "ab\xe6") == "ab");
  CHECK(f.pending() == "\xe6");
  CHECK(pass(f, "\x97") == "");
  CHECK(pass(f, "\xa5") == "\xe6\x97\xa5");
  CHECK(f.pending().empty());
  CHECK(pass(f, "\x1b[3") == "");
  CHECK(f.pending() == "\x1b[3");
  CHECK(pass(f, "1m") == "\x1b[31m");
  CHECK(f.pending().empty());
  // A C0 control inside a sequence runs where it stands and is not held back.
  CHECK(pass(f, "\x1b[\n") == "\n");
  CHECK(f.pending() == "\x1b[");
  CHECK(pass(f, "1m") == "\x1b[1m");
  // Half a character, then an open string: both wait, the character first.
  CHECK(pass(f, "\xe6\x1b]2;ti") == "");
  CHECK(f.pending() == "\xe6\x1b]2;ti");
  // A sequence too long to replay is not handed on.
  VtFilter g;
  CHECK(pass(g, "\x1b]2;" + std::string(VtFilter::kMaxPendingSeq + 10, 'x')) == "");
  CHECK(g.pending().empty());
}

TEST_CASE("vt_filter: CSIs libvterm 0.1.4 cannot take are dropped or bounded") {
  auto csi = [](int params) {
    std::string s = "\x1b[";
    for (int i = 1; i < params; ++i) s += "0;";
    return s + "1m";
  };
  CHECK(pass(csi(16)) == csi(16));
  CHECK(pass(csi(17) + "A") == "A");
  CHECK(pass("\x1b[1234567C") == "\x1b[99999C");  // saturated
  CHECK(pass("\x1b[??1h") == "");                 // two leader bytes
  CHECK(pass("\x1b[1$$p") == "");                 // two intermediate bytes
  CHECK(pass("\x1b[\xb8" "a") == "a");            // a byte of 0x80 or more ends it, lost with it
  CHECK(pass("\x1b[1\x18m") == "m");              // CAN abandons it
}

TEST_CASE("vt_filter: a mode set or reset naming several modes becomes one sequence per mode") {
  // libvterm 0.1.4 sets only the first mode of `CSI ? 1 ; 6 h`; terminals set each.
  CHECK(pass("\x1b[?1;6h") == "\x1b[?1h\x1b[?6h");
  CHECK(pass("\x1b[?1049;25l") == "\x1b[?1049l\x1b[?25l");
  CHECK(pass("\x1b[4;20h") == "\x1b[4h\x1b[20h");  // SM too
  CHECK(pass("\x1b[?;6h") == "\x1b[?6h");           // a missing mode is none
  CHECK(pass("\x1b[?;h") == "");
  CHECK(pass("\x1b[?6:1;7h") == "\x1b[?6:1h\x1b[?7h");
  CHECK(pass("\x1b[?6h") == "\x1b[?6h");             // one mode: as it is
  CHECK(pass("\x1b[?1;6$h") == "\x1b[?1;6$h");       // not SM/RM: as it is
  CHECK(pass("\x1b[>1;6h") == "\x1b[>1;6h");
  CHECK(pass("\x1b[1;6r") == "\x1b[1;6r");
}

TEST_CASE("vt_filter: REP only right after a printable ASCII character") {
  CHECK(pass("\x1b[b") == "");
  CHECK(pass("a\x1b[3b") == "a\x1b[3b");
  CHECK(pass("a\x1b[3b\x1b[2b") == "a\x1b[3b\x1b[2b");  // REP keeps the character
  CHECK(pass("a\r\x1b[3b") == "a\r");
  CHECK(pass("\xe4\xb8\xad\x1b[3b") == "\xe4\xb8\xad");
  VtFilter f;
  CHECK(pass(f, "a\x1b[") == "a");
  CHECK(pass(f, "2b") == "\x1b[2b");  // split across calls
  CHECK(pass(f, "b") == "b");
  f.forget_last_character();
  CHECK(pass(f, "\x1b[2b") == "");
}

TEST_CASE("vt_filter: strings are swallowed; OSC 0 and 2 set the title") {
  VtFilter f;
  CHECK(pass(f, "x\x1b]2;my title\x07y") == "xy");
  CHECK(f.title() == "my title");
  CHECK(pass(f, "\x1b]0;sp") == "");
  CHECK(pass(f, "lit\x1b\\") == "");
  CHECK(f.title() == "split");
  CHECK(pass(f, "\x1b]1;icon\x07\x1bPdcs\x1b\\\x1b_apc\x1b\\z") == "z");
  CHECK(f.title() == "split");
  CHECK(pass(f, "\x1b]2;" + std::string(5000, 't') + "\x07") == "");
  CHECK(f.title().size() == VtFilter::kMaxTitle);
  // Any ESC but ST ends a string too, and starts a sequence of its own.
  CHECK(pass(f, "\x1b]2;a\x1b[1m") == "\x1b[1m");
  CHECK(f.title() == "a");
}

TEST_CASE("vt_filter: the output does not depend on where the input is cut") {
  std::string stream;
  unsigned x = 12345;
  const std::vector<std::string> pieces = {"abc", "\r\n", "\x1b[", "1;31", "m", "\x1b]2;t", "\x07", "\xe6\x97", "\xa5",
                                           "\xc2\x85", "\x1b[3b", "\xff", "\x1b" "c", "\x1b(", "0", "\x1b[?1049h", "\t"};
  for (int i = 0; i < 2000; ++i) {
    x = x * 1103515245u + 12345u;
    stream += pieces[(x >> 16) % pieces.size()];
  }
  VtFilter whole, bytewise;
  std::string a = pass(whole, stream), b;
  for (char c : stream) b += pass(bytewise, std::string(1, c));
  CHECK(a == b);
  CHECK(whole.pending() == bytewise.pending());
  CHECK(whole.title() == bytewise.title());
}
