// temp_dir.h: a fresh directory for one test, removed with everything in it when the test ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace uexec::test {

struct TempDir {
  std::string path;
  // A new directory `<under>/<prefix>-XXXXXX` (mkdtemp: mode 0700, a name nobody else has).
  explicit TempDir(const std::string& prefix = "uexec-test", const std::string& under = "/tmp") {
    std::string tmpl = under + "/" + prefix + "-XXXXXX";
    if (::mkdtemp(tmpl.data())) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // `path`/`rel`.
  std::string operator/(const std::string& rel) const { return path + "/" + rel; }
  // Writes `text` to `path`/`rel` and returns that path.
  std::string write(const std::string& rel, const std::string& text) const {
    std::ofstream(*this / rel) << text;
    return *this / rel;
  }
};

}  // namespace uexec::test
