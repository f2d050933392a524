// user_config.cc: the config file's keys, read with toml++ (user_config.h).
#include "cli/user_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <toml++/toml.h>

#include <fmt/core.h>

#include "base/config.h"
#include "base/home_dir.h"
#include "base/log.h"
#include "cli/flags.h"
#include "cli/ws_listener_flags.h"

namespace uexec::cli {

namespace {

using std::chrono::milliseconds;

// TOML's own spelling of a string: quoted, with \ and " escaped (config values hold no
// control characters worth more).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string quoted_list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quoted(v[i]);
  return out + "]";
}

// "30s", "10m", "24h", "7d", "250ms": the largest unit that divides it.
std::string duration_text(milliseconds d) {
  long long ms = d.count();
  if (ms == 0) return "0s";
  if (ms % 86400000 == 0) return std::to_string(ms / 86400000) + "d";
  if (ms % 3600000 == 0) return std::to_string(ms / 3600000) + "h";
  if (ms % 60000 == 0) return std::to_string(ms / 60000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// "1MiB", "512KiB", or bytes.
std::string size_text(std::size_t n) {
  if (n % (1u << 30) == 0) return std::to_string(n >> 30) + "GiB";
  if (n % (1u << 20) == 0) return std::to_string(n >> 20) + "MiB";
  if (n % (1u << 10) == 0) return std::to_string(n >> 10) + "KiB";
  return std::to_string(n);
}

// "1MiB", "64 KiB", "2M", "4096" (binary units; K/M/G alone mean the same).
std::optional<std::size_t> parse_size(const std::string& text) {
  std::size_t i = 0;
  unsigned long long n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    n = n * 10 + static_cast<unsigned>(text[i] - '0');
    if (n > (1ull << 40)) return std::nullopt;
    ++i;
  }
  if (i == 0) return std::nullopt;
  while (i < text.size() && text[i] == ' ') ++i;
  std::string unit = text.substr(i);
  unsigned long long scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KiB") scale = 1ull << 10;
  else if (unit == "M" || unit == "MiB") scale = 1ull << 20;
  else if (unit == "G" || unit == "GiB") scale = 1ull << 30;
  else return std::nullopt;
  return static_cast<std::size_t>(n * scale);
}

std::optional<std::string> string_of(const toml::node& v) {
  if (auto s = v.as_string()) return s->get();
  return std::nullopt;
}

std::optional<bool> bool_of(const toml::node& v) {
  if (auto b = v.as_boolean()) return b->get();
  return std::nullopt;
}

// A list of strings, or an error text.
std::string strings_of(const toml::node& v, std::vector<std::string>& out) {
  const toml::array* a = v.as_array();
  if (!a) return "needs a list of strings";
  out.clear();
  for (const auto& e : *a) {
    auto s = string_of(e);
    if (!s) return "needs a list of strings";
    out.push_back(*s);
  }
  return {};
}

constexpr std::size_t kRingMin = 4u << 10, kRingMax = 256u << 20;

// The reader and the display of a key that is a plain true/false member.
template <bool UserConfig::*kMember>
std::string read_bool(const toml::node& v, UserConfig& c) {
  auto b = bool_of(v);
  if (!b) return "needs true or false";
  c.*kMember = *b;
  return {};
}

template <bool UserConfig::*kMember>
std::string show_bool(const UserConfig& c) {
  return c.*kMember ? "true" : "false";
}

constexpr std::size_t kJournalSizeMin = 64u << 10, kJournalSizeMax = 1u << 30;
constexpr std::size_t kJournalMaxMin = 1u << 20, kJournalMaxMax = std::size_t{1} << 40;

// The reader and the display of a key that is a size (a number of bytes or "8MiB") between
// kMin and kMax.
template <std::size_t UserConfig::*kMember, std::size_t kMin, std::size_t kMax>
std::string read_size(const toml::node& v, UserConfig& c) {
  std::optional<std::size_t> n;
  if (auto i = v.as_integer()) n = i->get() < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(i->get()));
  else if (auto s = string_of(v)) n = parse_size(*s);
  if (!n) return "needs a size: \"1MiB\", \"512KiB\" or a number of bytes";
  if (*n < kMin || *n > kMax) return "must be between " + size_text(kMin) + " and " + size_text(kMax);
  c.*kMember = *n;
  return {};
}

template <std::size_t UserConfig::*kMember>
std::string show_size(const UserConfig& c) {
  return quoted(size_text(c.*kMember));
}

// One key: the one place that names it, reads it, shows it and explains it. `read` returns
// "" or what is wrong with the value.
struct KeySpec {
  const char* table;
  const char* key;
  const char* help;
  std::string (*read)(const toml::node&, UserConfig&);
  std::string (*show)(const UserConfig&);
};

const KeySpec kKeys[] = {
    {"daemon", "ws", "`uexec serve`'s WebSocket listener and web terminal, HOST:PORT, or \"off\" (--ws, --no-ws)",
     [](const toml::node& v, UserConfig& c) -> std::string {
       auto s = string_of(v);
       if (!s) return "needs a string: \"HOST:PORT\" or \"off\"";
       if (*s == "off") {
         c.ws.clear();
         return {};
       }
       std::string host;
       int port = 0;
       if (!split_host_port(*s, 8022, &host, &port)) return "needs \"HOST:PORT\" (e.g. \"127.0.0.1:8022\") or \"off\"";
       c.ws = *s;
       return {};
     },
     [](const UserConfig& c) { return quoted(c.ws.empty() ? "off" : c.ws); }},
    {"daemon", "web", "serve the web terminal's page on that port (--no-web)",
     read_bool<&UserConfig::web>, show_bool<&UserConfig::web>},
    {"daemon", "web_root", "the page's directory; \"\": the installed page (--web-root, $UEXEC_WEB_ROOT)",
     [](const toml::node& v, UserConfig& c) -> std::string {
       auto s = string_of(v);
       if (!s) return "needs a string (a directory)";
       c.web_root = *s;
       return {};
     },
     [](const UserConfig& c) { return quoted(c.web_root); }},
    {"daemon", "retain_exited", "how long a finished process stays listed and readable: \"30s\", \"24h\", \"7d\" or \"forever\" (--retain-exited)",
     [](const toml::node& v, UserConfig& c) -> std::string {
       auto s = string_of(v);
       if (!s) return "needs a string: a duration (\"10m\", \"24h\", \"7d\") or \"forever\"";
       if (*s == "forever") {
         c.retain_exited.reset();
         return {};
       }
       auto d = parse_duration(*s);
       if (!d) return "needs a duration (\"10m\", \"24h\", \"7d\") or \"forever\", not \"" + *s + "\"";
       c.retain_exited = *d;
       return {};
     },
     [](const UserConfig& c) { return quoted(c.retain_exited ? duration_text(*c.retain_exited) : "forever"); }},
    {"daemon", "journal", "keep each process's output and end on disk, for `uexec logs` after a restart (--journal)",
     read_bool<&UserConfig::journal>, show_bool<&UserConfig::journal>},
    {"daemon", "journal_size", "the journal's bytes per process (its first quarter and its last part): 64KiB to 1GiB",
     read_size<&UserConfig::journal_size, kJournalSizeMin, kJournalSizeMax>, show_size<&UserConfig::journal_size>},
    {"daemon", "journal_max", "the journal's bytes in all; the oldest finished processes' journals go first: 1MiB to 1TiB",
     read_size<&UserConfig::journal_max, kJournalMaxMin, kJournalMaxMax>, show_size<&UserConfig::journal_max>},
    {"sessions", "ring_size", "output each session keeps for readers who come later (head and tail halves): \"1MiB\", \"256KiB\", 4KiB to 256MiB",
     read_size<&UserConfig::ring_bytes, kRingMin, kRingMax>, show_size<&UserConfig::ring_bytes>},
    {"sandbox", "mode", "the agent tools' default sandbox: \"none\", \"read-only\", \"workspace-write\" or \"danger-full-access\" (--sandbox)",
     [](const toml::node& v, UserConfig& c) -> std::string {
       auto s = string_of(v);
       if (!s) return "needs a string";
       if (*s == "none") {
         c.sandbox_mode.reset();
         return {};
       }
       auto m = policy::parse_sandbox_mode(*s);
       if (!m) return m.error().context + " (or \"none\")";
       c.sandbox_mode = *m;
       return {};
     },
     [](const UserConfig& c) { return quoted(c.sandbox_mode ? policy::sandbox_mode_name(*c.sandbox_mode) : "none"); }},
    {"sandbox", "backend", "\"auto\", \"namespaces\", \"landlock\" or \"bwrap\" (--backend)",
     [](const toml::node& v, UserConfig& c) -> std::string {
       auto s = string_of(v);
       if (!s) return "needs a string";
       auto b = policy::parse_backend(*s);
       if (!b) return b.error().context;
       c.backend = *b;
       return {};
     },
     [](const UserConfig& c) {
       switch (c.backend) {
         case policy::Backend::kNamespaces: return quoted("namespaces");
         case policy::Backend::kLandlock: return quoted("landlock");
         case policy::Backend::kBwrap: return quoted("bwrap");
         case policy::Backend::kSeatbelt: return quoted("seatbelt");
         case policy::Backend::kAuto: break;
       }
       return quoted("auto");
     }},
    {"sandbox", "writable", "more writable directories under workspace-write, \"~/\" for your home (--writable)",
     [](const toml::node& v, UserConfig& c) { return strings_of(v, c.writable); },
     [](const UserConfig& c) { return quoted_list(c.writable); }},
    {"sandbox", "deny_read", "paths and globs no sandboxed command may read, e.g. \"**/*.pem\" (--deny-read)",
     [](const toml::node& v, UserConfig& c) { return strings_of(v, c.deny_read); },
     [](const UserConfig& c) { return quoted_list(c.deny_read); }},
    {"sandbox", "network", "let sandboxed commands reach the network; default: the mode's own (--network)",
     [](const toml::node& v, UserConfig& c) -> std::string {
       auto b = bool_of(v);
       if (!b) return "needs true or false";
       c.network = *b;
       return {};
     },
     [](const UserConfig& c) -> std::string {
       if (c.network) return *c.network ? "true" : "false";
       bool mode_default = c.sandbox_mode && policy::PermissionProfile::for_mode(*c.sandbox_mode).network;
       return mode_default ? "true" : "false";
     }},
    {"sandbox", "approval", "\"never\", \"on-failure\", \"on-request\" or \"untrusted\" (--approval)",
     [](const toml::node& v, UserConfig& c) -> std::string {
       auto s = string_of(v);
       if (!s) return "needs a string";
       auto p = policy::parse_approval_policy(*s);
       if (!p) return p.error().context;
       c.approval = *p;
       return {};
     },
     [](const UserConfig& c) { return quoted(policy::approval_policy_name(c.approval)); }},
    {"agent", "env_preset", "agent commands run with NO_COLOR=1, TERM=dumb, pagers set to cat, editors to true, …",
     read_bool<&UserConfig::env_preset>, show_bool<&UserConfig::env_preset>},
    {"agent", "max_output_tokens", "a call's output budget when the call names none (1 to 10000 tokens of 4 bytes)",
     [](const toml::node& v, UserConfig& c) -> std::string {
       auto i = v.as_integer();
       if (!i) return "needs a whole number";
       if (i->get() < 1 || i->get() > base::AgentConfig{}.max_output_tokens_cap)
         return "must be between 1 and " + std::to_string(base::AgentConfig{}.max_output_tokens_cap);
       c.max_output_tokens = static_cast<long>(i->get());
       return {};
     },
     [](const UserConfig& c) { return std::to_string(c.max_output_tokens); }},
    {"agent", "structured_content", "`uexec mcp`: tool results also carry structuredContent (--structured-content)",
     read_bool<&UserConfig::structured_content>, show_bool<&UserConfig::structured_content>},
};

const char* const kTables[] = {"daemon", "sessions", "sandbox", "agent"};

std::string where(const std::string& path, const toml::source_region& at) {
  return fmt::format("{}:{}:{}", path, at.begin.line, at.begin.column);
}

std::string config_dir_of(const std::string& file) {
  auto slash = file.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string() : file.substr(0, slash);
}

}  // namespace

std::string user_config_path() {
  if (const char* p = std::getenv("UEXEC_CONFIG"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x == '/') return std::string(x) + "/uexec/config.toml";
  const char* home_env = std::getenv("HOME");
  std::string home = base::home_dir(home_env ? home_env : "");
  return (home.empty() ? std::string("/") : home) + "/.config/uexec/config.toml";
}

base::Result<UserConfig> parse_user_config(const std::string& text, const std::string& path) {
  UserConfig c;
  // Debian's toml++ is a shared library built with exceptions: its one throw ends here.
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& err) {
    return base::Error::invalid(fmt::format("{}: {}", where(path, err.source()), err.description()));
  }
  for (auto&& [table_key, table_node] : root) {
    std::string table(table_key.str());
    bool known = false;
    for (const char* t : kTables) known = known || table == t;
    if (!known)
      return base::Error::invalid(fmt::format("{}: unknown table [{}] (daemon, sessions, sandbox or agent)",
                                              where(path, table_key.source()), table));
    const toml::table* entries = table_node.as_table();
    if (!entries)
      return base::Error::invalid(fmt::format("{}: {} must be a table: [{}]", where(path, table_key.source()), table, table));
    for (auto&& [key_key, value] : *entries) {
      std::string key(key_key.str());
      const KeySpec* spec = nullptr;
      std::string names;
      for (const auto& k : kKeys) {
        if (table != k.table) continue;
        if (key == k.key) spec = &k;
        names += names.empty() ? k.key : std::string(", ") + k.key;
      }
      if (!spec)
        return base::Error::invalid(fmt::format("{}: unknown key {}.{} ([{}] has {})", where(path, key_key.source()),
                                                table, key, table, names));
      if (std::string bad = spec->read(value, c); !bad.empty())
        return base::Error::invalid(fmt::format("{}: {}.{} {}", where(path, value.source()), table, key, bad));
      c.origin[table + "." + key] = fmt::format("{}:{}", path, key_key.source().begin.line);
    }
  }
  // Without a mode there is no sandbox for these to shape: asking for one is a mistake.
  if (!c.sandbox_mode) {
    const std::pair<const char*, bool> asked[] = {{"writable", !c.writable.empty()},
                                                  {"deny_read", !c.deny_read.empty()},
                                                  {"network", c.network.value_or(false)},
                                                  {"approval", c.approval != policy::ApprovalPolicy::kNever}};
    for (const auto& [k, set] : asked)
      if (set) return base::Error::invalid(fmt::format("{}: sandbox.{} needs sandbox.mode", c.origin["sandbox." + std::string(k)], k));
  }
  if (const char* env_root = std::getenv("UEXEC_WEB_ROOT"); env_root && *env_root) {
    c.web_root = env_root;
    c.origin["daemon.web_root"] = "environment (UEXEC_WEB_ROOT)";
  }
  return c;
}

base::Result<UserConfig> load_user_config() {
  std::string path = user_config_path();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return parse_user_config("", path);
    return base::Error::sys("read " + path);
  }
  // A config is small; one that is not (a device, a huge file) is refused, never read whole.
  constexpr std::size_t kMaxConfigBytes = 1u << 20;
  std::string text;
  char buf[16384];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && text.size() <= kMaxConfigBytes) text.append(buf, static_cast<std::size_t>(n));
  int err = errno;
  ::close(fd);
  if (n < 0) return base::Error::sys("read " + path, err);
  if (text.size() > kMaxConfigBytes) return base::Error::invalid(path + ": larger than 1 MiB; not a config file");
  return parse_user_config(text, path);
}

std::optional<UserConfig> load_user_config_or_say(const char* who) {
  auto c = load_user_config();
  if (!c) {
    std::fprintf(stderr, "%s: config %s\n", who, c.error().message().c_str());
    return std::nullopt;
  }
  return std::move(*c);
}

void ensure_config_dir() {
  if (std::getenv("UEXEC_CONFIG")) return;  // an explicit file: its directory is the user's business
  std::string dir = config_dir_of(user_config_path());
  if (dir.empty()) return;
  std::string parent = config_dir_of(dir);
  // ~/.config itself is made as the XDG spec asks (0700) when the home has none.
  if (!parent.empty() && ::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST)
    UEXEC_LOG(kDebug, "config directory {}: {}", parent, std::strerror(errno));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    UEXEC_LOG(kDebug, "config directory {}: {}", dir, std::strerror(errno));
}

std::vector<ConfigLine> describe(const UserConfig& config) {
  std::vector<ConfigLine> lines;
  for (const auto& k : kKeys) {
    std::string name = std::string(k.table) + "." + k.key;
    auto o = config.origin.find(name);
    lines.push_back({k.table, k.key, k.show(config), o == config.origin.end() ? "default" : o->second, k.help});
  }
  return lines;
}

std::string sample_config() {
  UserConfig defaults;
  std::string out =
      "# uexec's configuration: $XDG_CONFIG_HOME/uexec/config.toml (else ~/.config/uexec/config.toml,\n"
      "# or the file $UEXEC_CONFIG names). Every key is optional; the values below are the\n"
      "# defaults. A flag on the command line overrides its key; `uexec config` prints the\n"
      "# effective values and where each came from. An unknown key or a bad value is an error.\n";
  std::string table;
  for (const auto& line : describe(defaults)) {
    if (line.table != table) {
      table = line.table;
      out += "\n[" + table + "]\n";
    }
    out += "# " + line.help + "\n#" + line.key + " = " + line.value + "\n";
  }
  return out;
}

}  // namespace uexec::cli
