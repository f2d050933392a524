#include "session/utf8_cut.h"

#include <utf8proc.h>

#include <vector>

namespace uexec::session {

namespace {

constexpr std::size_t kClusterWindow = 32;

// Returns the length of a well-formed sequence at `i`, or 0 with `*maximal` set to the
// length of the maximal invalid subpart (Unicode Table 3-7).
std::size_t well_formed(std::string_view s, std::size_t i, std::size_t* maximal) noexcept {
  auto b = [&](std::size_t k) -> unsigned { return static_cast<unsigned char>(s[k]); };
  unsigned c = b(i);
  *maximal = 1;
  if (c < 0x80) return 1;
  std::size_t need;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;  // C0, C1, F5..FF, or a stray continuation byte
  }
  for (std::size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) {
      *maximal = k;  // truncated at the end: a (possibly incomplete) prefix
      return 0;
    }
    unsigned x = b(i + k);
    unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (x < l || x > h) {
      *maximal = k;
      return 0;
    }
  }
  return need + 1;
}

bool is_cont(std::string_view s, std::size_t i) noexcept {
  return (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
}

// Grapheme cluster boundaries of raw[from, to) with `from` at a unit start; invalid units
// are one cluster each.
std::vector<std::size_t> boundaries(std::string_view raw, std::size_t from, std::size_t to) {
  std::vector<std::size_t> out;
  out.push_back(from);
  utf8proc_int32_t state = 0;
  utf8proc_int32_t prev = -1;
  std::size_t i = from;
  while (i < to && i < raw.size()) {
    std::size_t maximal = 1;
    std::size_t n = well_formed(raw, i, &maximal);
    utf8proc_int32_t cp = -1;
    if (n > 0) {
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(raw.data() + i),
                       static_cast<utf8proc_ssize_t>(n), &cp);
    } else {
      n = maximal;
    }
    if (i != from) {
      bool brk = prev < 0 || cp < 0 || utf8proc_grapheme_break_stateful(prev, cp, &state);
      if (brk) out.push_back(i);
    }
    prev = cp;
    i += n;
  }
  out.push_back(i);
  return out;
}

// The start of the unit containing `pos` (walking back over continuation bytes, at most 3).
std::size_t unit_start(std::string_view raw, std::size_t pos) noexcept {
  std::size_t p = pos;
  for (int k = 0; k < 3 && p > 0 && p < raw.size() && is_cont(raw, p); ++k) --p;
  // Only step back if the lead byte really owns `pos`.
  std::size_t maximal = 1;
  if (p != pos) {
    std::size_t n = well_formed(raw, p, &maximal);
    std::size_t len = n > 0 ? n : maximal;
    if (p + len <= pos) return pos;
  }
  return p;
}

}  // namespace

std::size_t unit_length(std::string_view raw, std::size_t i) noexcept {
  std::size_t maximal = 1;
  std::size_t n = well_formed(raw, i, &maximal);
  return n > 0 ? n : maximal;
}

std::string lossy_decode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  std::size_t i = 0;
  while (i < raw.size()) {
    std::size_t maximal = 1;
    std::size_t n = well_formed(raw, i, &maximal);
    if (n > 0) {
      out.append(raw.data() + i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += maximal;
    }
  }
  return out;
}

std::size_t incomplete_tail(std::string_view raw) noexcept {
  for (std::size_t back = 1; back <= 3 && back <= raw.size(); ++back) {
    std::size_t i = raw.size() - back;
    unsigned c = static_cast<unsigned char>(raw[i]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    std::size_t maximal = 1;
    std::size_t n = well_formed(raw, i, &maximal);
    // Incomplete only if it is a valid prefix that ran into the end of the buffer.
    if (n == 0 && i + maximal == raw.size() && c >= 0xC2 && c <= 0xF4) return back;
    return 0;
  }
  return 0;
}

std::size_t cut_back(std::string_view raw, std::size_t pos) {
  if (pos >= raw.size()) return raw.size();
  std::size_t cp = unit_start(raw, pos);
  std::size_t from = cp > 128 ? unit_start(raw, cp - 128) : 0;
  auto b = boundaries(raw, from, pos + 1);
  std::size_t best = from;
  for (std::size_t x : b)
    if (x <= pos) best = x;
  if (pos - best <= kClusterWindow) return best;
  return cp;  // no cluster boundary near: a code point boundary
}

std::size_t cut_forward(std::string_view raw, std::size_t pos) {
  if (pos >= raw.size()) return raw.size();
  std::size_t cp = unit_start(raw, pos);
  if (cp < pos) cp += unit_length(raw, cp);
  std::size_t from = pos > 128 ? unit_start(raw, pos - 128) : 0;
  auto b = boundaries(raw, from, std::min(raw.size(), pos + kClusterWindow + 8));
  for (std::size_t x : b)
    if (x >= pos) return x - pos <= kClusterWindow ? x : cp;
  return cp;
}

}  // namespace uexec::session
