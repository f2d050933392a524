// process_table.h: the registry of the native protocol: every protocol session, the processes
// each one sees, and the tombstones of those that went (docs/protocol.md §2.1 and §5).
//
// What it decides: processIds are unique within a protocol session and names among live
// process/start processes (docs/protocol.md §4.1); a process/start process stays readable for
// exitedRetentionMs after `closed`, then is forgotten (the manager removes its Session) and
// leaves a tombstone; a detached session ends after its TTL, with every process it started;
// an agent session's view (exec/*) comes and goes with the AgentService's record.
//
//   add() ─► (ring wakes) on_change ─► ... closed ─► after_closed: retention timer
//         ─► forget(reason): polls dropped, manager remove(), tombstone ─► on_forgotten
//
// Tombstones: the last kTombstones forgotten processes answer "unknown process" with why they
// went ("exited", "killed"); older ones read "neverExisted".
// Loop thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rpc/exec_server_options.h"
#include "rpc/protocol_session.h"
#include "session/process_manager.h"
#include "session/tombstones.h"

namespace uexec::rpc {

class ProcessTable {
 public:
  ProcessTable(session::ProcessManager& pm, const ExecServerOptions& options);
  // Ends every process/start process (the manager SIGKILLs what still runs).
  ~ProcessTable();
  ProcessTable(const ProcessTable&) = delete;
  ProcessTable& operator=(const ProcessTable&) = delete;

  // A process's output, exit or close moved (its ring woke): set by the server.
  std::function<void(ProtocolProcess&)> on_change;
  // A process was forgotten (the server's shutdown may be complete).
  std::function<void()> on_forgotten;

  // A new protocol session with a fresh UUID, or with `id` (one taken over from an earlier
  // daemon; it must not be in use).
  ProtocolSession& new_session();
  ProtocolSession& new_session(const std::string& id);
  // Null when `id` names none.
  ProtocolSession* find_session(const std::string& id);
  // Null when `session` is null or has no process `id`.
  ProtocolProcess* find_process(ProtocolSession* session, const std::string& id);
  // The live process/start process named `name`, or null.
  ProtocolProcess* find_named(const std::string& name);
  std::map<std::string, std::unique_ptr<ProtocolSession>>& sessions() noexcept { return sessions_; }
  std::size_t processes() const;

  // A view of `of` as process `id` of `owner`, subscribed to its ring (on_change). `key` is
  // the manager's id of `of`; `agent`: the AgentService owns it.
  ProtocolProcess& add(ProtocolSession& owner, std::string id, std::string key, session::Session& of, bool agent);
  // `p` closed: a process/start process is forgotten after exitedRetentionMs.
  void after_closed(ProtocolProcess& p);
  // Destroys `p`'s view, its polls, and (process/start) its Session, leaving a tombstone.
  void forget(ProtocolProcess& p, const char* reason);
  // Drops the view of agent session `agent_id` (the AgentService forgets it).
  void drop_agent_view(long agent_id);

  // `session`'s connection went: its polls and approvals go; under a daemon it ends after its
  // TTL unless it keeps its processes forever.
  void detach(ProtocolSession& session);
  // Ends `id`: kills its process/start processes and lets go of everything it watched.
  void drop_session(const std::string& id);

  // Why "<sessionId>/<processId>" went ("exited", "killed"), or "neverExisted".
  std::string tombstone_reason(const std::string& key) const;

  // At the process limit: forgets the process/start process that closed first ("pruned"), so
  // that retention never refuses a start. False when none has closed.
  bool forget_oldest_closed();

  // The last kRecentEnds forgotten process/start processes, oldest first, with their ids (the
  // tombstones keep hashes only): for `process/list`'s `ended`, so that a client can say when
  // and why an id it still shows went.
  struct RecentEnd {
    std::string session_id, process_id;
    const char* reason;
    std::chrono::system_clock::time_point at;
  };
  const std::deque<RecentEnd>& recent_ends() const noexcept { return recent_ends_; }

 private:
  void add_tombstone(const std::string& key, const char* reason);
  void note_end(const std::string& session_id, const std::string& process_id, const char* reason);
  void drop_polls(const ProtocolProcess& p);

  session::ProcessManager& pm_;
  const ExecServerOptions& opts_;
  std::map<std::string, std::unique_ptr<ProtocolSession>> sessions_;
  // The last kTombstones removed processes, keyed by "<sessionId>/<processId>", reasons only
  // (session::Tombstones: one store shape for both front doors, laid out once).
  static constexpr std::size_t kTombstones = 4096;
  session::Tombstones tombstones_{kTombstones};
  static constexpr std::size_t kRecentEnds = 256;
  std::deque<RecentEnd> recent_ends_;
};

}  // namespace uexec::rpc
