// environment_config.h: environmentConfig/read (Codex exec-server 0.169.0; docs/protocol.md
// §3.10): the parts of Codex's config that a client asks for, as the executor's files say them.
//
// Codex runs its MCP servers on the executor: right after initialize it asks for the
// `mcp_servers` keys of the executor's config, layer by layer, lowest precedence first. The
// layers: the user's `$CODEX_HOME/config.toml` (default ~/.codex), then, when the project is
// trusted (`[projects."<dir>"] trust_level = "trusted"` in the user's file, for the project
// root or the cwd), each `<dir>/.codex/config.toml` from the project root (the nearest
// ancestor with a `.git`, else the cwd itself) down to the cwd. Each layer's `toml` holds
// only the selected keys, re-serialized; a layer with none of them is left out. A key path
// that runs into a value before its end selects that value (as Codex does). A missing file is
// no layer, not an error; a file that is not TOML is -32603 "failed to load executor-local
// config: PATH:LINE:COL: what". uexec reads no requirements files (Codex's system-wide
// requirements): that stack is always empty.
//
// Blocking (it reads files): runs where the fs/* operations run (fs_methods.h), never on the
// loop thread. Pure otherwise: the environment comes in the query.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace uexec::rpc {

struct EnvironmentConfigQuery {
  std::string cwd;                                        // native, absolute
  std::vector<std::vector<std::string>> config_paths, requirements_paths;
  std::string codex_home, home, hostname;                 // native paths, the host name
};

// The query as an fs operation ({"method":"environmentConfig/read", …}: fs_ops.h) and back.
nlohmann::json environment_config_op(const EnvironmentConfigQuery& q);
EnvironmentConfigQuery environment_config_query(const nlohmann::json& op);

// {"result": {userHomeDir, codexHomeDir, hostname, config, requirements}} or {"error": …}.
nlohmann::json read_environment_config(const EnvironmentConfigQuery& q) noexcept;

}  // namespace uexec::rpc
