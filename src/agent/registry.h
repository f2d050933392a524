// registry.h: every agent session of one AgentService, by id, through its whole lifecycle, and
// the tombstones of those whose record went (docs/agent.md §5.1, §5.3).
//
//   allocate_id ──► add: spawned, grace (early_exit_grace) ──► counted (max_sessions; from
//   warn_sessions on each response warns; over the cap the least recently used exited one,
//   else the least recently used, is pruned, never one of the protected_recent newest)
//      │ exit inside the grace: never counted
//   mark_ended (exit delivered, pruned, replaced) ──► readable for ended_linger, swept once
//   no call is queued on it ──► tombstone (tombstones_max), the Session removed
//
// Ids are random in [1000, 100000), or 1000, 1001, … with AgentConfig::deterministic_ids, and
// never reissued while a record or a tombstone holds them, nor when an earlier daemon's session
// in the journal has them (reserve_journaled); an issued set (one bit per id) tells "never
// started" from "forgotten". Names are the Session's (Session::name), unique
// among the live records. The registry knows no calls: it asks `has_calls` before sweeping a
// record and tells `on_counted` and `before_forget`, and the service wires those to its call
// queue. Loop thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_session.h"
#include "base/config.h"
#include "base/result.h"
#include "loop/timer.h"
#include "session/process_manager.h"
#include "session/tombstones.h"

namespace uexec::agent {

class SessionRegistry {
 public:
  // The notes an agent tombstone keeps, in the order the store packs them (the text of an
  // unknown id first, then the columns of list_sessions).
  enum Note : std::size_t { kName, kKilledBy, kDenial, kLastOutput, kCommand, kCwd };
  static constexpr std::size_t kTombstoneNoteBytes = 2048;

  SessionRegistry(session::ProcessManager& pm, const base::AgentConfig& cfg);
  ~SessionRegistry() { forget_all(); }
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  // A fresh id, marked issued; release_id gives it back when the spawn failed.
  long allocate_id();
  void release_id(long id);
  // Ids an earlier daemon gave sessions whose output the journal keeps: never issued here, so
  // a read_output of one reaches the journal, not a new session (out-of-range ids ignored).
  void reserve_journaled(const std::vector<long>& ids);
  bool journaled(long id) const;
  // This registry gave `id` to a session at some point.
  bool issued(long id) const;

  // Records the session `session` (already started by the manager under `id`), and starts
  // its grace.
  AgentSession& add(long id, session::Session& session, CallId origin);
  // The record of `id`, live or ended; nullptr once it is a tombstone (or never was).
  AgentSession* find(long id);
  // The live (not ended) record named `name`, or nullptr.
  AgentSession* find_named(const std::string& name);
  // The record a tool names by id or by name (live only unless `allow_ended`); errors are
  // worded for `tool` ("write_stdin failed: Unknown process id N (…)").
  [[nodiscard]] base::Result<AgentSession*> find_target(const std::optional<long>& id,
                                                        const std::optional<std::string>& name, const char* tool,
                                                        bool allow_ended);
  // Forgets every record (before_forget) and removes its Session from the manager.
  void forget_all();
  // Every record, by id.
  const std::map<long, std::unique_ptr<AgentSession>>& records() const noexcept { return records_; }
  // Counted and not ended.
  std::size_t live_count() const noexcept;

  // Ends `a` for the agent (`reason`: a string literal): readable for ended_linger, then swept.
  void mark_ended(AgentSession& a, const char* reason);
  // The record's end reason as a finished call reports it: denied, killed or exited.
  static const char* end_reason_of(const AgentSession& a);

  // "Unknown process id N (why)", with the last output for killed, pruned and denied ends.
  std::string unknown_id_text(long id) const;
  // The tombstone of `id`, when one is kept.
  std::optional<session::Tombstones::Entry> tombstone(long id) const { return tombstones_.find(key(id)); }
  const session::Tombstones& tombstones() const noexcept { return tombstones_; }

  // Wired by the service.
  std::function<bool(long id)> has_calls;  // a queued call keeps an ended record from the sweep
  std::function<void(AgentSession&, std::vector<std::string> warnings)> on_counted;  // for the waiting call
  std::function<void(long id)> before_forget;  // the record goes: drop its calls, let go of its Session

 private:
  static session::Tombstones::Key key(long id) { return static_cast<session::Tombstones::Key>(id); }
  void count(AgentSession& a);
  void prune_one(std::vector<std::string>& warnings);
  void sweep_ended();
  void to_tombstone(long id);
  void forget(std::map<long, std::unique_ptr<AgentSession>>::iterator it);

  session::ProcessManager& pm_;
  loop::Loop& loop_;
  const base::AgentConfig& cfg_;
  std::map<long, std::unique_ptr<AgentSession>> records_;
  session::Tombstones tombstones_;
  std::vector<bool> issued_;
  std::vector<bool> journaled_;  // reserve_journaled: empty until the first reservation
  long next_deterministic_id_ = 1000;
  loop::Timer sweep_;
};

}  // namespace uexec::agent
