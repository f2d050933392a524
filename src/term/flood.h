// flood.h: what a skipped flood leaves behind (term::Screen's fast path for floods).
//
// A program that prints thousands of lines (a build log, `cat` of a big file) makes
// libvterm scroll its whole grid once per line, and almost none of those lines is ever seen.
// Screen finds "plain runs" in what it feeds libvterm (text, CR, LF, TAB, BS, BEL and SGRs,
// ending with CRLF, with no margins or origin mode in force) and, for one with many CRLFs,
// does not draw the middle: libvterm gets the run's first line and its last `rows + 1`
// lines, and in between a clear, the cursor on the bottom row and the pen the skipped part
// ended with. read_skipped_run() reads that skipped part, as plain bytes:
//
//   pen    the SGRs after its last reset (the reset included), so that libvterm's pen
//          ends as if every line had been drawn
//   rows   its last lines as a person could scroll back to them: SGRs removed, a lone CR
//          keeps what follows it, TAB a space, only valid UTF-8 without C1 controls, at most
//          4 KiB a line, each wrapped at the width (utf8proc's widths) and right-trimmed;
//          at most `max_rows` of them, oldest first
//
// Screen then puts in its scrollback the screen rows above the cursor, then these rows.
// Pure: no libvterm state, no libuv; only built with libvterm (cells.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace uexec::term {

struct SkippedRun {
  std::string pen;                // SGR sequences, in order
  std::vector<std::string> rows;  // oldest first
  bool replaces_history = false;  // the run alone has enough lines to fill max_rows
};

// Reads a skipped plain run (ending with CRLF) for a screen `cols` wide; max_rows 0: no
// rows wanted (the alternate screen, or no scrollback), only the pen.
SkippedRun read_skipped_run(std::string_view run, int cols, std::size_t max_rows);

}  // namespace uexec::term
