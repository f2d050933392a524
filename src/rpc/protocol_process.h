// protocol_process.h: one process as the native protocol sees it: a view of a
// session::Session under a processId of one protocol session (docs/protocol.md §2.1).
//
// The Session holds every fact about the child (argv, cwd, name, times, sandbox kind, output,
// verdict); the view holds only what the protocol adds: who owns it, who subscribes (each with
// its own cursor), who views it and may type, the writeIds it answered, the retention timer
// and the client's metadata. It never copies a fact of the Session.
//
// Lifetime: a view never outlives its Session. A process/start view is destroyed by the
// ProcessTable just before it asks the manager to remove() the Session (which then lives on
// until the next loop turn); an agent session's view (exec/*) is dropped when the AgentService
// says the record goes (AgentService::on_forget), which it says before removing the Session.
// So `session` is a reference, valid for the view's whole life.
// Loop thread only.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/lazy_deque.h"
#include "loop/timer.h"
#include "session/output_ring.h"
#include "session/session.h"

namespace uexec::rpc {

struct ProtocolSession;

// Where one subscribing protocol session is in a process's output, and which of its ending
// notifications it has had (rpc/output_pump.h).
struct SubscriberCursor {
  session::Offset cursor = 0;
  bool sent_exited = false, sent_closed = false;
  session::Seq last_seq = 0;  // the last output chunk sent (0: none yet)
  bool lagging = false;       // pushes paused for a full queue since the last catch-up

  // A cursor at the end of `s`'s output: only what comes next is pushed.
  static SubscriberCursor at_end(const session::Session& s);
  // A cursor just after chunk `after_seq`: what follows it is replayed.
  static SubscriberCursor after(const session::Session& s, session::Seq after_seq);
};

struct ProtocolProcess {
  ProtocolProcess(ProtocolSession& owner_session, std::string process_id, std::string manager_key,
                  session::Session& of, bool agent_session);
  ProtocolProcess(const ProtocolProcess&) = delete;
  ProtocolProcess& operator=(const ProtocolProcess&) = delete;

  // The status a writeId was answered with, if it is still remembered.
  std::optional<std::string> write_status(const std::string& write_id) const;
  // Remembers the last 4096 writeIds' answers: a retried write is answered, not repeated.
  void remember_write(const std::string& write_id, const std::string& status);

  ProtocolSession* const owner;
  const std::string id;
  const std::string id_json;  // `id` as a JSON string, for hand-built notifications
  const std::string key;      // the ProcessManager's id: "<sessionId>/<processId>" (agent: its id)
  session::Session& session;
  // An agent session (exec/command) seen as a process of the calling session (docs/protocol.md
  // §4.6): the AgentService owns its Session and its lifetime; this view never removes it.
  const bool agent;
  // Each subscribing session has its own cursor; none takes output from another.
  std::map<ProtocolSession*, SubscriberCursor> subscribers;
  // Sessions that attached as viewers (subscribe role "viewer"): read-only unless the owner
  // granted them input (the value). Other sessions keep the full sharing of docs/protocol.md §8.
  std::map<ProtocolSession*, bool> viewers;
  std::unique_ptr<session::Subscription> ring_subscription;
  std::unique_ptr<loop::Timer> retention;
  nlohmann::json metadata = nullptr;
  bool closed_seen = false;
  std::chrono::steady_clock::time_point closed_at{};  // set with closed_seen
  bool reading_paused = false;  // owner flow control (docs/protocol.md §7)

 private:
  base::LazyDeque<std::string> write_order_;  // costs nothing until a writeId is used
  std::unordered_map<std::string, std::string> write_status_;
};

}  // namespace uexec::rpc
