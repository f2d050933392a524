// agent_session.h: the agent tools' view of one session::Session, from spawn until its record
// collapses into a tombstone (registry.h).
//
// The Session is the one holder of the session's facts: argv (the agent's `cmd` is its last
// word, `[shell, -c|-lc, cmd]`), cwd, name, tty, the start and exit times, the sandbox and
// the verdict. An AgentSession holds only what the agent's view adds: the owner's reader
// cursor, when a call last used it (LRU pruning), input and output activity, the cursor-key
// mode, and where it is in the lifecycle (docs/agent.md §5.1, §5.3):
//
//   spawn ──► grace ──► counted ──► ended (exit delivered, pruned or replaced) ──► tombstone
//
// It never outlives its Session: the registry removes the Session from the ProcessManager in
// the same step that destroys this record, and what must be remembered after (name, command,
// cwd, how it ended, the last output) is copied into the tombstone then, and only there.
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "agent/awaiting_input.h"
#include "agent/output_modes.h"
#include "loop/timer.h"
#include "session/output_ring.h"
#include "session/session.h"

namespace uexec::agent {

using CallId = std::uint64_t;  // one tool call (AgentService)
using WallClock = std::chrono::system_clock;

struct AgentSession {
  AgentSession(loop::Loop& loop, long session_id, session::Session& s, CallId origin_call, Clock::time_point now)
      : id(session_id), session(&s), origin(origin_call), last_used(now), input(now, &modes), grace(loop) {}

  // What the Session holds, as the agent tools name it.
  const std::string& cmd() const { return session->argv().back(); }
  std::optional<std::string> name() const {
    return session->name().empty() ? std::nullopt : std::optional(session->name());
  }

  const long id;
  session::Session* const session;  // owned by the ProcessManager, removed with this record
  const CallId origin;              // the exec_command that started it
  Clock::time_point last_used;      // the last call that got its turn here (LRU pruning)
  InputWatch input;                 // output and input activity, the prompt reported
  session::Offset reader = 0;       // the owner's cursor: a response consumes up to its end
  OutputModes modes;                // tty: DECCKM (named arrow keys), the alternate screen
  bool counted = false;             // past the grace: counts against max_sessions
  bool ended = false;               // its end was delivered (or it was pruned or replaced)
  bool end_logged = false;          // its end event is in the event log
  const char* end_reason = nullptr;       // once ended: exited | killed | pruned | denied
  std::optional<std::string> killed_by;   // who sent the signal that ended it, when uexec did
  Clock::time_point ended_at{};           // when it ended for the agent (not the reap)
  WallClock::time_point ended_wall{};
  std::unique_ptr<session::Subscription> sub;  // wakes the service on output, exit, close
  loop::Timer grace;                           // early_exit_grace, then counted
};

}  // namespace uexec::agent
