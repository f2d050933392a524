// call.h: one exec_command, write_stdin or kill_session call while it runs: what it waits
// for, how its response will be shaped, and its streaming, from the moment it is accepted
// to its reply (docs/agent.md §2.3).
//
// A Call is owned by the CallQueue (call_queue.h), which gives it its turn on its session;
// `on_begin` then writes its input and starts its UntilWait, and every wake re-evaluates
// that wait until it ends and the response is built (response_builder.h). An orchestrated
// exec_command (approvals) steps out of the queue after each attempt and keeps its response
// in `held` until the orchestrator's last word. Loop thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_session.h"
#include "agent/deltas.h"
#include "agent/response.h"
#include "agent/until.h"
#include "base/result.h"
#include "loop/timer.h"
#include "policy/orchestrator.h"

namespace uexec::agent {

enum class CallKind { kExec, kWrite, kKill };

struct Call {
  Call(loop::Loop& loop, CallId call_id, CallKind call_kind, long session_id, Reply done)
      : id(call_id), kind(call_kind), sid(session_id), reply(std::move(done)), timer(loop) {}

  const CallId id;
  const CallKind kind;
  long sid = 0;           // the session it is on (0: an orchestrated exec before its first attempt)
  Reply reply;            // null once cancelled
  bool started = false;   // it has the turn (kill_session: from the start)
  UntilWait wait;         // t0, the deadline, the conditions, and what fired

  // The response's shape.
  std::size_t budget = 40000;  // body bytes
  View view = View::kRaw;
  std::vector<std::string> lines, warnings;  // envelope lines the call adds; warnings for the model
  bool input_delivered = true;
  bool yield_capped = false;  // yield_time_ms was over the maximum
  bool poll_raised = false;   // an empty write_stdin's yield_time_ms was under poll_min
  long yield_requested = 0;

  // Streaming (docs/agent.md §3.6): set by the front door.
  DeltaSplitter::Emit on_delta;
  std::optional<DeltaSplitter> deltas;
  session::Offset delta_cursor = 0;  // the next output byte to stream

  // At its turn: writes its input (if any) and starts `wait`. An error fails the call.
  std::function<base::Result<void>(Call&, AgentSession&)> on_begin;
  loop::Timer timer;  // its one timer: the next evaluation

  // Orchestrated (approvals): the attempt's outcome goes to the orchestrator at finish, and
  // its response waits here for the orchestrator's last word (a retry replaces it).
  std::function<void(policy::AttemptOutcome)> attempt_done;
  std::optional<Response> held;
};

}  // namespace uexec::agent
