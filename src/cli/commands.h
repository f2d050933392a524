// commands.h: the `uexec` subcommands. main.cc picks one and returns its exit code. Their
// flags are read with Flags (flags.h); the long-running front doors (`serve`,
// `exec-server`, `mcp`) run on a Host (host.h), `run` and `sandbox` on a loop and manager of
// their own for the one command, and the daemon's clients over its socket.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace uexec::cli {

// Exit codes of uexec itself, following env(1): 125 for uexec's own failure, 126 when the
// command was found but could not run, 127 when it was not found; 2 for bad usage; 1 when
// uexec refuses on purpose (a daemon already runs on that socket, its port is taken).
inline constexpr int kExitRefused = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 125;
inline constexpr int kExitCannotRun = 126;
inline constexpr int kExitNotFound = 127;

// The exit code when a command could not be started (as env(1)): a failed exec is 127 when
// nothing was found and 126 when it was found but could not run; any other failed step
// (chdir, the PTY, the sandbox) is uexec's own (125). `run` and `start` both answer with it.
int exit_code_for_spawn_error(const base::Error& err);

// `uexec run [--tty] [--cwd DIR] [--env K=V]... [--size ROWSxCOLS] -- CMD ARGS...`
int cmd_run(const std::vector<std::string>& args);
// uexec sandbox: run under a sandbox policy on this terminal (cmd_run.cc).
int cmd_sandbox(const std::vector<std::string>& args);
// `uexec exec-server --listen stdio`: the Codex exec-server drop-in.
int cmd_exec_server(const std::vector<std::string>& args);
// `uexec serve`: the daemon on a Unix socket.
int cmd_serve(const std::vector<std::string>& args);
// The daemon's CLI clients: ls, start, send, kill, logs, attach, stop, url.
int cmd_client(const std::string& cmd, const std::vector<std::string>& args);
// Where the clients find the daemon: $UEXEC_SOCKET, else the default socket path.
std::string client_socket_path();
// `uexec mcp`: the MCP server on stdio.
int cmd_mcp(const std::vector<std::string>& args);
// `uexec fs-helper`: one file operation inside a sandbox, for the daemon (rpc/fs_methods.h).
int cmd_fs_helper(const std::vector<std::string>& args);
// `uexec config`: the config file's effective settings and their origins (user_config.h).
int cmd_config(const std::vector<std::string>& args);
// `uexec demo`: an interactive login shell through the session core (tools/dev serve).
int cmd_demo(const std::vector<std::string>& args);

}  // namespace uexec::cli
