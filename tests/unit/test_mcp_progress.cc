// Unit tests for rpc::ProgressReporter (mcp_progress.h): the newest line, cut, at most one per interval.
#include <doctest/doctest.h>

#include <string>

#include "rpc/mcp_progress.h"

using uexec::rpc::ProgressReporter;
using namespace std::chrono_literals;

TEST_CASE("progress: the newest non-blank line, its end kept at 200 bytes on a character boundary") {
  CHECK(ProgressReporter::newest_line("one\ntwo\n\n  \n") == "two");
  CHECK(ProgressReporter::newest_line("partial") == "partial");
  CHECK(ProgressReporter::newest_line("\n \r\n").empty());
  std::string wide;
  for (int i = 0; i < 150; ++i) wide += "é";  // 300 bytes
  std::string cut = ProgressReporter::newest_line(wide + "\n");
  CHECK(cut.size() <= ProgressReporter::kMaxMessageBytes);
  CHECK(cut.size() % 2 == 0);  // whole characters
  CHECK(cut.size() >= ProgressReporter::kMaxMessageBytes - 1);
}

TEST_CASE("progress: at most one notification per interval; the newest line waits for the next") {
  ProgressReporter p(7);
  ProgressReporter::Clock::time_point t0{};
  auto first = p.on_output("a\n", t0);
  REQUIRE(first);
  CHECK((*first)["message"] == "a");
  CHECK((*first)["progress"] == 1);
  CHECK((*first)["progressToken"] == 7);
  CHECK_FALSE(p.on_output("b\n", t0 + 100ms));
  CHECK_FALSE(p.on_output("c\n\n", t0 + 200ms));
  auto next = p.on_output("", t0 + 260ms);  // no new line, but "c" waited
  REQUIRE(next);
  CHECK((*next)["message"] == "c");
  CHECK((*next)["progress"] == 2);
  CHECK_FALSE(p.on_output("", t0 + 600ms));  // nothing new: nothing sent
  CHECK(p.sent() == 2);
}
