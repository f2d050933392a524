// client_regex.h: regular expressions that a client sends (wait-until, grep), compiled safely.
//
// Clients hand us ECMAScript patterns: process/wait's `until.regex`, the agent tools'
// `until.regex`, read_output's `grep`. libstdc++'s std::regex (GCC 12) parses the number of a
// back-reference (`\12`) and of a repeat count (`{3}`, `{2,5}`) into a `long` without an
// overflow check, so a long digit run (`\88800007656021736015`, `{99999999999999999999}`)
// is undefined behaviour inside the compiler (fuzz_agent_args found it). Every client pattern
// is compiled here, and refused before libstdc++ sees it when:
//   - it is longer than kMaxClientRegex bytes;
//   - a run of more than kMaxRegexNumberDigits digits follows a backslash, a `{`, or the
//     `,` of a `{n,` — where libstdc++ reads a number. A backslash escapes the next
//     character, so `\{` is a literal brace. Bracket expressions are not tracked: `[{1234567]`
//     is refused too, which costs nothing real; a long literal number (`build 20240101`)
//     is fine. No real back-reference or repeat count needs seven digits (libstdc++ stops
//     at 100000 NFA states anyway).
// Anything libstdc++ then rejects (std::regex_error) is an error too, never an exception.
// Pure; the result is immutable and may be shared.
#pragma once

#include <cstddef>
#include <memory>
#include <regex>
#include <string_view>

#include "base/result.h"

namespace uexec::agent {

inline constexpr std::size_t kMaxClientRegex = 4096;     // bytes
inline constexpr std::size_t kMaxRegexNumberDigits = 6;  // in a back-reference or repeat count

// The compiled ECMAScript pattern (case-insensitive with `ignore_case`), or kInvalidArgument
// whose context says why, for people ("a repeat count of more than 6 digits at byte 3").
base::Result<std::shared_ptr<const std::regex>> compile_client_regex(std::string_view pattern,
                                                                     bool ignore_case = false);

}  // namespace uexec::agent
