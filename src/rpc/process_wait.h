// process_wait.h: process/wait (docs/protocol.md §4.5) over the one wait engine,
// agent::UntilWait (agent/until.h): this file maps the request's `until` onto the engine's
// conditions and the engine's outcome onto the wire's `fired` names; the rules are the
// engine's.
//
// The wait scans the output from just after `afterSeq`, with no settle, for at most the
// timeout. `fired` on the wire: regex | bytes | portOpen (the engine's "port") | exit (the
// process exited, the wait ended by rule 2 or 3, or at the deadline once exited) | idle |
// timeout. The request's waiter (rpc/long_polls.h) evaluates on every wake of the ring and
// every kTick; the regex reads only output it has not read yet.
// Loop thread only.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/awaiting_input.h"
#include "agent/until.h"
#include "session/session.h"

namespace uexec::rpc {

class ProcessWait {
 public:
  // What held: `fired` as on the wire; `match` is {text, seq} for a regex, else null.
  struct Fired {
    std::string fired;
    nlohmann::json match;
  };
  // How often the waiter evaluates even without output (for idle, ports, the exit and timeout).
  static constexpr std::chrono::milliseconds kTick{25};
  // The engine's default timings (ports probed every 100 ms, trailing output 50 ms after the exit).
  static constexpr agent::UntilTiming kTiming{};

  // Waits on `s` from just after chunk `after_seq`, for at most `timeout`.
  ProcessWait(session::Session& s, agent::Until until, session::Seq after_seq, std::chrono::milliseconds timeout);

  // The outcome once the wait is over, or nullopt to keep waiting.
  std::optional<Fired> check();

 private:
  session::Session& s_;
  agent::UntilWait wait_;
  agent::InputWatch input_;
};

}  // namespace uexec::rpc
