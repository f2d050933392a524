// exec_server.h: the native JSON-RPC protocol (docs/protocol.md): Codex exec-server's process/*
// and environment/* methods, wire-compatible, plus uexec's extensions and exec/*.
//
// One ExecServer serves every connection of a front door (`exec-server --listen stdio`: one;
// `uexec serve`: many). A connection is attached to a *protocol session*, a namespace of
// processIds with its subscriptions and writeId memory. On a socket a closed connection
// detaches its session (processes keep running, output is retained) and
// `initialize{resumeSessionId}` re-attaches it within the TTL; stdio has no resume.
//
// The server is the wiring of its parts, each its own type (docs/architecture.md §3):
//
//   Connection ─► MethodTable ─► the handlers, by family:
//       SessionMethods (initialize, environment/*)   ProcessLifecycleMethods (start, list)
//       ProcessControlMethods (write, signal, ...)   ProcessOutputMethods (read, wait, snapshot)
//       SharingMethods (subscribe, grant)            ExecMethods (exec/*)
//       FsMethods (fs/*: files, on the thread pool or in a sandboxed helper)
//   ProcessTable: protocol sessions, their processes, tombstones, retention
//   OutputPump: output and ending notifications to subscribers, flow control, read replay
//   ApprovalBroker: approval/request to clients
//
// Notifications for a process go to its subscribers in seq order: output chunks (one read(2)
// each, never split), `exited` (which may precede trailing output), `closed` last. Above a
// connection's high watermark pushes pause (the child is never blocked for it) and resume
// below the low one, with a `process/gap` for anything evicted meanwhile; a connection above
// it for `stall_timeout` is closed, detaching its session. No request blocks the loop:
// long polls are waiters woken by the ring, at most `max_waits` per connection, and a process
// has at most `max_subscribers` subscribing sessions; past either cap the request gets
// `limitReached` at once.
// Loop thread only. This is the only JSON-aware layer besides the MCP server.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent_service.h"
#include "loop/timer.h"
#include "rpc/approval_broker.h"
#include "rpc/connection.h"
#include "rpc/exec_methods.h"
#include "rpc/exec_server_options.h"
#include "rpc/fs_methods.h"
#include "rpc/method_table.h"
#include "rpc/output_pump.h"
#include "rpc/process_control_methods.h"
#include "rpc/process_lifecycle_methods.h"
#include "rpc/process_output_methods.h"
#include "rpc/process_table.h"
#include "rpc/session_methods.h"
#include "rpc/sharing_methods.h"
#include "session/process_manager.h"

namespace uexec::rpc {

class ExecServer {
 public:
  using Connection = rpc::Connection;

  // `exec` may be null (no exec/* methods); `server_env` and `cwd` are what a process/start
  // without env or cwd gets.
  ExecServer(session::ProcessManager& pm, agent::AgentService* exec, std::vector<std::string> server_env,
             std::string cwd, ExecServerOptions options);
  ~ExecServer();
  ExecServer(const ExecServer&) = delete;
  ExecServer& operator=(const ExecServer&) = delete;

  std::unique_ptr<Connection> connect(Peer peer);
  // Kills (kill_now) or terminates every process of every session; `done` runs when all are
  // finished, or after the grace.
  void shutdown(bool kill_now, std::function<void()> done);
  std::size_t processes() const { return table_.processes(); }

  // What a holder keeps of `s`'s owner, to hand back with it (holder/holder_link.h): its
  // protocol session and process ids, that session's client and detach rules, the process's
  // metadata; {"agent": true} for an agent session.
  nlohmann::json owner_of(const session::Session& s);
  // Takes over `s`, which an earlier daemon ran for `owner` (owner_of's): an agent session goes
  // to the AgentService; a process goes back to its protocol session (made again, detached,
  // when it is not there), so that a client resuming it, `uexec ls` and the rest find it.
  [[nodiscard]] base::Result<void> adopt(session::Session& s, const nlohmann::json& owner);

 private:
  friend class rpc::Connection;

  // A process's ring woke: push, wake its long polls, start its retention once closed.
  void on_process_change(ProtocolProcess& p);
  MethodTable method_table();
  void check_shutdown();
  // Protocol session `sid`, made (detached, with the client and detach rules in `facts`) when
  // an earlier daemon had it and this one does not (adopt).
  ProtocolSession& session_for(const std::string& sid, const nlohmann::json& facts);

  session::ProcessManager& pm_;
  const std::vector<std::string> env_;
  const std::string cwd_;
  const ExecServerOptions opts_;
  ProcessTable table_;
  OutputPump pump_;
  ApprovalBroker approvals_;
  SharingMethods sharing_;
  SessionMethods session_methods_;
  ProcessLifecycleMethods lifecycle_;
  ProcessControlMethods control_;
  ProcessOutputMethods output_;
  ExecMethods exec_methods_;
  FsMethods fs_;
  const MethodTable methods_;
  std::function<void()> shutdown_done_;
  std::chrono::steady_clock::time_point shutdown_deadline_{};
  std::unique_ptr<loop::Timer> shutdown_timer_;
};

}  // namespace uexec::rpc
