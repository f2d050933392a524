// awaiting_input.h: is a session waiting for its user to type? (docs/agent.md §6.5)
//
// The agent tools report `awaiting_input` (a response's state, `until: {awaiting_input}`,
// list_sessions) once the output has been quiet for AgentConfig::input_quiet. The evidence,
// best first: the kernel (the foreground process group is blocked reading the terminal, or a
// pipe child reads its stdin: pty/tty_state.h), else prompt patterns on the last output line.
//
// InputWatch is the per-session half a reader keeps: when output and input last happened, the
// terminal's device number (looked up once), and whether the current prompt was already
// reported, so `until: {awaiting_input}` fires once per prompt, not on every call. It reads
// the session::Session and its OutputModes and copies none of their facts: a program on the
// alternate screen waiting for keys is kind `screen`, with no prompt (top's last table row is
// not one). Loop thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace uexec::session {
class Session;
}

namespace uexec::agent {

class OutputModes;

using Clock = std::chrono::steady_clock;

struct AwaitingInput {
  std::string kind;      // password | line | raw | screen | pipe
  std::string evidence;  // kernel | hint
  std::string prompt;    // the last output line, <= 120 chars
};

// The last line of `raw` (ANSI stripped, without the newline), at most `max` bytes from its
// end, decoded lossily.
std::string last_line(std::string_view raw, std::size_t max);

class InputWatch {
 public:
  // `modes`: the session's OutputModes (it outlives this watch), or null for none.
  InputWatch(Clock::time_point now, const OutputModes* modes) : last_output_(now), last_input_(now), modes_(modes) {}

  // The ring's total is now `total`: true, with the previous total in `*before`, when new
  // output arrived (which also makes the next prompt reportable again).
  bool saw_output(std::uint64_t total, Clock::time_point now, std::uint64_t* before);
  // Input was written to the session.
  void saw_input(Clock::time_point now);
  // The current prompt was reported to the agent.
  void mark_reported() noexcept { reported_ = true; }
  bool reported() const noexcept { return reported_; }
  Clock::time_point last_output() const noexcept { return last_output_; }
  Clock::time_point last_input() const noexcept { return last_input_; }

  // What `s` waits for, if anything; nullopt while it has written in the last `quiet`, and
  // once it exited.
  std::optional<AwaitingInput> probe(session::Session& s, Clock::time_point now, std::chrono::milliseconds quiet);

 private:
  Clock::time_point last_output_, last_input_;
  const OutputModes* modes_;  // a full-screen program's last line is no prompt
  std::uint64_t seen_total_ = 0;
  bool reported_ = false;
  dev_t slave_ = 0;  // the terminal's device, for matching readers (0: not looked up yet)
};

}  // namespace uexec::agent
