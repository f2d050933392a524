// terminal_text.cc: see terminal_text.h.
#include "base/terminal_text.h"

#include <fmt/format.h>

#include <cstdint>

namespace uexec::base {
namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (Unicode Table 3-7), and
// its code point; 0 when the first byte does not start one.
std::size_t utf8_sequence(std::string_view s, char32_t& cp) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 1, cp = c & 0x1F;
  else if (c == 0xE0) need = 2, lo = 0xA0, cp = c & 0x0F;
  else if (c == 0xED) need = 2, hi = 0x9F, cp = c & 0x0F;
  else if (c >= 0xE1 && c <= 0xEF) need = 2, cp = c & 0x0F;
  else if (c == 0xF0) need = 3, lo = 0x90, cp = c & 0x07;
  else if (c >= 0xF1 && c <= 0xF3) need = 3, cp = c & 0x07;
  else if (c == 0xF4) need = 3, hi = 0x8F, cp = c & 0x07;
  else return 0;
  if (s.size() <= need) return 0;
  for (std::size_t i = 1; i <= need; ++i) {
    if (b(i) < lo || b(i) > hi) return 0;
    lo = 0x80, hi = 0xBF;
    cp = (cp << 6) | (b(i) & 0x3F);
  }
  return need + 1;
}

bool bidi_control(char32_t cp) {
  return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string terminal_text(std::string_view untrusted) {
  std::string out;
  out.reserve(untrusted.size());
  while (!untrusted.empty()) {
    const unsigned char c = static_cast<unsigned char>(untrusted[0]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      untrusted.remove_prefix(1);
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case 0x1B: out += "\\e"; break;
        default: out += fmt::format("\\x{:02x}", c);
      }
      untrusted.remove_prefix(1);
      continue;
    }
    char32_t cp = 0;
    const std::size_t n = utf8_sequence(untrusted, cp);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", c);
      untrusted.remove_prefix(1);
      continue;
    }
    if (cp <= 0x9F || bidi_control(cp)) out += fmt::format("\\u{{{:x}}}", static_cast<std::uint32_t>(cp));
    else out.append(untrusted.substr(0, n));
    untrusted.remove_prefix(n);
  }
  return out;
}

}  // namespace uexec::base
