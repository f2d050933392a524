// long_polls.h: the requests of one protocol session that wait for a process: process/read
// with waitMs, process/wait, and a process/write waiting for room in the child's input.
//
// None of them blocks the loop (docs/protocol.md §7): each is a Check kept here, run again
// when its process changes (wake(), from the ring's subscription), on its timer, and once more
// at its deadline. A Check that returns true has answered its request and is dropped. Long
// polls (reads and waits, not writes) count against the connection's max_waits.
//
//   add_deadline ─► wake(p)* ─► check(false) ... ─► deadline ─► check(true)  (answers: dropped)
//   add_ticking  ─► wake(p)* / every period ─► check(false) until it answers
//
// A waiter lives no longer than its protocol session, its process (drop()) or its connection
// (clear()): its Check may hold references to all three.
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "loop/loop.h"
#include "loop/timer.h"

namespace uexec::rpc {

struct ProtocolProcess;

class LongPolls {
 public:
  // Answers the request when it can (true: answered, the waiter goes); `timed_out` is true
  // only for the last call, at the deadline, which must answer.
  using Check = std::function<bool(bool timed_out)>;

  explicit LongPolls(loop::Loop& loop) noexcept : loop_(loop) {}
  LongPolls(const LongPolls&) = delete;
  LongPolls& operator=(const LongPolls&) = delete;

  // A long poll on `p` (counts against max_waits), checked on each wake and at `deadline`.
  void add_deadline(const ProtocolProcess* p, Check check, std::chrono::milliseconds deadline);
  // A waiter on `p` checked on each wake and every `period`; `long_poll`: counts toward polls().
  void add_ticking(const ProtocolProcess* p, bool long_poll, Check check, std::chrono::milliseconds period);
  // Runs the checks of `p`'s waiters (its output, exit or close moved).
  void wake(const ProtocolProcess* p);
  // Drops `p`'s waiters unanswered (the process is going).
  void drop(const ProtocolProcess* p);
  // Drops every waiter unanswered (the connection or the session is going).
  void clear() noexcept { waiters_.clear(); }
  // The long polls pending (for max_waits).
  std::size_t polls() const noexcept;

 private:
  struct Waiter {
    const ProtocolProcess* process = nullptr;
    bool long_poll = false;
    Check check;
    std::unique_ptr<loop::Timer> timer;
  };
  Waiter& add(const ProtocolProcess* p, bool long_poll, Check check, std::uint64_t& id);
  void run(std::uint64_t id, bool timed_out);

  loop::Loop& loop_;
  std::map<std::uint64_t, std::unique_ptr<Waiter>> waiters_;
  std::uint64_t next_id_ = 1;
};

}  // namespace uexec::rpc
