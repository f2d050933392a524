// body_check.h: the invariants of agent::render_body, shared by fuzz_ring (bodies over what
// a ring retained) and fuzz_utf8 (bodies over arbitrary bytes and gaps).
//
// envelope.h promises: the body is cut in raw byte space, so every range it names is a raw
// range read_output can fetch; cuts land on grapheme (or code point) boundaries; each piece
// is decoded lossily. So: the text is valid UTF-8, the token count is ceil(bytes / per),
// truncation happens exactly when the raw bytes exceed the budget, every omitted range lies
// inside [start, end), and the truncated range is at least what the budget demands and at
// most that plus utf8_cut.h's two 32-byte grapheme windows (and a code point each).
#pragma once

#include <cstdint>
#include <string>

#include "agent/envelope.h"
#include "fuzz/fuzz_common.h"

namespace uexec::fuzz {

inline void check_body(const agent::Collected& c, std::size_t budget, long bytes_per_token, bool extensions) {
  auto b = agent::render_body(c, budget, 1234, extensions, bytes_per_token);
  std::uint64_t per = bytes_per_token > 0 ? static_cast<std::uint64_t>(bytes_per_token) : 4;
  FUZZ_CHECK("body-utf8", valid_utf8(b.text), "render_body text is not valid UTF-8: {}", excerpt(b.text));
  FUZZ_CHECK("body-tokens", b.original_tokens == (c.end - c.start + per - 1) / per, "original_tokens {} for {} bytes",
             b.original_tokens, c.end - c.start);
  FUZZ_CHECK("body-truncated", b.truncated == (c.raw.size() > budget), "truncated={} for {} bytes, budget {}",
             b.truncated, c.raw.size(), budget);
  int evicted_entries = 0;
  for (const auto& o : b.omitted) {
    FUZZ_CHECK("body-range", o.offset >= c.start && o.offset + o.length <= c.end,
               "omitted {} [{}, +{}) outside the collected [{}, {}) (gap {} at {}, {} raw bytes, budget {})", o.kind,
               o.offset, o.length, c.start, c.end, c.gap, c.gap_at, c.raw.size(), budget);
    if (o.kind == "evicted") {
      ++evicted_entries;
      FUZZ_CHECK("body-evicted", o.length == c.gap && o.offset == c.start + c.gap_at,
                 "evicted entry [{}, +{}), gap {} at {}", o.offset, o.length, c.gap, c.gap_at);
    }
  }
  // An evicted span is never silent: named once (inside a truncated range too).
  FUZZ_CHECK("body-evicted", evicted_entries == (c.gap > 0 ? 1 : 0), "gap {} but {} evicted entries", c.gap,
             evicted_entries);
  if (!b.truncated) return;
  FUZZ_CHECK("body-truncated-entry", !b.omitted.empty() && b.omitted.front().kind == "truncated",
             "a truncated body without its range");
  const auto& t = b.omitted.front();
  std::uint64_t gap_abs = c.start + c.gap_at;
  bool gap_inside = c.gap > 0 && t.offset <= gap_abs && gap_abs + c.gap <= t.offset + t.length;
  std::uint64_t n = c.raw.size();
  std::uint64_t cut_raw = t.length - (gap_inside ? std::min<std::uint64_t>(c.gap, t.length) : 0);
  FUZZ_CHECK("body-cut-size", cut_raw >= n - budget && cut_raw <= n - budget + 2 * (32 + 4),
             "cut {} raw bytes of {} for budget {} (gap {} at {}, inside {})", cut_raw, n, budget, c.gap, c.gap_at,
             gap_inside);
  std::string head = fmt::format("Warning: truncated output (original token count: {})\n", b.original_tokens);
  FUZZ_CHECK("body-warning", b.text.compare(0, head.size(), head) == 0, "body does not start with the warning: {}",
             excerpt(b.text));
}

}  // namespace uexec::fuzz
