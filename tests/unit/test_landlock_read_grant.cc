// Unit tests for the Landlock-only read grant's walk (policy/landlock_read_grant.h): which
// rules it asks for, and when a kept walk is reused or walked again. The rules are collected
// by the callback, not added to a ruleset: what Landlock then does with them is the sandbox
// suites' business (tests/sandbox/holes_control.py).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "helpers/temp_dir.h"
#include "policy/landlock_read_grant.h"

namespace {

using uexec::policy::for_each_read_grant;
using uexec::policy::read_grant_walks;

constexpr std::uint64_t kRights = 0b111, kList = 0b100;
constexpr std::chrono::nanoseconds kNoSettle{0};

struct Rule {
  std::uint64_t rights = 0;
  bool is_dir = false;
  ino_t ino = 0;
};

// T/a/b/hidden is hidden; T/a/b/sib, T/a/other and T/x are its neighbours; T/link a symlink.
struct Tree : uexec::test::TempDir {
  std::string root;  // the tree's path with its own symlinks resolved
  Tree() : TempDir("uexec-read-grant", "/var/tmp") {
    char buf[PATH_MAX];
    root = ::realpath(path.c_str(), buf) ? buf : path;
    for (const char* d : {"a", "a/b", "a/b/hidden", "a/other"}) ::mkdir((root + "/" + d).c_str(), 0755);
    write("a/b/sib", "s");
    write("x", "x");
    (void)::symlink((root + "/a/b/hidden").c_str(), (root + "/link").c_str());
  }
  std::string at(const std::string& rel) const { return root + "/" + rel; }

  std::map<std::string, Rule> rules(std::chrono::nanoseconds settle = kNoSettle) const {
    std::map<std::string, Rule> got;
    auto add = [&got](int fd, bool is_dir, const std::string& p, std::uint64_t rights) -> uexec::base::Result<void> {
      struct stat st {};
      REQUIRE(::fstat(fd, &st) == 0);
      got[p] = Rule{rights, is_dir, st.st_ino};
      return {};
    };
    auto r = for_each_read_grant(root, kRights, kList, {at("a/b/hidden")}, 4096, add, settle);
    REQUIRE_MESSAGE(r.has_value(), (r ? std::string() : r.error().message()));
    return got;
  }
};

ino_t ino_of(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace

TEST_CASE("read grant: list-only on the way to a hidden path, everything on its neighbours, nothing on it or a symlink") {
  Tree t;
  auto got = t.rules();
  CHECK(got.size() == 6);
  for (const char* way : {"", "/a", "/a/b"}) {
    INFO(way);
    REQUIRE(got.count(t.root + way) == 1);
    CHECK(got[t.root + way].rights == kList);
    CHECK(got[t.root + way].is_dir);
  }
  CHECK(got[t.at("a/b/sib")].rights == kRights);
  CHECK_FALSE(got[t.at("a/b/sib")].is_dir);
  CHECK(got[t.at("a/other")].rights == kRights);
  CHECK(got[t.at("a/other")].is_dir);
  CHECK(got[t.at("x")].rights == kRights);
  CHECK(got.count(t.at("a/b/hidden")) == 0);
  CHECK(got.count(t.at("link")) == 0);
}

TEST_CASE("read grant: a kept walk is reused while its directories are unchanged, walked again when they change") {
  Tree t;
  auto first = t.rules();
  std::size_t walks = read_grant_walks();
  auto again = t.rules();
  CHECK(read_grant_walks() == walks);  // reused
  CHECK(again.size() == first.size());
  CHECK(again[t.at("x")].ino == first[t.at("x")].ino);

  SUBCASE("a new entry in a directory on the way") {
    t.write("a/new", "n");
    auto got = t.rules();
    CHECK(read_grant_walks() == walks + 1);
    CHECK(got.count(t.at("a/new")) == 1);
  }
  SUBCASE("an entry renamed over: the rule is on the inode the name has now") {
    t.write("y", "y");
    ino_t fresh = ino_of(t.at("y"));
    REQUIRE(::rename(t.at("y").c_str(), t.at("a/b/sib").c_str()) == 0);
    auto got = t.rules();
    CHECK(read_grant_walks() == walks + 1);
    CHECK(got[t.at("a/b/sib")].ino == fresh);
    CHECK(got.count(t.at("y")) == 0);
  }
  SUBCASE("an entry removed") {
    REQUIRE(::unlink(t.at("a/b/sib").c_str()) == 0);
    auto got = t.rules();
    CHECK(read_grant_walks() == walks + 1);
    CHECK(got.count(t.at("a/b/sib")) == 0);
  }
  SUBCASE("a directory on the way replaced by another one") {
    REQUIRE(::rename(t.at("a/b").c_str(), t.at("a/b-old").c_str()) == 0);
    REQUIRE(::mkdir(t.at("a/b").c_str(), 0755) == 0);
    auto got = t.rules();
    CHECK(read_grant_walks() == walks + 1);
    CHECK(got.count(t.at("a/b/sib")) == 0);
    CHECK(got[t.at("a/b-old")].rights == kRights);  // no longer on the way: a neighbour
  }
  SUBCASE("a neighbour's own contents change nothing: its rule covers what is beneath it") {
    t.write("a/other/inside", "i");
    (void)t.rules();
    CHECK(read_grant_walks() == walks);
  }
}

TEST_CASE("read grant: a walk of directories changed just before it is used once, not kept") {
  Tree t;  // made now: every directory on the way changed within the settle time
  std::size_t walks = read_grant_walks();
  (void)t.rules(uexec::policy::kReadGrantSettle);
  (void)t.rules(uexec::policy::kReadGrantSettle);
  CHECK(read_grant_walks() == walks + 2);
}

TEST_CASE("read grant: a hidden root gets nothing, a root holding nothing hidden one rule, and the walk is bounded") {
  Tree t;
  std::map<std::string, std::uint64_t> got;
  auto add = [&got](int, bool, const std::string& p, std::uint64_t rights) -> uexec::base::Result<void> {
    got[p] = rights;
    return {};
  };
  REQUIRE(for_each_read_grant(t.at("a"), kRights, kList, {t.root}, 4096, add, kNoSettle).has_value());
  CHECK(got.empty());
  REQUIRE(for_each_read_grant(t.at("a"), kRights, kList, {t.at("elsewhere")}, 4096, add, kNoSettle).has_value());
  CHECK(got.size() == 1);
  CHECK(got[t.at("a")] == kRights);
  auto r = for_each_read_grant(t.root, kRights, kList, {t.at("a/b/hidden/deeper")}, 3, add, kNoSettle);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == uexec::base::Errc::kPolicy);
}
