// connection.h: one client of the native protocol (docs/protocol.md §1, §2 and §7), over whatever
// transport carries it (stdio, a Unix socket, a WebSocket: each hands lines to handle_line
// and gives a Peer to write with). Known to front doors as ExecServer::Connection.
//
//   handle_line ─► decode_json_rpc_line (native dialect) ─► the method table (method_table.h)
//   every message out ─► out() ─► Peer::send, then the watermark check
//
// It holds what belongs to the connection and not to its protocol session: the handshake
// (initialize replied, initialized), the client's capabilities (extensions, approvals), its
// exec/* calls still waiting, and its outbound flow control: above the high watermark it
// stops reading requests (Peer::set_reading) and, after `stall_timeout` there, closes the
// peer; below the low watermark it reads again and the OutputPump resumes its pushes. Its
// destruction detaches its protocol session (ProcessTable::detach).
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/agent_service.h"
#include "loop/timer.h"
#include "rpc/missing_watch.h"

namespace uexec::rpc {

class ExecServer;
struct ProtocolSession;

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

class Connection {
 public:
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One message from the client (a line, a WebSocket text message).
  void handle_line(std::string_view line);
  // A message over `limit` bytes was dropped: answers messageTooLarge.
  void handle_oversize(std::size_t limit);

  // ---- for the method handlers ----
  void reply(const nlohmann::json& id, nlohmann::json result);
  void error(const nlohmann::json& id, int code, const std::string& message, nlohmann::json data = nullptr);
  void notify(const std::string& method, nlohmann::json params);
  void send_raw(std::string line);  // an already-encoded message
  // False above the high watermark: pushes wait for resume_when_drained.
  bool writable() const;
  // Pauses reading (and starts the stall clock) until the queue is below the low watermark.
  void resume_when_drained();

  // The protocol session it works in; null until initialize.
  ProtocolSession* session() const noexcept { return session_; }
  // Initialize's outcome: the session, the client's name and capabilities.
  void attach(ProtocolSession& session, std::string client_name, bool extensions, bool approvals);
  bool initialize_replied() const noexcept { return session_ != nullptr; }
  bool initialized() const noexcept { return initialized_; }
  bool extensions() const noexcept { return extensions_; }  // the client asked for uexec's extensions
  bool approvals() const noexcept { return approvals_; }    // the client answers approval/request
  // exec/* calls still waiting: cancelled if the connection goes first (their replies would
  // otherwise reach a destroyed connection).
  std::set<agent::CallId>& exec_calls() noexcept { return exec_calls_; }
  // True until the connection is destroyed: for replies that come back later (fs_methods.h).
  std::shared_ptr<const bool> liveness() const { return alive_; }
  // fs/watchMissing: the connection's one watch (missing_watch.h), and the newest watchId it
  // asked for (an older or equal one is refused and leaves the watch alone).
  std::unique_ptr<MissingWatch>& missing_watch() noexcept { return missing_watch_; }
  std::uint64_t& missing_watch_id() noexcept { return missing_watch_id_; }

 private:
  friend class ExecServer;
  Connection(ExecServer& server, Peer peer) : server_(server), peer_(std::move(peer)) {}

  void out(std::string line);  // every message goes here: sends, then checks the queue

  ExecServer& server_;
  Peer peer_;
  ProtocolSession* session_ = nullptr;
  bool initialized_ = false;
  bool extensions_ = false;
  bool approvals_ = false;
  bool waiting_for_drain_ = false;  // above the high watermark: reading paused, stall clock on
  std::unique_ptr<loop::Timer> stall_;
  std::set<agent::CallId> exec_calls_;
  std::string client_name_;
  std::unique_ptr<MissingWatch> missing_watch_;
  std::uint64_t missing_watch_id_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace uexec::rpc
