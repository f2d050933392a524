// term::read_skipped_run on its own: the pen and the scrollback rows a skipped flood leaves
// (flood.h). test_screen.cc checks that a Screen that skips ends as one that draws every line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "term/flood.h"

using uexec::term::read_skipped_run;

using Rows = std::vector<std::string>;

TEST_CASE("flood: the pen is the SGRs after the last reset") {
  auto r = read_skipped_run("a\r\n\x1b[31mb\x1b[0mc\x1b[1m\r\n", 10, 10);
  CHECK(r.pen == "\x1b[0m\x1b[1m");
  CHECK(r.rows == Rows{"a", "bc"});
  CHECK_FALSE(r.replaces_history);
  CHECK(read_skipped_run("\x1b[32mx\r\n\x1b[4my\r\n", 10, 10).pen == "\x1b[32m\x1b[4m");  // no reset: all of them
  auto none = read_skipped_run("\x1b[m\x1b[35mx\r\n", 10, 0);  // no rows wanted
  CHECK(none.pen == "\x1b[m\x1b[35m");
  CHECK(none.rows.empty());
}

TEST_CASE("flood: rows as a person scrolls back to them") {
  CHECK(read_skipped_run("progress 1\rprogress 2\r\n", 20, 10).rows == Rows{"progress 2"});  // a lone CR
  CHECK(read_skipped_run("abcdefghijkl\r\n", 5, 10).rows == Rows{"abcde", "fghij", "kl"});   // wrapped
  CHECK(read_skipped_run("\u65e5\u672c\u8a9e\r\n", 4, 10).rows == Rows{"\u65e5\u672c", "\u8a9e"});  // wide
  CHECK(read_skipped_run("\xc2\x85x\t\xff  \r\n", 20, 10).rows == Rows{"x \ufffd"});  // C1 dropped, TAB, U+FFFD, trimmed
  auto long_line = read_skipped_run(std::string(5000, 'y') + "\r\n", 1000, 10).rows;  // 4 KiB kept, then wrapped
  CHECK(long_line == Rows{std::string(1000, 'y'), std::string(1000, 'y'), std::string(1000, 'y'), std::string(1000, 'y'),
                          std::string(96, 'y')});
  // Only the last max_rows survive; a run with that many lines replaces the history.
  auto r = read_skipped_run("L0\r\nL1\r\nL2\r\nL3\r\nL4\r\n", 10, 2);
  CHECK(r.rows == Rows{"L3", "L4"});
  CHECK(r.replaces_history);
}
