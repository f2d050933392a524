// agent::compile_client_regex: the one place client patterns (wait-until, grep) are compiled.
// Long numbers where libstdc++ reads one are refused before its compiler overflows a `long`
// (fuzz/regressions/fuzz_agent_args/regex-backreference-overflow); the rest compiles as before.
#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "agent/client_regex.h"

using uexec::agent::compile_client_regex;
using uexec::base::Errc;

namespace {

std::string refusal(std::string_view pattern) {
  auto r = compile_client_regex(pattern);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == Errc::kInvalidArgument);
  return r.error().context;
}

}  // namespace

TEST_CASE("client regex: ordinary patterns compile and match") {
  auto r = compile_client_regex("ready on port (\\d+)");
  REQUIRE(r);
  std::smatch m;
  std::string line = "server ready on port 8080";
  REQUIRE(std::regex_search(line, m, **r));
  CHECK(m.str(1) == "8080");
  // Literal long numbers, short back-references and repeat counts are fine.
  CHECK(compile_client_regex("build 20240101123456"));
  CHECK(compile_client_regex("(a)(b)\\2\\1"));
  CHECK(compile_client_regex("x{3}y{2,5}z{99}"));
  CHECK(compile_client_regex("\\{12345678\\}"));  // escaped braces: literal text
  CHECK(compile_client_regex("[0-9]{1,3}\\.[0-9]{1,3}"));
  // Case-insensitive when asked.
  auto ic = compile_client_regex("PASSWORD:", true);
  REQUIRE(ic);
  CHECK(std::regex_search(std::string("password:"), **ic));
  auto cs = compile_client_regex("PASSWORD:");
  REQUIRE(cs);
  CHECK_FALSE(std::regex_search(std::string("password:"), **cs));
}

TEST_CASE("client regex: huge numbers are refused before std::regex sees them (fuzz_agent_args)") {
  CHECK(refusal("\\88800007656021736015").find("back-reference of more than 6 digits at byte 1") != std::string::npos);
  CHECK(refusal("a{99999999999999999999}").find("repeat count of more than 6 digits at byte 2") != std::string::npos);
  CHECK(refusal("a{1,99999999999999999999}").find("repeat count") != std::string::npos);
  CHECK(refusal("a{,1234567}").find("repeat count") != std::string::npos);
  CHECK(refusal("x\\\\{1234567}").find("repeat count") != std::string::npos);  // `\\` then a real brace
  CHECK(refusal("\\1234567").find("back-reference") != std::string::npos);
  CHECK(compile_client_regex("(a)\\123456").has_value() == false);  // 6 digits: std::regex's own error
}

TEST_CASE("client regex: std::regex errors and oversize patterns are errors, not exceptions") {
  CHECK_FALSE(refusal("(unclosed").empty());
  CHECK_FALSE(refusal("a{2,1}").empty());
  CHECK_FALSE(refusal("[z-a]").empty());
  CHECK(refusal(std::string(4097, 'a')).find("4097 bytes") != std::string::npos);
  CHECK(compile_client_regex(std::string(4096, 'a')));
}
