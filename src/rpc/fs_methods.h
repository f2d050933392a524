// fs_methods.h: the fs/* method family (docs/protocol.md §3.9): the file operations a client
// that uses uexec as its whole execution environment needs (Codex's remote environments
// read AGENTS.md, find .git and apply patches through them).
//
// A call decodes its params (paths as file:// URIs or absolute paths, never with a NUL byte;
// `sandbox` read exactly as process/start reads it), then runs perform_fs_op (fs_ops.h):
//   without a sandbox (absent, null, disabled, external)
//       on libuv's thread pool: the loop never waits on a disk; the reply comes back on it
//   with a sandbox
//       in `uexec fs-helper`, started through the ProcessManager with that sandbox, so the
//       operation meets the very policy a process/start with it would (writable roots,
//       carve-outs, deny-read, hidden paths); the operation goes in on its stdin and the
//       outcome comes back on its stdout, both one JSON document. A refusal the sandbox
//       caused (EACCES, EPERM, EROFS) says so in the error's data (kind sandboxDenied).
// A call whose connection went away meanwhile is answered to no one. At most
// kMaxCallsInFlight calls run at once per server; more are refused (limitReached).
// Loop thread only (the thread pool runs perform_fs_op and nothing else).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loop/timer.h"
#include "rpc/connection.h"
#include "rpc/exec_server_options.h"
#include "session/process_manager.h"

namespace uexec::rpc {

class FsMethods {
 public:
  static constexpr std::size_t kMaxCallsInFlight = 64;

  // `server_env` and `cwd` are what a sandboxed call's helper gets, as a process/start without
  // env or cwd would.
  FsMethods(session::ProcessManager& pm, const ExecServerOptions& options, const std::vector<std::string>& server_env,
            const std::string& cwd);
  ~FsMethods();
  FsMethods(const FsMethods&) = delete;
  FsMethods& operator=(const FsMethods&) = delete;

  void call(Connection& c, const nlohmann::json& id, const std::string& method, const nlohmann::json& params);

 private:
  struct Call;
  void run_on_thread_pool(std::unique_ptr<Call> call);
  void run_in_sandbox(std::unique_ptr<Call> call, const policy::SandboxAttempt& attempt, const std::string& cwd);
  void on_helper_output(std::uint64_t n);
  void finish(Call& call, nlohmann::json outcome);
  void sweep();

  session::ProcessManager& pm_;
  const ExecServerOptions& opts_;
  const std::vector<std::string>& env_;
  const std::string& cwd_;
  std::size_t in_flight_ = 0;
  std::uint64_t next_helper_ = 1;
  std::map<std::uint64_t, std::unique_ptr<Call>> helpers_;  // sandboxed calls, by helper number
  loop::Timer sweep_;                                        // removes finished helpers, outside their callbacks
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // thread-pool replies check it
};

}  // namespace uexec::rpc
