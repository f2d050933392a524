// Unit tests for web/listener_auth.h: the Host check against DNS rebinding and --token-file.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "web/listener_auth.h"
#include "helpers/temp_dir.h"

using namespace uexec;

TEST_CASE("Host header: the host, lower case, without the port") {
  CHECK(*web::parse_host_header("127.0.0.1:8022") == "127.0.0.1");
  CHECK(*web::parse_host_header("LocalHost") == "localhost");
  CHECK(*web::parse_host_header("localhost.:80") == "localhost");
  CHECK(*web::parse_host_header("[::1]:8022") == "::1");
  CHECK(*web::parse_host_header("[::1]") == "::1");
  CHECK(*web::parse_host_header(" Tools.Example:443 ") == "tools.example");
  for (const char* bad : {"", "   ", "[::1", "[::1]x", "[::1]:", "[evil]:80", "::1", "a b", "host:port", "host:123456",
                          "host:1:2", ":8022", "evil.example/x", "user@evil.example"})
    CHECK_MESSAGE(!web::parse_host_header(bad), bad);
}

TEST_CASE("Host check: loopback names pass with or without a port; others only when configured") {
  std::vector<std::string> none;
  for (const char* ok : {"127.0.0.1", "127.0.0.1:8022", "127.1.2.3:1", "localhost", "localhost:8022", "LOCALHOST",
                         "[::1]", "[::1]:8022", "[::ffff:127.0.0.1]:8022"})
    CHECK_MESSAGE(web::host_allowed(ok, none), ok);
  for (const char* bad : {"", "evil.example", "evil.example:8022", "localhost.evil.example", "127.0.0.1.evil.example",
                          "0.0.0.0:8022", "[::]:8022", "192.168.1.5:8022", "10.0.0.1", "[::1", "127.0.0.1:x"})
    CHECK_MESSAGE(!web::host_allowed(bad, none), bad);
  std::vector<std::string> allowed = {*web::parse_allowed_host("DevBox.Example:8022"), *web::parse_allowed_host("[fd00::1]"),
                                      *web::parse_allowed_host("192.168.1.5")};
  CHECK(web::host_allowed("devbox.example", allowed));
  CHECK(web::host_allowed("devbox.example:9999", allowed));  // the port is not what rebinding changes
  CHECK(web::host_allowed("[fd00::1]:8022", allowed));
  CHECK(web::host_allowed("192.168.1.5:8022", allowed));
  CHECK(!web::host_allowed("sub.devbox.example", allowed));
  CHECK(!web::host_allowed("devbox.example.evil", allowed));
}

TEST_CASE("--allow-host: names and addresses; * and URLs are refused, saying why") {
  CHECK(*web::parse_allowed_host("tools.example") == "tools.example");
  CHECK(*web::parse_allowed_host("[FD00::1]:8022") == "fd00::1");
  auto star = web::parse_allowed_host("*");
  REQUIRE(!star);
  CHECK(star.error().context.find("DNS rebinding") != std::string::npos);
  auto url = web::parse_allowed_host("https://tools.example");
  REQUIRE(!url);
  CHECK(url.error().context.find("not a URL") != std::string::npos);
  CHECK(!web::parse_allowed_host(""));
  CHECK(!web::parse_allowed_host("a b"));
}

TEST_CASE("subprotocols: what libwebsockets would drop without an answer gets a reason") {
  CHECK(web::subprotocol_problem("", "uexec.v1").empty());  // none offered: the default protocol
  CHECK(web::subprotocol_problem("uexec.v1", "uexec.v1").empty());
  CHECK(web::subprotocol_problem("uexec.auth.abc, uexec.v1", "uexec.v1").empty());
  CHECK(web::subprotocol_problem(" uexec.v1 ,x", "uexec.v1").empty());
  CHECK(web::subprotocol_problem("uexec.auth.abc", "uexec.v1").find("`uexec.v1` was not offered") != std::string::npos);
  CHECK(!web::subprotocol_problem("uexec.v2", "uexec.v1").empty());
  CHECK(!web::subprotocol_problem("uexec.v1x", "uexec.v1").empty());
  std::string long_name = "uexec.auth." + std::string(60, 'a');
  CHECK(web::subprotocol_problem(long_name + ", uexec.v1", "uexec.v1").find("first") != std::string::npos);
  CHECK(web::subprotocol_problem("uexec.v1, " + long_name, "uexec.v1").empty());  // matched before the long one
  std::string long_list = "uexec.v1";
  while (long_list.size() <= 126) long_list += ", filler";
  CHECK(web::subprotocol_problem(long_list, "uexec.v1").find("more than this server reads") != std::string::npos);
}

namespace {

struct TokenDir {
  uexec::test::TempDir tmp{"uexec-token"};
  const std::string& dir = tmp.path;
  std::string write(const std::string& name, const std::string& content, mode_t mode) {
    std::string p = tmp.write(name, content);
    ::chmod(p.c_str(), mode);
    return p;
  }
};

}  // namespace

TEST_CASE("--token-file: the token, without its trailing newline") {
  TokenDir t;
  CHECK(*web::read_token_file(t.write("a", "s3cret-token\n", 0600)) == "s3cret-token");
  CHECK(*web::read_token_file(t.write("b", "s3cret-token", 0400)) == "s3cret-token");
  CHECK(*web::read_token_file(t.write("c", "s3cret-token\r\n", 0600)) == "s3cret-token");
}

TEST_CASE("--token-file: refused when missing, empty, shared with group or others, or not one token") {
  TokenDir t;
  auto missing = web::read_token_file(t.dir + "/nope");
  REQUIRE(!missing);
  CHECK(missing.error().message().find(t.dir + "/nope") != std::string::npos);
  CHECK(missing.error().message().find("No such file") != std::string::npos);
  for (const char* empty : {"", "\n", "\r\n"}) {
    auto r = web::read_token_file(t.write("empty", empty, 0600));
    REQUIRE(!r);
    CHECK(r.error().context.find("is empty") != std::string::npos);
  }
  for (mode_t mode : {0640, 0604, 0644, 0660, 0620}) {
    auto r = web::read_token_file(t.write("open", "tok\n", mode));
    REQUIRE_MESSAGE(!r, mode);
    CHECK(r.error().context.find("group or others") != std::string::npos);
    CHECK(r.error().context.find("chmod 600") != std::string::npos);
  }
  auto spaced = web::read_token_file(t.write("spaced", "two words\n", 0600));
  REQUIRE(!spaced);
  CHECK(spaced.error().context.find("printable ASCII") != std::string::npos);
  auto two_lines = web::read_token_file(t.write("lines", "one\ntwo\n", 0600));
  CHECK(!two_lines);
  auto dir = web::read_token_file(t.dir);
  CHECK(!dir);
}
