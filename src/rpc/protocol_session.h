// protocol_session.h: one protocol session (docs/protocol.md §2.1): the namespace of processIds
// a connection works in, with everything that must survive the connection.
//
// `initialize` makes one (or resumes one, within its TTL, under `uexec serve`); the
// ProcessTable owns it. Its connection may come and go: while detached its processes keep
// running, their output is retained, its long polls are gone and its approvals were denied.
// Not to be confused with session::Session (one child) or an agent session (exec/*).
// Loop thread only.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "loop/timer.h"
#include "policy/orchestrator.h"
#include "rpc/approval_broker.h"
#include "rpc/long_polls.h"
#include "rpc/protocol_process.h"

namespace uexec::rpc {

class Connection;

struct ProtocolSession {
  ProtocolSession(loop::Loop& loop, std::string session_id)
      : id(std::move(session_id)), id_json(nlohmann::json(id).dump()), polls(loop) {}
  ProtocolSession(const ProtocolSession&) = delete;
  ProtocolSession& operator=(const ProtocolSession&) = delete;

  const std::string id;
  const std::string id_json;  // `id` as a JSON string, for hand-built notifications
  std::map<std::string, std::unique_ptr<ProtocolProcess>> processes;  // by processId
  Connection* connection = nullptr;  // null while detached
  std::string client_name;
  std::unique_ptr<loop::Timer> ttl;  // running while detached
  long ttl_ms = -2;                  // -2: the server default
  bool keep_forever = false;         // detachedTtlMs -1 under `uexec serve`: until killed
  LongPolls polls;
  // The orchestrator of this session's exec/* calls (its approved-for-session cache lives as
  // long as the session), and the approval/requests awaiting an answer.
  std::shared_ptr<policy::ToolOrchestrator> orchestrator;
  PendingApprovals approvals;
};

}  // namespace uexec::rpc
