// terminal_text.cc: see terminal_text.h.
#include "base/terminal_text.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <cstdint>

namespace uexec::base {
namespace {

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
    // utf8proc decodes only well-formed UTF-8 (no overlong forms, surrogates or values past
    // U+10FFFF); anything else is one byte shown as \xNN.
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(untrusted.data()),
                                                static_cast<utf8proc_ssize_t>(untrusted.size()), &cp);
    if (n <= 0) {
      out += fmt::format("\\x{:02x}", c);
      untrusted.remove_prefix(1);
      continue;
    }
    if (cp <= 0x9F || bidi_control(static_cast<char32_t>(cp)))
      out += fmt::format("\\u{{{:x}}}", static_cast<std::uint32_t>(cp));
    else
      out.append(untrusted.substr(0, static_cast<std::size_t>(n)));
    untrusted.remove_prefix(static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace uexec::base
