// json_depth.h: how deep a JSON text nests, counted before it is parsed.
//
// nlohmann::json parses, copies and destroys recursively, one stack frame per level: a client
// line of 100000 '[' would overflow the loop thread's stack. Front doors refuse a message
// nested deeper than kMaxJsonDepth (no protocol message needs more than a handful of levels).
// Strings are skipped, escapes included, so brackets inside them do not count.
#pragma once

#include <cstddef>
#include <string_view>

namespace uexec::rpc {

inline constexpr int kMaxJsonDepth = 64;

inline bool json_nested_deeper_than(std::string_view text, int max) noexcept {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace uexec::rpc
