// asciicast.h: a process's retained output as an asciicast v2 recording (asciinema's format:
// a JSON header line, then one `[seconds, "o", text]` line per output chunk).
//
// The times are the ring's (output_ring.h: when each chunk was read, in ms after the process
// started), so `asciinema play` shows the output at the pace it came. Text is UTF-8: a
// sequence cut between two chunks is held back and joined to the next; each invalid byte run
// becomes U+FFFD (the maximal-subpart rule, as browsers' TextDecoder). A pipe session's "\n"
// becomes "\r\n", as a terminal would need it. Evicted output (the ring's middle) is one event
// saying how many bytes were not retained. The web page builds the same file in JavaScript
// (src/web/page/app.js, `castOf`); tests/e2e/asciicast_test.py holds the two to the same bytes.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace uexec::cli {

struct CastHeader {
  int width = 80, height = 24;
  long long timestamp = 0;  // the start, in seconds since the epoch; 0: left out
  std::string command;      // the argv, joined with spaces; empty: left out
};

class CastWriter {
 public:
  // `pipe`: the output came through pipes, not a terminal ("\n" becomes "\r\n").
  CastWriter(CastHeader header, bool pipe) : header_(std::move(header)), pipe_(pipe) {}

  // The first line: {"version": 2, "width": W, "height": H, ...}.
  std::string header() const;
  // The event for one chunk read `at_ms` after the start; "" when it holds only the start of
  // a UTF-8 sequence (kept for the next).
  std::string chunk(std::uint32_t at_ms, std::string_view bytes);
  // The event that stands for `bytes` of evicted output, at `at_ms`.
  std::string gap(std::uint32_t at_ms, std::uint64_t bytes);
  // What is still held back, as its own event (at the last chunk's time); "" when nothing is.
  std::string finish();

 private:
  std::string event(std::uint32_t at_ms, const std::string& text) const;

  CastHeader header_;
  bool pipe_;
  std::string carry_;  // an incomplete UTF-8 sequence from the last chunk
  std::uint32_t last_ms_ = 0;
};

}  // namespace uexec::cli
