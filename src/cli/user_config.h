// user_config.h: what a user sets once, in $XDG_CONFIG_HOME/uexec/config.toml.
//
// The file is TOML (read with toml++), every key optional, in four tables: [daemon] (the
// WebSocket address, the page, how long finished processes stay), [sessions] (the output each
// session retains), [sandbox] (the agent tools' default sandbox and approval policy) and
// [agent] (the agent tools' environment preset, output budget and result shape). The long-
// running front doors (`serve`, `exec-server`, `mcp`) start from it; a flag on their command
// line overrides it, key by key (a list flag such as --writable replaces the file's list).
// Precedence: flag, then environment (UEXEC_WEB_ROOT), then the file, then the default.
//
// Reading is strict, as a person who mistyped a key expects: an unknown table or key, a value
// of the wrong type or out of range is an error naming the file, line and column, and the
// commands that read the file refuse to start (exit 2) rather than run with half of it.
// A missing file is all defaults. `uexec config` prints the effective values and where each
// came from; `uexec config --sample` prints a commented file of the defaults (the package
// installs it as an example). The key table in user_config.cc is the one place that names a
// key, its default, its check and its help line.
//
// The file is never writable from a sandbox (policy/profile.cc makes the directory read-only in
// every backend); ensure_config_dir() creates the directory before a front door starts its
// first sandbox, so a sandbox whose writable roots cover ~/.config cannot create the file.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/result.h"
#include "policy/orchestrator.h"
#include "policy/profile.h"
#include "policy/sandbox_attempt.h"

namespace uexec::cli {

struct UserConfig {
  // [daemon]: `uexec serve`.
  std::string ws = "127.0.0.1:8022";  // HOST:PORT; empty: no WebSocket listener ("off")
  bool web = true;                    // serve the web terminal on the WebSocket port
  std::string web_root;               // empty: the default page (ws_server.h)
  std::optional<std::chrono::milliseconds> retain_exited = std::chrono::hours(24);  // nullopt: forever
  bool journal = false;                      // keep each process's output on disk (journal/)
  std::size_t journal_size = 8u << 20;       // per process
  std::size_t journal_max = 256u << 20;      // every journal together
  // [sessions]: every front door's sessions.
  std::size_t ring_bytes = base::Config{}.retain_bytes;  // output retained per session
  // [sandbox]: the agent tools' default sandbox; no mode: none.
  std::optional<policy::SandboxMode> sandbox_mode;
  policy::Backend backend = policy::Backend::kAuto;
  std::vector<std::string> writable, deny_read;
  std::optional<bool> network;  // nullopt: the mode's own
  policy::ApprovalPolicy approval = policy::ApprovalPolicy::kNever;
  // [agent]: the agent tools.
  bool env_preset = true;          // NO_COLOR, TERM=dumb, pagers to cat, … (agent/agent_env.h)
  long max_output_tokens = base::AgentConfig{}.max_output_tokens;  // a call's default output budget
  bool structured_content = false; // `uexec mcp`: results also carry structuredContent

  // Where each key that did not keep its default came from, by "table.key": "PATH:LINE" or
  // "environment (NAME)".
  std::map<std::string, std::string> origin;
};

// The last lines of the --help of each command that reads the file.
inline constexpr const char* kConfigNote =
    "  Defaults come from the config file (~/.config/uexec/config.toml; `uexec config` shows\n"
    "  the effective values and where each came from); a flag overrides its key.\n";

// The file uexec reads: $UEXEC_CONFIG, else $XDG_CONFIG_HOME/uexec/config.toml (when it is
// absolute), else <home>/.config/uexec/config.toml.
std::string user_config_path();

// Reads user_config_path(); a missing file gives the defaults. kInvalidArgument "PATH:LINE:COL:
// what" for a file that is not valid TOML or holds an unknown key or a bad value; kIo when it
// cannot be read.
[[nodiscard]] base::Result<UserConfig> load_user_config();
// The same from TOML text (tests); `path` only names it in errors and origins.
[[nodiscard]] base::Result<UserConfig> parse_user_config(const std::string& text, const std::string& path);

// load_user_config() for a command: the config, or nullopt after printing "WHO: config …" on
// stderr.
std::optional<UserConfig> load_user_config_or_say(const char* who);

// Creates the config file's directory (0700) when it is missing, so that every sandbox finds it
// and keeps it read-only. Failing is harmless (said at debug level): the file then does not exist.
void ensure_config_dir();

// One key for `uexec config`: its name, the effective value as TOML, where it came from
// ("default" or an origin), and its help line.
struct ConfigLine {
  std::string table, key, value, origin, help;
};
std::vector<ConfigLine> describe(const UserConfig& config);

// The sample file: every key commented out at its default, with its help line.
std::string sample_config();

}  // namespace uexec::cli
