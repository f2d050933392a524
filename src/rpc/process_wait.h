// process_wait.h: process/wait's engine (docs/protocol.md §4.5): decides, each time it is
// asked, whether one of the `until` conditions holds for a process yet.
//
// The conditions, in the order they are tried: `regex` (over the output since afterSeq, ANSI
// stripped, line by line), `bytes` (that much output since afterSeq), `portOpen` (the
// process listens on the port), the exit (reported once the output closed, or kExitSettle
// after the exit, to let trailing output arrive), `idleMs` (no output for that long) and the
// timeout. The request's waiter (rpc/long_polls.h) asks on every wake of the ring and every
// kTick; each check re-reads the output since afterSeq.
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "session/session.h"

namespace uexec::rpc {

class ProcessWait {
 public:
  // The `until` object of process/wait.
  struct Until {
    std::shared_ptr<const std::regex> regex;
    std::optional<long> idle_ms;
    std::optional<std::uint64_t> bytes;
    std::optional<long> port;
  };
  // What held: `fired` is regex | bytes | portOpen | exit | idle | timeout; `match` is
  // {text, seq} for a regex, else null.
  struct Fired {
    std::string fired;
    nlohmann::json match;
  };
  // How often the waiter asks even without output (for idle, ports, the exit and timeout).
  static constexpr std::chrono::milliseconds kTick{25};
  // How long after the exit trailing output may still arrive before the exit is reported.
  static constexpr std::chrono::milliseconds kExitSettle{50};

  // Waits on `s` from just after chunk `after_seq`, for at most `timeout`.
  ProcessWait(const session::Session& s, Until until, session::Seq after_seq, std::chrono::milliseconds timeout);

  // The condition that holds now, or nullopt to keep waiting; `timed_out` forces "timeout".
  std::optional<Fired> check(bool timed_out);

 private:
  std::optional<nlohmann::json> regex_match() const;

  const session::Session& s_;
  Until until_;
  session::Offset from_;
  std::chrono::milliseconds timeout_;
  session::Clock::time_point start_;
  std::uint64_t last_total_;
  session::Clock::time_point last_output_;
};

}  // namespace uexec::rpc
