// golden.h: texts that must not drift by a byte. A mismatch prints the path and the actual
// text; run with UEXEC_UPDATE_GOLDEN=1 to rewrite the file on purpose.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

namespace uexec::test {

// `rel` is relative to $UEXEC_GOLDEN_DIR (tests/golden: envelope/, bwrap/, seatbelt/).
inline void check_golden(const std::string& rel, const std::string& actual) {
  const char* dir = std::getenv("UEXEC_GOLDEN_DIR");
  REQUIRE_MESSAGE(dir != nullptr, "UEXEC_GOLDEN_DIR is not set");
  std::string path = std::string(dir) + "/" + rel;
  if (std::getenv("UEXEC_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK_MESSAGE(ss.str() == actual, "golden mismatch: " << path << "\n" << actual);
}

}  // namespace uexec::test
