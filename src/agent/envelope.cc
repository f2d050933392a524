#include "agent/envelope.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "session/output_ring.h"
#include "session/utf8_cut.h"

namespace uexec::agent {

Collected collect(const session::OutputRing& ring, std::uint64_t from, bool hold_partial) {
  Collected c;
  c.start = std::min(from, ring.total());
  std::uint64_t cursor = c.start;
  while (cursor < ring.total()) {
    auto r = ring.read_from(cursor, SIZE_MAX);
    if (r.gap > 0) {
      c.gap_at = c.raw.size();
      c.gap = r.gap;
    }
    c.raw += r.text();
    if (r.next == cursor) break;
    cursor = r.next;
  }
  c.end = cursor;
  if (hold_partial) {
    std::size_t k = session::incomplete_tail(c.raw);
    if (k > 0 && k <= c.raw.size() - (c.gap > 0 ? c.gap_at : 0)) {
      c.raw.resize(c.raw.size() - k);
      c.end -= k;
    }
  }
  return c;
}

void trim_collected(Collected& c, std::uint64_t to) {
  if (to >= c.end) return;
  to = std::max(to, c.start);
  std::uint64_t span = to - c.start;  // absolute bytes kept, the evicted ones included
  if (c.gap == 0 || span <= c.gap_at) {
    c.raw.resize(std::min<std::size_t>(static_cast<std::size_t>(span), c.raw.size()));
    c.gap = 0;
    c.gap_at = 0;
  } else if (span <= c.gap_at + c.gap) {
    c.raw.resize(c.gap_at);
    c.gap = span - c.gap_at;
  } else {
    c.raw.resize(static_cast<std::size_t>(span - c.gap));
  }
  c.end = to;
}

Collected from_offset(const Collected& all, std::uint64_t from) {
  Collected c;
  if (from >= all.end) {
    c.start = c.end = all.end;
    return c;
  }
  c.end = all.end;
  c.start = from;
  if (from < all.start) {  // all.start > 0 only when nothing before it is retained: no other gap
    c.raw = all.raw;
    c.gap_at = 0;
    c.gap = all.start - from;
    return c;
  }
  const std::uint64_t skip = from - all.start;  // absolute bytes dropped from the front
  const std::uint64_t gap_from = all.start + all.gap_at, gap_to = gap_from + all.gap;
  if (all.gap == 0 || from < gap_from) {
    c.raw = all.raw.substr(static_cast<std::size_t>(skip));
    if (all.gap > 0) {
      c.gap_at = all.gap_at - static_cast<std::size_t>(skip);
      c.gap = all.gap;
    }
  } else if (from < gap_to) {
    c.raw = all.raw.substr(all.gap_at);
    c.gap = gap_to - from;
  } else {
    c.raw = all.raw.substr(all.gap_at + static_cast<std::size_t>(from - gap_to));
  }
  return c;
}

using session::cut_back;
using session::cut_forward;
using session::lossy_decode;

std::uint64_t tokens_for(std::uint64_t bytes, long bytes_per_token) noexcept {
  auto per = static_cast<std::uint64_t>(bytes_per_token > 0 ? bytes_per_token : 4);
  return (bytes + per - 1) / per;
}

namespace {

std::string evicted_marker(std::uint64_t n) { return fmt::format("\n... {} bytes omitted ...\n", n); }

// Decodes raw[from, to), rendering the evicted span inline if it lies inside.
std::string decode_span(const Collected& c, std::size_t from, std::size_t to, std::vector<Omitted>* omitted) {
  if (c.gap > 0 && c.gap_at >= from && c.gap_at <= to) {
    if (omitted) omitted->push_back({c.start + c.gap_at, c.gap, "evicted"});
    return lossy_decode(std::string_view(c.raw).substr(from, c.gap_at - from)) + evicted_marker(c.gap) +
           lossy_decode(std::string_view(c.raw).substr(c.gap_at, to - c.gap_at));
  }
  return lossy_decode(std::string_view(c.raw).substr(from, to - from));
}

// Absolute offset of raw index i, counting the gap before raw[gap_at].
std::uint64_t abs_at(const Collected& c, std::size_t i, bool gap_before) {
  std::uint64_t a = c.start + i;
  if (c.gap > 0 && (i > c.gap_at || (i == c.gap_at && gap_before))) a += c.gap;
  return a;
}

}  // namespace

Body render_body(const Collected& c, std::size_t budget, long session_id, bool extensions, long bytes_per_token) {
  Body b;
  b.original_tokens = tokens_for(c.end - c.start, bytes_per_token);
  std::size_t n = c.raw.size();
  if (n <= budget) {
    b.text = decode_span(c, 0, n, &b.omitted);
    return b;
  }
  b.truncated = true;
  std::size_t head_budget = budget / 2;
  std::size_t tail_budget = budget - head_budget;
  std::size_t h = head_budget == 0 ? 0 : cut_back(c.raw, head_budget);
  std::size_t t = tail_budget == 0 ? n : cut_forward(c.raw, n - tail_budget);
  if (t < h) t = h;
  // The cut [h, t) in absolute terms; it swallows the evicted span when that lies inside.
  bool gap_inside = c.gap > 0 && c.gap_at >= h && c.gap_at <= t;
  std::uint64_t a = abs_at(c, h, !gap_inside && c.gap_at == h);
  std::uint64_t a_end = abs_at(c, t, gap_inside || c.gap_at < t);
  std::uint64_t cut = a_end - a;
  b.omitted.push_back({a, cut, "truncated"});
  // Evicted output inside the cut is still said to be gone (not just "truncated": a
  // read_output of that range returns a gap there, not bytes).
  if (gap_inside) b.omitted.push_back({c.start + c.gap_at, c.gap, "evicted"});
  std::string head = gap_inside ? lossy_decode(std::string_view(c.raw).substr(0, h)) : decode_span(c, 0, h, &b.omitted);
  std::string tail = gap_inside ? lossy_decode(std::string_view(c.raw).substr(t)) : decode_span(c, t, n, &b.omitted);
  std::string marker =
      extensions ? fmt::format("…{} tokens truncated (read_output session_id={} offset={} length={})…",
                               tokens_for(cut, bytes_per_token), session_id, a, cut)
                 : fmt::format("…{} tokens truncated…", tokens_for(cut, bytes_per_token));
  b.text = fmt::format("Warning: truncated output (original token count: {})\n", b.original_tokens);
  if (head.empty() && tail.empty()) {
    b.text += marker;
  } else {
    b.text += head + "\n" + marker + "\n" + tail;
  }
  return b;
}

std::string render_envelope(const Envelope& e) {
  std::string s = fmt::format("Chunk ID: {}\nWall time: {:.4f} seconds\n", e.chunk_id, e.wall_time_seconds);
  if (e.exit_code)
    s += fmt::format("Process exited with code {}\n", *e.exit_code);
  else
    s += fmt::format("Process running with session ID {}\n", e.session_id);
  for (const auto& line : e.extra) s += line + "\n";
  s += fmt::format("Original token count: {}\nOutput:\n", e.original_tokens);
  s += e.body;
  return s;
}

std::string new_chunk_id() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  return fmt::format("{:06x}", rng() & 0xFFFFFFu);
}

}  // namespace uexec::agent
