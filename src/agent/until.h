// until.h: when does a wait on one session end? The one wait engine of uexec: it serves
// exec_command / write_stdin (docs/agent.md §2.3, the `until` conditions of §6.4, the
// post-write settle of §2.4) and the native protocol's process/wait (docs/protocol.md §4.5).
//
// An UntilWait is started when its waiter gets the turn (t0), with a settle and a wait after
// it (deadline D = t0 + settle + wait), and scans output from a given offset (by default the
// ring's end at that moment). Each evaluate() looks at the session as it is now and answers
// "done" or "look again at T"; the first rule that holds ends the wait:
//
//   1. now ≥ settle end, and an output condition holds over the output scanned
//      (regex | bytes; also after the exit: trailing output may be what matched)   ──► done, fired
//   2. closed                                                                       ──► done
//   3. exited, and now ≥ min(t_x + post_exit_close_cap, D)                          ──► done
//   4. running, now ≥ settle end, a state condition holds (idle | port | awaiting_input) ──► done, fired
//   5. now ≥ D                                 ──► done (a reaped child whose verdict is not
//                                                  published yet is waited for, 5 ms at a time)
//
// It knows a session::Session, the waiter's InputWatch (last output, prompt already reported)
// and the timings; not who waits (an agent call, a process/wait request), not the queue, not
// the registry, not the wire names of what fired. It owns no timer: the waiter arms its own
// for the returned time (or re-evaluates on a tick). Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>

#include "agent/awaiting_input.h"
#include "agent/probes.h"
#include "session/output_ring.h"

namespace uexec::session {
class Session;
}

namespace uexec::agent {

using std::chrono::milliseconds;

// The conditions of a wait, any-of (exit always ends a wait).
struct Until {
  std::optional<std::string> regex_src;
  std::shared_ptr<const std::regex> regex;  // per line, ANSI stripped, the last 64 KiB of a line
  std::optional<std::uint64_t> bytes;       // that much output scanned (process/wait only, today)
  std::optional<milliseconds> idle;
  std::optional<int> port;
  bool awaiting_input = false;
};

// The tunables a wait reads (from base::AgentConfig).
struct UntilTiming {
  milliseconds input_quiet{200};         // quiet output before awaiting_input is probed
  milliseconds port_probe{100};          // between two port probes
  milliseconds post_exit_close_cap{50};  // rule 3: how long trailing output may take
};

class UntilWait {
 public:
  UntilWait() = default;
  explicit UntilWait(Until conditions) : until_(std::move(conditions)) {}

  // Starts the wait at `t0`: conditions are not looked at before t0 + settle, and the wait
  // ends at t0 + settle + wait. Output is scanned from what `s` holds now.
  void start(const session::Session& s, Clock::time_point t0, milliseconds settle, milliseconds wait);
  // The same, scanning output from offset `from` (evicted bytes are skipped).
  void start_at(session::Offset from, Clock::time_point t0, milliseconds settle, milliseconds wait);

  struct Step {
    bool done = false;
    Clock::time_point wake_at{};  // when not done: evaluate again then (or on the next event)
  };
  // Applies the rules above to `s` as it is at `now`.
  Step evaluate(session::Session& s, InputWatch& input, const UntilTiming& timing, Clock::time_point now);

  // Forgets what fired (a retried attempt waits afresh).
  void clear_outcome();

  const Until& conditions() const noexcept { return until_; }
  Clock::time_point t0() const noexcept { return t0_; }
  Clock::time_point deadline() const noexcept { return deadline_; }
  // What ended the wait: regex | bytes | idle | port | awaiting_input (unset: rules 2, 3, 5).
  const std::optional<std::string>& fired() const noexcept { return fired_; }
  const std::optional<std::string>& match_text() const noexcept { return match_text_; }
  const std::optional<std::uint64_t>& match_offset() const noexcept { return match_offset_; }  // the line's start
  const std::optional<Listener>& port_match() const noexcept { return port_match_; }
  const std::optional<AwaitingInput>& awaiting() const noexcept { return awaiting_; }

 private:
  bool output_condition_holds(const session::OutputRing& ring);
  bool state_condition_holds(session::Session& s, InputWatch& input, const UntilTiming& timing, Clock::time_point now,
                             Clock::time_point* next);
  bool scan_regex(const session::OutputRing& ring);

  Until until_;
  Clock::time_point t0_{}, settle_end_{}, deadline_{}, next_probe_{};
  session::Offset from_ = 0;           // where the scanned output starts (for `bytes`)
  session::Offset scan_ = 0;           // the next output byte the regex looks at
  std::string partial_;                // the current line, not yet ended by '\n'
  session::Offset partial_start_ = 0;  // its offset
  std::optional<std::string> fired_, match_text_;
  std::optional<std::uint64_t> match_offset_;
  std::optional<Listener> port_match_;
  std::optional<AwaitingInput> awaiting_;
};

}  // namespace uexec::agent
