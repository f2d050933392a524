#include "agent/client_regex.h"

#include <fmt/core.h>

#include <exception>
#include <optional>
#include <string>

namespace uexec::agent {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::size_t digit_run(std::string_view s, std::size_t at) {
  std::size_t n = 0;
  while (at + n < s.size() && is_digit(s[at + n])) ++n;
  return n;
}

// Where libstdc++ would read a number of too many digits: the byte offset, and what it is.
struct LongNumber {
  std::size_t at;
  const char* what;
};

std::optional<LongNumber> find_long_number(std::string_view p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\') {
      if (i + 1 < p.size() && digit_run(p, i + 1) > kMaxRegexNumberDigits) return LongNumber{i + 1, "a back-reference"};
      ++i;  // the escaped character is never a brace or a backslash of ours
      continue;
    }
    if (p[i] != '{') continue;
    std::size_t j = i + 1, n = digit_run(p, j);
    if (n > kMaxRegexNumberDigits) return LongNumber{j, "a repeat count"};
    j += n;
    if (j < p.size() && p[j] == ',' && digit_run(p, j + 1) > kMaxRegexNumberDigits) return LongNumber{j + 1, "a repeat count"};
  }
  return std::nullopt;
}

}  // namespace

base::Result<std::shared_ptr<const std::regex>> compile_client_regex(std::string_view pattern, bool ignore_case) {
  if (pattern.size() > kMaxClientRegex)
    return base::Error::invalid(fmt::format("the pattern is {} bytes long; at most {} are accepted", pattern.size(), kMaxClientRegex));
  if (auto n = find_long_number(pattern))
    return base::Error::invalid(
        fmt::format("{} of more than {} digits at byte {}", n->what, kMaxRegexNumberDigits, n->at));
  auto flags = std::regex::ECMAScript;
  if (ignore_case) flags |= std::regex::icase;
  try {
    return std::shared_ptr<const std::regex>(std::make_shared<std::regex>(std::string(pattern), flags));
  } catch (const std::regex_error& e) {
    return base::Error::invalid(e.what());
  } catch (const std::exception& e) {  // std::bad_alloc, std::length_error: a pattern too big to hold
    return base::Error::invalid(fmt::format("the pattern cannot be compiled: {}", e.what()));
  }
}

}  // namespace uexec::agent
