// Golden tests: texts that must not drift by a byte. A mismatch prints both; run with
// UEXEC_UPDATE_GOLDEN=1 to rewrite the file on purpose.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/envelope.h"

using namespace uexec::agent;

namespace {
void check_golden(const std::string& name, const std::string& actual) {
  const char* dir = std::getenv("UEXEC_GOLDEN_DIR");
  REQUIRE_MESSAGE(dir != nullptr, "UEXEC_GOLDEN_DIR is not set");
  std::string path = std::string(dir) + "/" + name;
  if (std::getenv("UEXEC_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK_MESSAGE(ss.str() == actual, "golden mismatch: " << path);
}
}  // namespace

TEST_CASE("a large-output envelope equals its golden file byte for byte") {
  // 3000 numbered lines with multi-byte text, truncated to 1000 tokens.
  Collected c;
  for (int i = 1; i <= 3000; ++i) c.raw += "line " + std::to_string(i) + " – naïve café ✓\n";
  c.start = 0;
  c.end = c.raw.size();
  Body b = render_body(c, 4000, 48213, true);
  Envelope e;
  e.chunk_id = "3f09ac";
  e.wall_time_seconds = 0.25314;
  e.session_id = 48213;
  e.extra = {"Returned early: idle 150 ms"};
  e.original_tokens = b.original_tokens;
  e.body = b.text;
  check_golden("envelope/large.txt", render_envelope(e));
}
