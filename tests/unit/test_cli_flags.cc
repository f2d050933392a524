// Unit tests for cli/flags.h: the one parser of every `uexec` command, and the front doors'
// sandbox and WebSocket listener flags declared on it.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "cli/sandbox_flags.h"
#include "cli/ws_listener_flags.h"

using namespace uexec::cli;
using Args = std::vector<std::string>;

TEST_CASE("Flags: switches, values and the rest, by the command's syntax for unmatched arguments") {
  bool tty = false;
  std::string cwd;
  auto flags_with = [&](Unmatched u) {
    Flags f(u);
    f.on({"--tty", "-t"}, [&] { tty = true; });
    f.value({"--cwd"}, [&](const std::string& v) {
      cwd = v;
      return Flags::Verdict{};
    });
    return f;
  };
  SUBCASE("kEndsFlags: the first other word and all after it are the rest") {
    auto p = flags_with(Unmatched::kEndsFlags).parse({"-t", "--cwd", "/tmp", "ls", "--tty", "-l"});
    CHECK(p.ok());
    CHECK(tty);
    CHECK(cwd == "/tmp");
    CHECK(p.rest == Args{"ls", "--tty", "-l"});
  }
  SUBCASE("kEndsFlags: a value flag at the end without its value is the rest") {
    auto p = flags_with(Unmatched::kEndsFlags).parse({"--tty", "--cwd"});
    CHECK(p.ok());
    CHECK(p.rest == Args{"--cwd"});
  }
  SUBCASE("kEndsFlagsUnlessDashed: an unknown flag is an error, a word ends the flags") {
    auto bad = flags_with(Unmatched::kEndsFlagsUnlessDashed).parse({"--tty", "--bogus", "ls"});
    CHECK(bad.error == "unknown option --bogus");
    auto good = flags_with(Unmatched::kEndsFlagsUnlessDashed).parse({"", "--bogus"});
    CHECK(good.ok());
    CHECK(good.rest == Args{"", "--bogus"});
  }
  SUBCASE("kRefuse: any unmatched argument is an error, in the command's words") {
    Flags f(Unmatched::kRefuse, "argument");
    CHECK(f.parse({"stray"}).error == "unknown argument stray");
    CHECK(f.parse({"--"}).error == "unknown argument --");
  }
  SUBCASE("kCollect: unmatched arguments join the rest wherever they are, a lone value flag too") {
    auto p = flags_with(Unmatched::kCollect).parse({"ID", "-t", "TEXT", "--cwd"});
    CHECK(p.ok());
    CHECK(tty);
    CHECK(p.rest == Args{"ID", "TEXT", "--cwd"});
  }
  SUBCASE("a value is the next argument, whatever it looks like") {
    auto p = flags_with(Unmatched::kRefuse).parse({"--cwd", "--tty"});
    CHECK(p.ok());
    CHECK(cwd == "--tty");
    CHECK(!tty);
  }
}

TEST_CASE("Flags: `--`, help, missing values and handler errors") {
  std::vector<std::string> seen;
  Flags f(Unmatched::kEndsFlagsUnlessDashed);
  f.double_dash_ends_flags().help();
  f.value({"--env"}, [&](const std::string& v) -> Flags::Verdict {
    if (v.find('=') == std::string::npos) return "--env needs NAME=VALUE, got '" + v + "'";
    seen.push_back(v);
    return {};
  }, [] { return Flags::Verdict{"--env needs a value"}; });
  CHECK(f.parse({"--", "--env", "A=1"}).rest == Args{"--env", "A=1"});
  CHECK(f.parse({"--env", "A=1", "-h", "--bogus"}).help);
  CHECK(f.parse({"--env", "A"}).error == "--env needs NAME=VALUE, got 'A'");
  CHECK(f.parse({"--env"}).error == "--env needs a value");
  CHECK(seen == Args{"A=1"});  // after `--` it was not a flag
  // Without help(), -h is an argument like any other.
  Flags plain(Unmatched::kCollect);
  CHECK(plain.parse({"-h"}).rest == Args{"-h"});
}

TEST_CASE("Flags: an optional value, glued with = or as the next argument when that is not a flag") {
  std::optional<std::string> got;
  int times = 0;
  Flags f(Unmatched::kRefuse);
  f.optional_value("--connect", [&](std::optional<std::string> v) {
    ++times;
    got = v;
  });
  f.on({"--x"}, [] {});
  CHECK(f.parse({"--connect=/s"}).ok());
  CHECK(got == "/s");
  CHECK(f.parse({"--connect", "/t"}).ok());
  CHECK(got == "/t");
  CHECK(f.parse({"--connect", "--x"}).ok());
  CHECK(!got);
  CHECK(f.parse({"--connect", ""}).error == "unknown option ");
  CHECK(!got);
  CHECK(f.parse({"--connect=", "/u"}).ok());  // nothing after `=`: as without it
  CHECK(got == "/u");
  CHECK(times == 5);
  CHECK(f.parse({"--connectx"}).error == "unknown option --connectx");
}

TEST_CASE("SandboxFlags: every flag is read first; the last bad one is reported by finish()") {
  SUBCASE("a profile with its options") {
    SandboxFlags s;
    Flags f(Unmatched::kRefuse);
    s.declare(f);
    CHECK(f.parse({"--sandbox", "workspace-write", "--writable", "/w", "--deny-read", "*.key", "--network", "on"}).ok());
    REQUIRE(s.finish());
    REQUIRE(s.profile);
    CHECK(s.profile->writable_roots == Args{"/w"});
    CHECK(s.profile->deny_read == Args{"*.key"});
    CHECK(s.profile->network);
  }
  SUBCASE("errors wait for finish(), and the parse goes on") {
    SandboxFlags s;
    Flags f(Unmatched::kRefuse);
    s.declare(f);
    auto p = f.parse({"--network", "maybe", "--bogus"});
    CHECK(p.error == "unknown option --bogus");  // the parse reached it
    CHECK(!s.finish());
    CHECK(s.error == "--network needs on or off");
  }
  SUBCASE("a flag without its value") {
    SandboxFlags s;
    Flags f(Unmatched::kRefuse);
    s.declare(f);
    CHECK(f.parse({"--network", "maybe", "--sandbox"}).ok());
    CHECK(!s.finish());
    CHECK(s.error == "--sandbox needs a value");
  }
  SUBCASE("options without --sandbox") {
    SandboxFlags s;
    Flags f(Unmatched::kRefuse);
    s.declare(f);
    CHECK(f.parse({"--writable", "/w"}).ok());
    CHECK(!s.finish());
    CHECK(s.error == "sandbox options need --sandbox MODE");
  }
}

TEST_CASE("WsListenerFlags: recorded, with their own words for a missing value") {
  WsListenerFlags w;
  Flags f(Unmatched::kRefuse);
  w.declare(f);
  CHECK(!w.any());
  CHECK(f.parse({"--allow-remote", "--allow-origin", "https://a.example", "--allow-host", "b.example", "--token-file"}).ok());
  CHECK(w.any());
  CHECK(w.allow_remote);
  CHECK(w.allow_origins == Args{"https://a.example"});
  CHECK(w.allow_hosts == Args{"b.example"});
  CHECK(w.error == "--token-file needs a path");
}

TEST_CASE("split_host_port: host without brackets, the default port, bad ports refused") {
  std::string host;
  int port = -1;
  REQUIRE(split_host_port("127.0.0.1:8022", 1, &host, &port));
  CHECK(host == "127.0.0.1");
  CHECK(port == 8022);
  REQUIRE(split_host_port("[::1]:0/", 1, &host, &port));
  CHECK(host == "::1");
  CHECK(port == 0);
  REQUIRE(split_host_port("0.0.0.0", 8022, &host, &port));
  CHECK(host == "0.0.0.0");
  CHECK(port == 8022);
  REQUIRE(split_host_port(":9", 1, &host, &port));
  CHECK(host == "127.0.0.1");
  for (const char* bad : {"h:x", "h:65536", "h:123456", "[::1", "[::1]x"}) CHECK_MESSAGE(!split_host_port(bad, 1, &host, &port), bad);
}

TEST_CASE("parse_duration: ms, s, m, h, d, a bare number of seconds; anything else refused") {
  using std::chrono::milliseconds;
  CHECK(parse_duration("250ms") == milliseconds(250));
  CHECK(parse_duration("30") == milliseconds(30000));
  CHECK(parse_duration("30s") == milliseconds(30000));
  CHECK(parse_duration("10m") == milliseconds(600000));
  CHECK(parse_duration("24h") == milliseconds(86400000));
  CHECK(parse_duration("7d") == milliseconds(604800000));
  for (const char* bad : {"", "soon", "-1s", "1.5h", "10 m", "1w", "99999999999d"})
    CHECK_MESSAGE(!parse_duration(bad), bad);
}
