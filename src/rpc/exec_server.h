// exec_server.h: the native JSON-RPC protocol (docs/protocol.md): Codex exec-server's process/*
// and environment/* methods, wire-compatible, plus uexec's extensions and exec/*.
//
// One ExecServer serves every connection of a front door (`exec-server --listen stdio`: one;
// `uexec serve`: many). A connection is attached to a *session*, a namespace of processIds
// with its subscriptions and writeId memory. On a socket a closed connection detaches its
// session (processes keep running, output is retained) and `initialize{resumeSessionId}`
// re-attaches it within the TTL; stdio has no resume.
//
// Notifications for a process go to its session's connection in seq order: output chunks
// (one read(2) each, never split), `exited` (which may precede trailing output), `closed`
// last. Each subscription keeps its own cursor into the process's OutputRing; above the
// connection's high watermark pushes pause (the child is never blocked for it) and resume
// below the low one, with a `process/gap` for anything evicted meanwhile. Above the high
// watermark the connection's requests are not read either (Peer::set_reading), which bounds
// the replies it can queue; a connection above it for `stall_timeout` is closed (Peer::close),
// detaching its session. No request blocks the loop: process/read and process/wait
// long-polls are waiters woken by the ring, at most `max_waits` per connection, and a process
// has at most `max_subscribers` subscribing sessions; past either cap the request gets
// `limitReached` at once.
// Loop thread only. This is the only JSON-aware layer besides the MCP server.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/exec_service.h"
#include "loop/timer.h"
#include "rpc/agent_tools.h"
#include "session/process_manager.h"

namespace uexec::rpc {

using nlohmann::json;

struct ExecServerOptions {
  bool daemon = false;                                // sockets: sessions outlive connections
  std::chrono::milliseconds detached_ttl{10000};
  std::chrono::milliseconds exited_retention{30000};
  std::size_t high_watermark = 4u << 20, low_watermark = 1u << 20;
  std::size_t read_max_bytes = 4u << 20;
  std::size_t max_processes = 4096;
  std::size_t max_subscribers = 64;                   // subscribing sessions per process
  std::size_t max_waits = 1024;                       // pending long polls per connection
  std::chrono::milliseconds stall_timeout{60000};     // stallTimeoutMs; 0: never close
  std::chrono::milliseconds approval_timeout{600000};  // approvalTimeoutMs: then denied
};

// How a connection writes: one JSON message per call, and how much is queued. The last two
// are optional: a transport without them is never paused or closed for its queue.
struct Peer {
  std::function<void(std::string)> send;
  std::function<std::size_t()> queued;
  std::function<void(std::size_t, std::function<void()>)> when_below;
  // Stops (false) or resumes (true) reading the peer's requests; lines already read wait too.
  std::function<void(bool)> set_reading = nullptr;
  // Closes the transport; may destroy the Connection before it returns.
  std::function<void()> close = nullptr;
};

class ExecServer {
 public:
  class Connection;

  ExecServer(session::ProcessManager& pm, agent::ExecService* exec, std::vector<std::string> server_env,
             std::string cwd, ExecServerOptions options);
  ~ExecServer();
  ExecServer(const ExecServer&) = delete;
  ExecServer& operator=(const ExecServer&) = delete;

  std::unique_ptr<Connection> connect(Peer peer);
  // Kills (kill_now) or terminates every process of every session; `done` runs when all are
  // finished, or after the grace.
  void shutdown(bool kill_now, std::function<void()> done);
  std::size_t processes() const;

 private:
  struct Process;
  struct Session;
  struct SubState;
  struct Waiter;
  friend class Connection;

  Session* new_session();
  Session* find_session(const std::string& id);
  Process* find_process(Session* s, const std::string& id);
  void push(Process& p);
  void push_to(Process& p, Session& to, SubState& st);
  void wake_waiters(Process& p);
  void after_closed(Process& p);
  void forget(Process& p, const char* reason);
  void drop_session(const std::string& id);
  void add_tombstone(const std::string& key, const char* reason);
  std::string tombstone_reason(const std::string& key) const;
  policy::Approver approver(const std::string& session_id);
  void adopt_agent_session(long id, std::uint64_t origin);
  void drop_agent_session(long id);
  void check_shutdown();

  session::ProcessManager& pm_;
  agent::ExecService* exec_;
  std::unique_ptr<AgentTools> tools_;
  std::vector<std::string> env_;
  std::string cwd_;
  ExecServerOptions opts_;
  std::map<std::string, std::unique_ptr<Session>> sessions_;
  // The last kTombstones removed processes: a hash of "<sessionId>/<processId>" and why (a
  // string literal), in a ring allocated once. A map of strings would scatter thousands of
  // small long-lived blocks over the heap, each pinning a page malloc_trim cannot give back.
  struct Tombstone {
    std::size_t key_hash = 0;
    const char* reason = nullptr;  // nullptr: an empty slot
  };
  static constexpr std::size_t kTombstones = 4096;
  std::vector<Tombstone> tombstones_;
  std::size_t tombstone_next_ = 0;
  std::uint64_t next_waiter_ = 1;
  std::function<void()> shutdown_done_;
  std::chrono::steady_clock::time_point shutdown_deadline_{};
  std::unique_ptr<loop::Timer> shutdown_timer_;
  Session* exec_caller_ = nullptr;  // the session whose exec/* call is running right now
};

class ExecServer::Connection {
 public:
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void handle_line(std::string_view line);
  void handle_oversize(std::size_t limit);

 private:
  friend class ExecServer;
  Connection(ExecServer& server, Peer peer) : server_(server), peer_(std::move(peer)) {}

  void request(const json& id, const std::string& method, const json& params);
  void reply(const json& id, json result);
  void error(const json& id, int code, const std::string& message, json data = nullptr);
  void notify(const std::string& method, json params);
  void send_raw(std::string line);  // an already-encoded message
  void out(std::string line);       // every message goes here: sends, then checks the queue
  bool writable() const;
  void resume_when_drained();
  bool waits_full(const json& id);  // true (and limitReached sent) at max_waits long polls

  void m_initialize(const json& id, const json& params);
  void m_start(const json& id, const json& params);
  void m_read(const json& id, const json& params);
  void m_write(const json& id, const json& params);
  void m_signal(const json& id, const json& params);
  void m_terminate(const json& id, const json& params);
  void m_resize(const json& id, const json& params);
  void m_close_stdin(const json& id, const json& params);
  void m_list(const json& id, const json& params);
  void m_subscribe(const json& id, const json& params, bool on);
  void m_wait(const json& id, const json& params);
  void m_snapshot(const json& id, const json& params);
  void m_grant(const json& id, const json& params);
  bool may_control(const json& id, Process& p, const char* what, bool input);
  void m_exec(const json& id, const std::string& tool, const json& params);
  void on_response(const json& msg);
  json environment_info() const;
  json read_result(Process& p, std::uint64_t after_seq, std::size_t max_bytes) const;
  Process* process_or_error(const json& id, const json& params);
  Session* target_session(const json& params);

  ExecServer& server_;
  Peer peer_;
  Session* session_ = nullptr;
  bool initialize_replied_ = false;
  bool initialized_ = false;
  bool extensions_ = false;
  bool approvals_ = false;  // the client answers approval/request
  bool waiting_for_drain_ = false;  // above the high watermark: reading paused, stall clock on
  std::unique_ptr<loop::Timer> stall_;
  // exec/* calls still waiting: cancelled if the connection goes first (their replies
  // would otherwise reach a destroyed connection).
  std::set<std::uint64_t> exec_calls_;
  std::string client_name_;
};

}  // namespace uexec::rpc
