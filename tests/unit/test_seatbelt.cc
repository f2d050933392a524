// Seatbelt (SBPL) generator: golden policies for the cases of docs/sandbox.md §4.4, the glob
// translation rule by rule, proxy ports from the env, input checks, and properties every
// generated policy must have. Goldens live in tests/golden/seatbelt/NAME.sb (policy
// text) and NAME.args (one -D argument per line); UEXEC_UPDATE_GOLDEN=1 rewrites them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "helpers/golden.h"
#include "policy/seatbelt.h"

using namespace uexec::policy;

namespace {

void check_golden_file(const std::string& rel, const std::string& actual) {
  uexec::test::check_golden("seatbelt/" + rel, actual);
}

std::string args_text(const SeatbeltPolicy& p) {
  std::string s;
  for (const auto& kv : p.params) s += "-D" + kv + "\n";
  return s;
}

// Properties of every generated policy, golden or not.
void check_invariants(const SeatbeltPolicy& p) {
  // Every parameter is used by the text, and every (param "K") in the text is passed.
  std::set<std::string> keys;
  for (const auto& kv : p.params) {
    auto eq = kv.find('=');
    REQUIRE(eq != std::string::npos);
    std::string key = kv.substr(0, eq);
    CHECK_MESSAGE(keys.insert(key).second, "duplicate parameter " << key);
    CHECK_MESSAGE(p.text.find("(param \"" + key + "\")") != std::string::npos, "unused parameter " << key);
  }
  for (size_t at = p.text.find("(param \""); at != std::string::npos; at = p.text.find("(param \"", at + 1)) {
    size_t start = at + 8;
    std::string key = p.text.substr(start, p.text.find('"', start) - start);
    CHECK_MESSAGE(keys.count(key) == 1, "parameter used but not passed: " << key);
  }
  // Balanced parentheses outside strings, comments and regex literals.
  int depth = 0;
  int lowest = 0;
  bool in_string = false;
  bool in_comment = false;
  for (size_t i = 0; i < p.text.size(); ++i) {
    char c = p.text[i];
    if (in_comment) {
      in_comment = c != '\n';
    } else if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == ';') {
      in_comment = true;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      lowest = std::min(lowest, --depth);
    }
  }
  CHECK(lowest == 0);
  CHECK(depth == 0);
  CHECK_FALSE(in_string);
  // Fixed head and tail.
  CHECK(p.text.rfind("(version 1)\n", 0) == 0);
  CHECK(p.text.find("(deny default)") != std::string::npos);
  const std::string tail = "(deny file-ioctl (ioctl-command TIOCSTI))\n";
  CHECK(p.text.size() >= tail.size());
  CHECK(p.text.compare(p.text.size() - tail.size(), tail.size(), tail) == 0);
  CHECK(p.text.find("(deny mach-lookup (xpc-service-name-prefix \"\"))") != std::string::npos);
}

void check_case(const std::string& name, const SeatbeltInput& in) {
  CAPTURE(name);
  REQUIRE(check_seatbelt_input(in).has_value());
  SeatbeltPolicy p = seatbelt_policy(in);
  check_invariants(p);
  check_golden_file(name + ".sb", p.text);
  check_golden_file(name + ".args", args_text(p));
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

const std::vector<std::string> kNames = {".git", ".codex", ".agents", ".uexec"};

// What every case shares: uexec's own directories on a Mac (uid 501, no XDG_RUNTIME_DIR).
SeatbeltInput base_input() {
  SeatbeltInput in;
  in.control_dir = "/private/tmp/uexec-501";
  in.state_dir = "/Users/dev/.local/state/uexec";
  return in;
}

// workspace-write in /Users/dev/proj: the repository's .git exists (a carve-out and a regex),
// .codex, .agents and .uexec do not (regex only); a configured read entry
// vendor/lock/pinned is missing (a carve-out all the same, with two parents to protect).
SeatbeltInput workspace_write() {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {
      {"/Users/dev/proj", {"/Users/dev/proj/.git", "/Users/dev/proj/vendor/lock/pinned"}, kNames},
      {"/private/tmp", {}, kNames},
  };
  return in;
}

}  // namespace

TEST_CASE("seatbelt golden: read-only") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  check_case("read-only", in);
}

TEST_CASE("seatbelt golden: workspace-write with existing and missing carve-outs") {
  check_case("workspace-write", workspace_write());
}

TEST_CASE("seatbelt golden: network on") {
  SeatbeltInput in = workspace_write();
  in.network = true;
  check_case("network-on", in);
}

TEST_CASE("seatbelt golden: proxy ports from the env") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/Users/dev/proj", {}, kNames}};
  SeatbeltProxy proxy = seatbelt_proxy_from_env({
      "PATH=/usr/bin:/bin",
      "HTTP_PROXY=http://127.0.0.1:3128",
      "https_proxy=http://localhost:8080",
      "ALL_PROXY=socks5h://[::1]",
      "NO_PROXY=localhost,127.0.0.1",
  });
  CHECK(proxy.configured);
  CHECK(proxy.ports == std::vector<int>{1080, 3128, 8080});
  in.proxy_ports = proxy.ports;
  in.proxy_configured = proxy.configured;
  in.allow_local_binding = true;
  check_case("proxy-ports", in);
}

TEST_CASE("seatbelt golden: a proxy without a usable loopback port fails closed") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/Users/dev/proj", {}, kNames}};
  SeatbeltProxy proxy = seatbelt_proxy_from_env({"HTTPS_PROXY=http://proxy.corp.example:3128"});
  CHECK(proxy.configured);
  CHECK(proxy.ports.empty());
  in.proxy_ports = proxy.ports;
  in.proxy_configured = proxy.configured;
  in.network = true;                    // even a profile with network: the proxy is required
  in.allow_local_binding = true;        // dropped: no local binding when failing closed
  in.allow_unix_sockets = {"/Users/dev/.ssh/agent.sock"};  // dropped too, and its parameter
  check_case("proxy-no-port", in);
  SeatbeltPolicy p = seatbelt_policy(in);
  CHECK_FALSE(has(p.text, "(allow network"));
  CHECK_FALSE(has(p.text, "AF_SYSTEM"));
  CHECK_FALSE(has(p.text, "UNIX_SOCKET_PATH"));
}

TEST_CASE("seatbelt golden: managed network without an endpoint fails closed") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/Users/dev/proj", {}, kNames}};
  in.managed_network = true;
  in.network = true;
  check_case("managed-network-no-endpoint", in);
  SeatbeltPolicy p = seatbelt_policy(in);
  CHECK_FALSE(has(p.text, "(allow network"));
}

TEST_CASE("seatbelt golden: unix socket allow-list") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/Users/dev/proj", {}, kNames}};
  // Unsorted, with a duplicate: indices follow the sorted, unique paths.
  in.allow_unix_sockets = {"/private/tmp/.X11-unix", "/Users/dev/.ssh/agent.sock", "/private/tmp/.X11-unix"};
  check_case("unix-allow-list", in);
}

TEST_CASE("seatbelt golden: unix sockets allow-all") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/Users/dev/proj", {}, kNames}};
  in.allow_all_unix_sockets = true;
  in.allow_unix_sockets = {"/Users/dev/.ssh/agent.sock"};  // allow-all wins: no path rules
  check_case("unix-allow-all", in);
}

TEST_CASE("seatbelt golden: deny globs") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/Users/dev/proj", {"/Users/dev/proj/.git"}, kNames}};
  in.deny_globs = {
      {"/Users/dev/proj/**/*.pem", ""},
      {"/Users/dev/proj/secrets/*.key", ""},
      {"/Users/dev/proj/config/prod/[!x]?.yaml", ""},
      {"/Users/dev/proj/.env", ""},  // no glob character: the path and everything beneath
      {"/Users/dev/.ssh/id_*", ""},   // outside the writable root: nothing to rename-protect
  };
  check_case("deny-globs", in);
}

TEST_CASE("seatbelt golden: full read with deny paths") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/Users/dev/proj", {"/Users/dev/proj/.git"}, kNames}};
  in.deny_paths = {"/Users/dev/proj/.env.local", "/Users/dev/.aws"};
  check_case("full-read-with-deny", in);
}

TEST_CASE("seatbelt golden: danger-full-access with deny entries (rule 1.5.6)") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.full_write = true;
  in.network = true;
  in.deny_paths = {"/Users/dev/.ssh"};
  in.deny_globs = {{"/Users/dev/**/*.pem", ""}};
  check_case("full-access-with-deny", in);
}

TEST_CASE("seatbelt golden: restricted read plus platform defaults") {
  SeatbeltInput in = base_input();
  in.full_read = false;
  in.include_platform_defaults = true;
  in.readable_roots = {"/opt/homebrew", "/Users/dev/.cargo"};
  in.writable = {{"/Users/dev/proj", {"/Users/dev/proj/.git"}, kNames}};
  in.deny_paths = {"/Users/dev/proj/.env"};
  check_case("restricted-read-platform-defaults", in);
  SeatbeltPolicy p = seatbelt_policy(in);
  CHECK_FALSE(has(p.text, "(allow user-preference-read)"));  // full read only
  CHECK_FALSE(has(p.text, "/tmp\"))"));                         // no /tmp grant in the defaults
}

TEST_CASE("seatbelt golden: / as the writable root") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  // The uexec config dir is read-only in every sandbox (1.4): a carve-out three levels down.
  in.writable = {{"/", {"/Users/dev/.config/uexec"}, kNames}};
  check_case("root-writable", in);
  SeatbeltPolicy p = seatbelt_policy(in);
  CHECK(has(p.text, "(require-not (regex #\"^/\\.git(/.*)?$\"))"));
}

TEST_CASE("seatbelt golden: a quote in a path") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/Users/dev/say \"hi\" (2)", {"/Users/dev/say \"hi\" (2)/.git"}, kNames}};
  in.deny_globs = {{"/Users/dev/say \"hi\" (2)/keys/*.secret", ""}};
  check_case("quote-in-path", in);
  SeatbeltPolicy p = seatbelt_policy(in);
  CHECK(has(p.text, R"((require-not (regex #"^/Users/dev/say \"hi\" \(2\)/\.git(/.*)?$")))"));
  CHECK_FALSE(has(p.text, "say \"hi\""));  // the raw path only travels through -D
  CHECK(p.params.front() == "WRITABLE_ROOT_0=/Users/dev/say \"hi\" (2)");
}

TEST_CASE("seatbelt golden: the /tmp alias (canonical /private/tmp from the caller)") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {{"/private/tmp", {}, kNames}};
  in.deny_globs = {{"/tmp/cache/build-*/token", "/private/tmp/cache/build-*/token"}};
  check_case("tmp-alias", in);
  SeatbeltPolicy p = seatbelt_policy(in);
  CHECK(has(p.text, R"((deny file-read* (regex #"^/tmp/cache/build-[^/]*/token$")))"));
  CHECK(has(p.text, R"((deny file-read* (regex #"^/private/tmp/cache/build-[^/]*/token$")))"));
  CHECK(std::find(p.params.begin(), p.params.end(), "DENY_READ_0_PARENT_0=/private/tmp/cache") != p.params.end());
}

TEST_CASE("glob_to_sbpl_regex: every translation rule of §4.4") {
  SUBCASE("* stays within one component") { CHECK(glob_to_sbpl_regex("/a/*.txt") == R"(^/a/[^/]*\.txt$)"); }
  SUBCASE("? is one character of one component") { CHECK(glob_to_sbpl_regex("/a/file?") == R"(^/a/file[^/]$)"); }
  SUBCASE("**/ is zero or more whole components") {
    CHECK(glob_to_sbpl_regex("/a/**/b") == R"(^/a/(.*/)?b$)");
    CHECK(glob_to_sbpl_regex("/a/**/*.pem") == R"(^/a/(.*/)?[^/]*\.pem$)");
  }
  SUBCASE("any other ** is anything") {
    CHECK(glob_to_sbpl_regex("/a/**") == R"(^/a/.*$)");
    CHECK(glob_to_sbpl_regex("/a/x**y") == R"(^/a/x.*y$)");
    CHECK(glob_to_sbpl_regex("/a/***") == R"(^/a/.*[^/]*$)");
  }
  SUBCASE("[...] is kept") {
    CHECK(glob_to_sbpl_regex("/a/[abc].c") == R"(^/a/[abc]\.c$)");
    CHECK(glob_to_sbpl_regex("/a/[0-9][a-z]") == R"(^/a/[0-9][a-z]$)");
  }
  SUBCASE("a leading ! negates") {
    CHECK(glob_to_sbpl_regex("/a/[!abc]") == R"(^/a/[^abc]$)");
    CHECK(glob_to_sbpl_regex("/a/[a!b]") == R"(^/a/[a!b]$)");  // not leading: a member
  }
  SUBCASE("a literal ^ is escaped") {
    CHECK(glob_to_sbpl_regex("/a/[^x]") == R"(^/a/[\^x]$)");
    CHECK(glob_to_sbpl_regex("/a/[x^]") == R"(^/a/[x\^]$)");
    CHECK(glob_to_sbpl_regex("/a/[!^]") == R"(^/a/[^\^]$)");
  }
  SUBCASE("a backslash is doubled, in a class and outside") {
    CHECK(glob_to_sbpl_regex(R"(/a/[\x])") == R"(^/a/[\\x]$)");
    CHECK(glob_to_sbpl_regex(R"(/a/b\c)") == R"(^/a/b\\c(/.*)?$)");
  }
  SUBCASE("an unclosed [ is a literal bracket") {
    CHECK(glob_to_sbpl_regex("/a/[bc") == R"(^/a/\[bc$)");
    CHECK(glob_to_sbpl_regex("/a/[b*") == R"(^/a/\[b[^/]*$)");  // the rest is still read
  }
  SUBCASE("a stray ] is a literal bracket") {
    CHECK(glob_to_sbpl_regex("/a/b]") == R"(^/a/b\]$)");
    CHECK(glob_to_sbpl_regex("/a/]*") == R"(^/a/\][^/]*$)");
  }
  SUBCASE("] right after [ or [! is a member, so there is no empty class") {
    CHECK(glob_to_sbpl_regex("/a/[]x]") == R"(^/a/[]x]$)");
    CHECK(glob_to_sbpl_regex("/a/[!]x]") == R"(^/a/[^]x]$)");
    CHECK(glob_to_sbpl_regex("/a/[]") == R"(^/a/\[\]$)");
    CHECK(glob_to_sbpl_regex("/a/[!]") == R"(^/a/\[!\]$)");
  }
  SUBCASE("a quote is escaped for #\"...\"") {
    CHECK(glob_to_sbpl_regex(R"(/a/"q"/*)") == R"(^/a/\"q\"/[^/]*$)");
    CHECK(glob_to_sbpl_regex(R"(/a/["x])") == R"(^/a/[\"x]$)");
    CHECK(glob_to_sbpl_regex(R"(/a/"q")") == R"(^/a/\"q\"(/.*)?$)");
  }
  SUBCASE("everything else is regex-escaped") {
    CHECK(glob_to_sbpl_regex("/a/b+c(1){2}|$.x^*") == R"(^/a/b\+c\(1\)\{2\}\|\$\.x\^[^/]*$)");
    CHECK(glob_to_sbpl_regex("/a/b-c_d~e#f&g h") == R"(^/a/b-c_d~e#f&g h(/.*)?$)");
  }
  SUBCASE("no glob character: the path and everything beneath") {
    CHECK(glob_to_sbpl_regex("/Users/dev/.env") == R"(^/Users/dev/\.env(/.*)?$)");
    CHECK(glob_to_sbpl_regex("/") == R"(^/(/.*)?$)");
  }
  SUBCASE("empty in, empty out") { CHECK(glob_to_sbpl_regex("") == ""); }
}

TEST_CASE("path_to_sbpl_regex escapes a path without translating globs") {
  CHECK(path_to_sbpl_regex("/w/a[1]*.txt") == R"(^/w/a\[1\]\*\.txt(/.*)?$)");
  CHECK(path_to_sbpl_regex("/w/\"x\"") == R"(^/w/\"x\"(/.*)?$)");
  CHECK(path_to_sbpl_regex("/") == "^/.*$");
}

TEST_CASE("seatbelt_proxy_from_env: loopback ports only, default ports by scheme") {
  auto ports = [](std::vector<std::string> env) { return seatbelt_proxy_from_env(env).ports; };
  CHECK(ports({"HTTP_PROXY=http://127.0.0.1"}) == std::vector<int>{80});
  CHECK(ports({"HTTPS_PROXY=https://localhost"}) == std::vector<int>{443});
  CHECK(ports({"ALL_PROXY=socks5://localhost"}) == std::vector<int>{1080});
  CHECK(ports({"all_proxy=socks4a://127.0.0.1"}) == std::vector<int>{1080});
  CHECK(ports({"Http_Proxy=LOCALHOST:9000"}) == std::vector<int>{9000});  // no scheme: http
  CHECK(ports({"HTTP_PROXY=http://user:pw@[::1]:3128/"}) == std::vector<int>{3128});
  CHECK(ports({"HTTP_PROXY=http://localhost:3128", "http_proxy=http://127.0.0.1:3128"}) == std::vector<int>{3128});
  CHECK(ports({"HTTP_PROXY=http://10.0.0.1:3128"}).empty());
  CHECK(ports({"HTTP_PROXY=http://localhost.evil.example:3128"}).empty());
  CHECK(ports({"HTTP_PROXY=http://localhost:99999"}).empty());
  CHECK(ports({"HTTP_PROXY=http://localhost:31a"}).empty());
  CHECK(ports({"FTP_PROXY=http://localhost:21", "NO_PROXY=localhost"}).empty());
  CHECK(seatbelt_proxy_from_env({"HTTP_PROXY=http://10.0.0.1:3128"}).configured);
  CHECK_FALSE(seatbelt_proxy_from_env({"HTTP_PROXY=  ", "NO_PROXY=x"}).configured);
  CHECK_FALSE(seatbelt_proxy_from_env({"PATH=/bin"}).configured);
}

TEST_CASE("check_seatbelt_input refuses inputs the generator must not see") {
  auto refused = [](const SeatbeltInput& in) {
    auto r = check_seatbelt_input(in);
    if (r.has_value()) return false;
    CHECK(r.error().code == uexec::base::Errc::kPolicy);
    CHECK(r.error().context.rfind("SeatbeltPreparation: ", 0) == 0);
    return true;
  };
  CHECK_FALSE(refused(workspace_write()));
  SUBCASE("relative or unnormalised roots") {
    for (const char* bad : {"proj", "/Users/dev/../proj", "/Users/dev/./proj", "/Users//dev", "/Users/dev/", ""}) {
      CAPTURE(bad);
      SeatbeltInput in = base_input();
      in.writable = {{bad, {}, {}}};
      CHECK(refused(in));
      in = base_input();
      in.readable_roots = {bad};
      CHECK(refused(in));
    }
  }
  SUBCASE("a carve-out outside its root, or the root itself") {
    SeatbeltInput in = base_input();
    in.writable = {{"/Users/dev/proj", {"/Users/dev/other/.git"}, {}}};
    CHECK(refused(in));
    in.writable = {{"/Users/dev/proj", {"/Users/dev/projx"}, {}}};
    CHECK(refused(in));
    in.writable = {{"/Users/dev/proj", {"/Users/dev/proj"}, {}}};
    CHECK(refused(in));
  }
  SUBCASE("a protected name that is not one component") {
    SeatbeltInput in = base_input();
    in.writable = {{"/Users/dev/proj", {}, {"a/b"}}};
    CHECK(refused(in));
    in.writable = {{"/Users/dev/proj", {}, {".."}}};
    CHECK(refused(in));
  }
  SUBCASE("relative or empty globs, bad deny paths, sockets, ports, directories") {
    SeatbeltInput in = base_input();
    in.deny_globs = {{"**/*.pem", ""}};
    CHECK(refused(in));
    in.deny_globs = {{"", ""}};
    CHECK(refused(in));
    in.deny_globs = {{"/tmp/*.pem", "private/tmp/*.pem"}};
    CHECK(refused(in));
    in = base_input();
    in.deny_paths = {"secret"};
    CHECK(refused(in));
    in = base_input();
    in.allow_unix_sockets = {"agent.sock"};
    CHECK(refused(in));
    in = base_input();
    in.proxy_ports = {0};
    CHECK(refused(in));
    in.proxy_ports = {65536};
    CHECK(refused(in));
    in = base_input();
    in.control_dir = "run/uexec";
    CHECK(refused(in));
  }
}

TEST_CASE("seatbelt_argv: the fixed executable, -p, -D parameters, --, the command") {
  SeatbeltPolicy p = seatbelt_policy(workspace_write());
  auto argv = seatbelt_argv(p, {"bash", "-lc", "echo -- hi"});
  REQUIRE(argv.size() == 3 + p.params.size() + 1 + 3);
  CHECK(argv[0] == "/usr/bin/sandbox-exec");
  CHECK(argv[1] == "-p");
  CHECK(argv[2] == p.text);
  for (size_t i = 0; i < p.params.size(); ++i) CHECK(argv[3 + i] == "-D" + p.params[i]);
  CHECK(argv[3 + p.params.size()] == "--");
  CHECK(argv[argv.size() - 3] == "bash");
  CHECK(argv.back() == "echo -- hi");
}

TEST_CASE("seatbelt: sections come in the order of §4.1") {
  SeatbeltInput in = base_input();
  in.include_platform_defaults = true;
  in.readable_roots = {"/opt/homebrew"};
  in.writable = {{"/Users/dev/proj", {"/Users/dev/proj/a/.git"}, kNames}};
  in.allow_unix_sockets = {"/Users/dev/.ssh/agent.sock"};
  in.deny_globs = {{"/Users/dev/proj/a/*.key", ""}};
  SeatbeltPolicy p = seatbelt_policy(in);
  check_invariants(p);
  const std::vector<std::string> order = {
      "(deny default)",
      "(allow file-read*\n  (subpath (param \"READABLE_ROOT_0\"))",
      "(allow file-write*\n",
      "(deny file-write-unlink (literal (param \"WRITABLE_ROOT_0\")))",
      "(allow system-socket (socket-domain AF_UNIX))",
      "; platform defaults",
      "(deny file-read* file-write* (subpath (param \"UEXEC_CONTROL_DIR\")))",
      "(deny mach-lookup (xpc-service-name-prefix \"\"))",
      "(deny file-read* (regex #\"^/Users/dev/proj/a/[^/]*\\.key$\"))",
      "(deny system-fcntl (fcntl-command 80 110))",
      "(deny file-ioctl (ioctl-command TIOCSTI))",
  };
  size_t last = 0;
  for (const auto& marker : order) {
    CAPTURE(marker);
    size_t at = p.text.find(marker);
    REQUIRE(at != std::string::npos);
    CHECK(at >= last);
    last = at;
  }
  // The parameters follow §4.4's order.
  std::vector<std::string> keys;
  for (const auto& kv : p.params) keys.push_back(kv.substr(0, kv.find('=')));
  CHECK(keys == std::vector<std::string>{"READABLE_ROOT_0", "READABLE_ROOT_1", "WRITABLE_ROOT_0",
                                         "WRITABLE_ROOT_0_EXCLUDED_0", "WRITABLE_ROOT_0_EXCLUDED_0_PARENT_0",
                                         "UNIX_SOCKET_PATH_0", "UEXEC_CONTROL_DIR", "UEXEC_STATE_DIR",
                                         "DENY_READ_0_PARENT_0"});
}

TEST_CASE("seatbelt: sections present only when §4.1 says so") {
  SUBCASE("full read: preferences, no platform defaults even when asked") {
    SeatbeltInput in = workspace_write();
    in.include_platform_defaults = true;
    auto t = seatbelt_policy(in).text;
    CHECK(has(t, "(allow user-preference-read)"));
    CHECK_FALSE(has(t, "; platform defaults"));
  }
  SUBCASE("full read and write without deny entries: no fcntl rule, no unlink section") {
    SeatbeltInput in = base_input();
    in.full_read = true;
    in.full_write = true;
    auto t = seatbelt_policy(in).text;
    CHECK(has(t, "(allow file-write* (regex #\"^/\"))"));
    CHECK_FALSE(has(t, "fcntl-command"));
    CHECK_FALSE(has(t, "file-write-unlink"));
  }
  SUBCASE("read-only: no write or unlink section, no network") {
    SeatbeltInput in = base_input();
    in.full_read = true;
    auto t = seatbelt_policy(in).text;
    CHECK_FALSE(has(t, "(allow file-write*"));
    CHECK_FALSE(has(t, "file-write-unlink"));
    CHECK_FALSE(has(t, "(allow network"));
    CHECK(has(t, "(deny system-fcntl (fcntl-command 80 110))"));
  }
  SUBCASE("no uexec directories given: no section 8") {
    SeatbeltInput in;
    in.full_read = true;
    auto p = seatbelt_policy(in);
    CHECK_FALSE(has(p.text, "UEXEC_"));
    CHECK(p.params.empty());
  }
  SUBCASE("seatbelt_allow_ps adds the /bin/ps exception, off by default") {
    SeatbeltInput in = workspace_write();
    CHECK_FALSE(has(seatbelt_policy(in).text, "no-sandbox"));
    in.allow_ps = true;
    CHECK(has(seatbelt_policy(in).text, "(allow process-exec (literal \"/bin/ps\") (with no-sandbox))"));
  }
  SUBCASE("proxy ports without local binding: no DNS, no loopback-wide rules") {
    SeatbeltInput in = workspace_write();
    in.proxy_ports = {3128};
    auto t = seatbelt_policy(in).text;
    CHECK(has(t, "(allow network-outbound (remote ip \"localhost:3128\"))"));
    CHECK_FALSE(has(t, "*:53"));
    CHECK_FALSE(has(t, "localhost:*"));
    CHECK(has(t, "com.apple.trustd.agent"));
  }
  SUBCASE("local binding without ports (unix sockets only): loopback but no DNS") {
    SeatbeltInput in = workspace_write();
    in.allow_local_binding = true;
    in.allow_unix_sockets = {"/Users/dev/.ssh/agent.sock"};
    auto t = seatbelt_policy(in).text;
    CHECK(has(t, "(allow network-bind (local ip \"*:*\"))"));
    CHECK_FALSE(has(t, "*:53"));
  }
}

TEST_CASE("seatbelt: nested writable roots cannot re-open each other's read-only parts") {
  SeatbeltInput in = base_input();
  in.full_read = true;
  in.writable = {
      {"/Users/dev/proj/sub", {"/Users/dev/proj/sub/docs"}, {".git"}},
      {"/Users/dev/proj", {}, {".git"}},
  };
  SeatbeltPolicy p = seatbelt_policy(in);
  check_invariants(p);
  // The outer root (index 0 after sorting) also excludes the inner root's carve-out and .git.
  CHECK(std::find(p.params.begin(), p.params.end(), "WRITABLE_ROOT_0_EXCLUDED_0=/Users/dev/proj/sub/docs") !=
        p.params.end());
  CHECK(std::find(p.params.begin(), p.params.end(), "WRITABLE_ROOT_1_EXCLUDED_0=/Users/dev/proj/sub/docs") !=
        p.params.end());
  CHECK(count(p.text, "(require-not (regex #\"^/Users/dev/proj/sub/\\.git(/.*)?$\"))") == 2);
  CHECK(count(p.text, "(require-not (regex #\"^/Users/dev/proj/\\.git(/.*)?$\"))") == 1);
  // The inner root is a parent of the carve-out seen from the outer root.
  CHECK(std::find(p.params.begin(), p.params.end(), "WRITABLE_ROOT_0_EXCLUDED_0_PARENT_0=/Users/dev/proj/sub") !=
        p.params.end());
}

TEST_CASE("seatbelt: the output does not depend on the caller's order") {
  SeatbeltInput a = base_input();
  a.full_read = false;
  a.readable_roots = {"/opt/homebrew", "/Users/dev/.cargo"};
  a.writable = {{"/Users/dev/proj", {"/Users/dev/proj/.git", "/Users/dev/proj/b/c"}, kNames},
                {"/private/tmp", {}, kNames}};
  a.deny_paths = {"/Users/dev/proj/.env", "/Users/dev/.aws"};
  a.deny_globs = {{"/Users/dev/proj/**/*.pem", ""}, {"/Users/dev/proj/k/*.key", ""}};
  a.allow_unix_sockets = {"/b.sock", "/a.sock"};
  SeatbeltInput b = a;
  std::reverse(b.readable_roots.begin(), b.readable_roots.end());
  std::reverse(b.writable.begin(), b.writable.end());
  std::reverse(b.writable.back().read_only.begin(), b.writable.back().read_only.end());
  std::reverse(b.writable.back().protected_names.begin(), b.writable.back().protected_names.end());
  std::reverse(b.deny_paths.begin(), b.deny_paths.end());
  std::reverse(b.deny_globs.begin(), b.deny_globs.end());
  std::reverse(b.allow_unix_sockets.begin(), b.allow_unix_sockets.end());
  SeatbeltPolicy pa = seatbelt_policy(a);
  SeatbeltPolicy pb = seatbelt_policy(b);
  CHECK(pa.text == pb.text);
  CHECK(pa.params == pb.params);
}

TEST_CASE("seatbelt: a policy with 10 roots and 5 globs") {
  SeatbeltInput in = base_input();
  in.full_read = false;
  in.include_platform_defaults = true;
  for (int i = 0; i < 10; ++i) {
    std::string root = "/Users/dev/work/repo" + std::to_string(i);
    in.readable_roots.push_back("/opt/data" + std::to_string(i));
    in.writable.push_back({root, {root + "/.git", root + "/vendor/pinned"}, kNames});
  }
  for (int i = 0; i < 5; ++i)
    in.deny_globs.push_back({"/Users/dev/work/repo" + std::to_string(i) + "/secrets/**/*.key", ""});
  in.allow_unix_sockets = {"/Users/dev/.ssh/agent.sock"};
  REQUIRE(check_seatbelt_input(in).has_value());
  SeatbeltPolicy p = seatbelt_policy(in);
  check_invariants(p);
  CHECK(count(p.text, "(require-all (subpath (param \"WRITABLE_ROOT_") == 10);
  CHECK(count(p.text, "(deny file-read* (regex #") == 5);
  CHECK(count(p.text, "(deny file-write-unlink (literal (param \"WRITABLE_ROOT_") == 10 + 10);
  CHECK(count(p.text, "_PARENT_0\")))") == 10 + 5);
  // 20 readable roots, 10 writable roots with 2 exclusions and 1 parent each, 1 socket,
  // 2 uexec directories, 5 deny parents.
  CHECK(p.params.size() == 20 + 10 * 4 + 1 + 2 + 5);
  auto argv = seatbelt_argv(p, {"true"});
  CHECK(argv.size() == 3 + p.params.size() + 2);
}
