// Golden tests: texts that must not drift by a byte (helpers/golden.h).
#include <doctest/doctest.h>

#include <string>

#include "agent/envelope.h"
#include "helpers/golden.h"

using namespace uexec::agent;
using uexec::test::check_golden;

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
