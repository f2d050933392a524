// Unit tests for cli/user_config.h: the config file's keys, their checks and origins, the
// sample file and `uexec config`'s listing, and SandboxFlags starting from the file.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli/sandbox_flags.h"
#include "cli/user_config.h"

using namespace uexec::cli;
using namespace std::chrono_literals;

namespace {

const std::string kPath = "/home/u/.config/uexec/config.toml";

UserConfig parsed(const std::string& text) {
  auto c = parse_user_config(text, kPath);
  REQUIRE_MESSAGE(c.has_value(), (c ? std::string() : c.error().context));
  return *c;
}

std::string error_of(const std::string& text) {
  auto c = parse_user_config(text, kPath);
  REQUIRE_FALSE(c.has_value());
  return c.error().context;
}

// `uexec config`'s listing as a TOML file (tables and `key = value` lines).
std::string as_file(const UserConfig& c) {
  std::string out, table;
  for (const auto& line : describe(c)) {
    if (line.table != table) out += "[" + (table = line.table) + "]\n";
    out += line.key + " = " + line.value + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("user config: an empty or missing file is every default, and no key has an origin") {
  ::unsetenv("UEXEC_WEB_ROOT");
  UserConfig c = parsed("");
  CHECK(c.ws == "127.0.0.1:8022");
  CHECK(c.web);
  CHECK(c.retain_exited == std::chrono::milliseconds(24h));
  CHECK(c.ring_bytes == uexec::base::Config{}.retain_bytes);
  CHECK_FALSE(c.sandbox_mode);
  CHECK(c.approval == uexec::policy::ApprovalPolicy::kNever);
  CHECK(c.env_preset);
  CHECK(c.max_output_tokens == uexec::base::AgentConfig{}.max_output_tokens);
  CHECK_FALSE(c.structured_content);
  CHECK(c.origin.empty());
  for (const auto& line : describe(c)) CHECK(line.origin == "default");
}

TEST_CASE("user config: every key read, with the file and line it came from") {
  ::unsetenv("UEXEC_WEB_ROOT");
  UserConfig c = parsed(
      "[daemon]\n"
      "ws = \"0.0.0.0:9000\"\n"
      "web = false\n"
      "web_root = \"/srv/page\"\n"
      "retain_exited = \"forever\"\n"
      "journal = true\n"
      "journal_size = \"2MiB\"\n"
      "journal_max = 1073741824\n"
      "[sessions]\n"
      "ring_size = \"64KiB\"\n"
      "[sandbox]\n"
      "mode = \"workspace-write\"\n"
      "backend = \"bwrap\"\n"
      "writable = [\"~/src\", \"/data\"]\n"
      "deny_read = [\"**/*.pem\"]\n"
      "network = true\n"
      "approval = \"on-failure\"\n"
      "[agent]\n"
      "env_preset = false\n"
      "max_output_tokens = 2000\n"
      "structured_content = true\n");
  CHECK(c.ws == "0.0.0.0:9000");
  CHECK_FALSE(c.web);
  CHECK(c.web_root == "/srv/page");
  CHECK_FALSE(c.retain_exited);
  CHECK(c.journal);
  CHECK(c.journal_size == 2u << 20);
  CHECK(c.journal_max == 1u << 30);
  CHECK(c.ring_bytes == 64 * 1024);
  CHECK(c.sandbox_mode == uexec::policy::SandboxMode::kWorkspaceWrite);
  CHECK(c.backend == uexec::policy::Backend::kBwrap);
  CHECK(c.writable == std::vector<std::string>{"~/src", "/data"});
  CHECK(c.deny_read == std::vector<std::string>{"**/*.pem"});
  CHECK(c.network == true);
  CHECK(c.approval == uexec::policy::ApprovalPolicy::kOnFailure);
  CHECK_FALSE(c.env_preset);
  CHECK(c.max_output_tokens == 2000);
  CHECK(c.structured_content);
  CHECK(c.origin.size() == 17);
  CHECK(c.origin["daemon.ws"] == kPath + ":2");
  CHECK(c.origin["agent.structured_content"] == kPath + ":21");
  for (const auto& line : describe(c)) CHECK(line.origin != "default");
}

TEST_CASE("user config: a mistake names the file, line and column, and what the key accepts") {
  CHECK(error_of("[daemon]\nwss = \"x\"\n") ==
        kPath + ":2:1: unknown key daemon.wss ([daemon] has ws, web, web_root, retain_exited, journal, journal_size, journal_max)");
  CHECK(error_of("[daemon]\njournal_size = \"1KiB\"\n").find("between 64KiB and 1GiB") != std::string::npos);
  CHECK(error_of("[daemon]\njournal_max = \"lots\"\n").find("daemon.journal_max needs a size") != std::string::npos);
  CHECK(error_of("[daemon]\njournal = \"yes\"\n").find("daemon.journal") != std::string::npos);
  CHECK(error_of("[server]\nws = \"x\"\n").find(kPath + ":1:2: unknown table [server]") == 0);
  CHECK(error_of("daemon = 1\n").find("daemon must be a table") != std::string::npos);
  CHECK(error_of("[daemon]\nweb = \"yes\"\n") == kPath + ":2:7: daemon.web needs true or false");
  CHECK(error_of("[daemon]\nws = \"localhost:http\"\n").find("daemon.ws needs \"HOST:PORT\"") != std::string::npos);
  CHECK(error_of("[daemon]\nretain_exited = \"soon\"\n").find("needs a duration") != std::string::npos);
  CHECK(error_of("[sessions]\nring_size = \"3MB\"\n").find("sessions.ring_size needs a size") != std::string::npos);
  CHECK(error_of("[sessions]\nring_size = 100\n").find("between 4KiB and 256MiB") != std::string::npos);
  CHECK(error_of("[sessions]\nring_size = \"1GiB\"\n").find("between 4KiB and 256MiB") != std::string::npos);
  CHECK(error_of("[sandbox]\nmode = \"open\"\n").find("sandbox.mode") != std::string::npos);
  CHECK(error_of("[sandbox]\nmode = \"read-only\"\nbackend = \"docker\"\n").find("sandbox.backend") != std::string::npos);
  CHECK(error_of("[sandbox]\nmode = \"read-only\"\nwritable = \"/x\"\n").find("list of strings") != std::string::npos);
  CHECK(error_of("[sandbox]\nmode = \"read-only\"\ndeny_read = [1]\n").find("list of strings") != std::string::npos);
  CHECK(error_of("[sandbox]\nnetwork = true\n") == kPath + ":2: sandbox.network needs sandbox.mode");
  CHECK(error_of("[sandbox]\nmode = \"none\"\napproval = \"untrusted\"\n").find("sandbox.approval needs sandbox.mode") !=
        std::string::npos);
  CHECK(error_of("[agent]\nmax_output_tokens = 0\n").find("between 1 and 10000") != std::string::npos);
  CHECK(error_of("[agent]\nmax_output_tokens = 10001\n").find("between 1 and 10000") != std::string::npos);
  CHECK(error_of("[agent]\nmax_output_tokens = 2.5\n").find("whole number") != std::string::npos);
  // Not TOML at all: toml++'s own words, at its position.
  CHECK(error_of("[daemon\n").find(kPath + ":1:") == 0);
  CHECK(error_of("[daemon]\nws = \"a\"\nws = \"b\"\n").find(kPath + ":3:") == 0);
}

TEST_CASE("user config: sizes, durations and the values that turn things off") {
  ::unsetenv("UEXEC_WEB_ROOT");
  CHECK(parsed("[sessions]\nring_size = 65536\n").ring_bytes == 65536);
  CHECK(parsed("[sessions]\nring_size = \"2M\"\n").ring_bytes == 2u << 20);
  CHECK(parsed("[sessions]\nring_size = \"256 MiB\"\n").ring_bytes == 256u << 20);
  CHECK(parsed("[daemon]\nretain_exited = \"90m\"\n").retain_exited == std::chrono::milliseconds(90min));
  CHECK(parsed("[daemon]\nws = \"off\"\n").ws.empty());
  CHECK_FALSE(parsed("[sandbox]\nmode = \"none\"\n").sandbox_mode);
}

TEST_CASE("user config: UEXEC_WEB_ROOT wins over the file's web_root, and says so") {
  ::setenv("UEXEC_WEB_ROOT", "/opt/page", 1);
  UserConfig c = parsed("[daemon]\nweb_root = \"/srv/page\"\n");
  ::unsetenv("UEXEC_WEB_ROOT");
  CHECK(c.web_root == "/opt/page");
  CHECK(c.origin["daemon.web_root"] == "environment (UEXEC_WEB_ROOT)");
}

TEST_CASE("user config: the sample file is the defaults, and `uexec config`'s listing reads back as the same file") {
  ::unsetenv("UEXEC_WEB_ROOT");
  std::string sample = sample_config();
  UserConfig from_sample = parsed(sample);
  CHECK(from_sample.origin.empty());
  CHECK(as_file(from_sample) == as_file(UserConfig{}));
  for (const auto& line : describe(UserConfig{})) {
    CHECK_MESSAGE(sample.find("#" + line.key + " = " + line.value + "\n") != std::string::npos, line.key);
    CHECK_MESSAGE(sample.find("# " + line.help + "\n") != std::string::npos, line.key);
  }
  // Uncommented, the sample still reads: every key at its default, now with origins.
  std::string uncommented;
  for (std::size_t at = 0; at < sample.size();) {
    std::size_t end = sample.find('\n', at);
    std::string line = sample.substr(at, end - at);
    if (line.size() > 1 && line[0] == '#' && line[1] != ' ') line.erase(0, 1);
    uncommented += line + "\n";
    at = end + 1;
  }
  UserConfig all = parsed(uncommented);
  CHECK(all.origin.size() == describe(all).size());
  CHECK(as_file(all) == as_file(UserConfig{}));
  // A listing of other values is a file that reads back to them.
  UserConfig c = parsed(
      "[daemon]\nretain_exited = \"36h\"\n[sessions]\nring_size = 12288\n"
      "[sandbox]\nmode = \"read-only\"\ndeny_read = [\"a\\\"b\"]\n[agent]\nmax_output_tokens = 77\n");
  CHECK(as_file(parsed(as_file(c))) == as_file(c));
}

TEST_CASE("SandboxFlags: the config's [sandbox] is the start, a flag overrides its key, a list flag replaces the list") {
  ::unsetenv("UEXEC_WEB_ROOT");
  UserConfig c = parsed(
      "[sandbox]\nmode = \"workspace-write\"\nwritable = [\"/a\"]\ndeny_read = [\"*.key\"]\napproval = \"on-request\"\n");
  SUBCASE("no flags: the file's") {
    SandboxFlags s;
    s.seed(c);
    Flags f(Unmatched::kRefuse);
    s.declare(f);
    REQUIRE(f.parse({}).ok());
    REQUIRE(s.finish());
    CHECK_FALSE(s.flagged);
    CHECK(s.profile->mode == uexec::policy::SandboxMode::kWorkspaceWrite);
    CHECK(s.profile->writable_roots == std::vector<std::string>{"/a"});
    CHECK(s.profile->deny_read == std::vector<std::string>{"*.key"});
    CHECK(s.approval == uexec::policy::ApprovalPolicy::kOnRequest);
  }
  SUBCASE("flags: each replaces its key; the rest stay the file's") {
    SandboxFlags s;
    s.seed(c);
    Flags f(Unmatched::kRefuse);
    s.declare(f);
    REQUIRE(f.parse({"--sandbox", "read-only", "--writable", "/b", "--writable", "/c"}).ok());
    REQUIRE(s.finish());
    CHECK(s.flagged);
    CHECK(s.profile->mode == uexec::policy::SandboxMode::kReadOnly);
    CHECK(s.profile->writable_roots == std::vector<std::string>{"/b", "/c"});
    CHECK(s.profile->deny_read == std::vector<std::string>{"*.key"});
    CHECK(s.approval == uexec::policy::ApprovalPolicy::kOnRequest);
  }
}
