// call_queue.h: the running tool calls of one AgentService, and per session the order they
// take turns in (docs/agent.md §2.3: calls on a session run FIFO; each takes its t0 when it
// gets the turn).
//
//   create ──► enqueue ──► (front of its session's FIFO) on_turn ──► on_wake … ──► erase
//                  │                                     │
//                  └── cancel: erased, no reply; the next call gets its turn
//                                                        └── step_aside: out of the FIFO,
//                                                            kept (orchestrated attempts)
//
// kill_session calls are not queued: they start at once, beside the front call. The queue
// knows sessions only by id and nothing of what a turn does: the service's on_turn and
// on_wake do that. Each call's one timer is armed here (wake_at). Loop thread only.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "agent/call.h"
#include "loop/loop.h"

namespace uexec::agent {

class CallQueue {
 public:
  explicit CallQueue(loop::Loop& loop) : loop_(loop) {}
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  // A new call on session `sid` (0: none yet), not queued.
  Call& create(CallKind kind, long sid, Reply reply);
  // The running call `id`, or nullptr.
  Call* find(CallId id);
  // Joins its session's FIFO; when it is the front, its turn comes now (on_turn).
  void enqueue(Call& c);
  // Gives the front call of `sid` its turn, if it has not had it.
  void start_next(long sid);
  // Ends the call without replying; nothing is consumed, and the next call gets its turn.
  void cancel(CallId id);
  // Cancels every call on `sid`.
  void cancel_on(long sid);
  // Destroys the call (and its timer); returns its session id. The next call's turn is the
  // caller's to start (after it replied).
  long erase(Call& c);
  // Takes the call out of its session's FIFO and stops its wait, but keeps it; the next call
  // gets its turn.
  void step_aside(Call& c);
  // Calls the next evaluation of `c` (on_wake) at `at`, or at once if that has passed.
  void wake_at(Call& c, Clock::time_point at, Clock::time_point now);

  // A call is queued on `sid`.
  bool has_queued(long sid) const;
  // The front call of `sid`'s FIFO, or nullptr.
  Call* front(long sid);
  // The ids of the calls on `sid` that have their turn (the front, and kill calls).
  std::vector<CallId> started_on(long sid) const;
  // Destroys every call without replying (the service is going away).
  void clear();

  std::function<void(Call&)> on_turn;  // c.started is set
  std::function<void(Call&)> on_wake;  // its timer fired

 private:
  void unqueue(const Call& c);

  loop::Loop& loop_;
  std::unordered_map<CallId, std::unique_ptr<Call>> calls_;
  std::unordered_map<long, std::deque<CallId>> fifo_;  // by session id
  CallId next_id_ = 1;
};

}  // namespace uexec::agent
