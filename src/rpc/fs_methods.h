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
// environmentConfig/read (environment_config.h) is one more such operation; fs/watchMissing's
// existence checks are too, and its inotify watches then belong to the connection
// (missing_watch.h). A call whose connection went away meanwhile is answered to no one. At most
// kMaxCallsInFlight calls, holding at most kMaxWriteBytesInFlight of write data, are accepted
// at once per server; past either a call is refused (limitReached). Of those, at most
// kMaxHeavyAtOnce reads and copies run at once, the others waiting in order, so the file
// contents held are bounded too (2 x 64 MiB and their base64).
// Loop thread only (the thread pool runs perform_fs_op and nothing else).
#pragma once

#include <cstdint>
#include <deque>
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
  static constexpr std::size_t kMaxCallsInFlight = 1024;
  // The fs/writeFile data held by accepted calls; past it a write is refused unless it is alone.
  static constexpr std::size_t kMaxWriteBytesInFlight = 64u << 20;
  // fs/readFile and fs/copy hold up to a file's size (and its base64) each: at most this many
  // run at once, the others wait their turn in order.
  static constexpr std::size_t kMaxHeavyAtOnce = 2;

  // `server_env` and `cwd` are what a sandboxed call's helper gets, as a process/start without
  // env or cwd would.
  FsMethods(session::ProcessManager& pm, const ExecServerOptions& options, const std::vector<std::string>& server_env,
            const std::string& cwd);
  ~FsMethods();
  FsMethods(const FsMethods&) = delete;
  FsMethods& operator=(const FsMethods&) = delete;

  void call(Connection& c, const nlohmann::json& id, const std::string& method, const nlohmann::json& params);
  // No call is running (a shutdown waits for this, so that answers go out first).
  bool idle() const noexcept { return in_flight_ == 0; }

 private:
  struct Call;
  void admit(std::unique_ptr<Call> call);  // runs it now, or queues a heavy one
  void run_on_thread_pool(std::unique_ptr<Call> call);
  void run_in_sandbox(std::unique_ptr<Call> call);
  void on_helper_output(std::uint64_t n);
  void complete(Call& call, nlohmann::json outcome);  // the call's end: frees its place, then replies
  void reply(Call& call, nlohmann::json outcome);
  // fs/watchMissing: installs the connection's watch from the thread pool's plan; false when
  // the plan says not to watch, a newer watchId took over, or inotify refused.
  bool start_watch(Call& call, const nlohmann::json& plan);
  void sweep();

  session::ProcessManager& pm_;
  const ExecServerOptions& opts_;
  const std::vector<std::string>& env_;
  const std::string& cwd_;
  std::size_t in_flight_ = 0;     // accepted and not yet answered, waiting ones included
  std::size_t heavy_running_ = 0;
  std::size_t write_bytes_ = 0;   // dataBase64 bytes of accepted writes
  std::deque<std::unique_ptr<Call>> waiting_;
  std::uint64_t next_helper_ = 1;
  std::map<std::uint64_t, std::unique_ptr<Call>> helpers_;  // sandboxed calls, by helper number
  loop::Timer sweep_;                                        // removes finished helpers, outside their callbacks
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // thread-pool replies check it
};

}  // namespace uexec::rpc
