// mcp_progress.h: what a tools/call's notifications/progress carry (docs/protocol.md §6).
//
// Clients show a progress message as a status line and none of them gives it to the model
// (seen with Codex, Claude Code and Gemini CLI, issue 18), yet streaming the whole output as
// progress cost 317 notifications and 1.29 MB for a 40 KB result. So a notification carries
// only the newest line of output, cut to kMaxMessageBytes (whole UTF-8 characters), and goes
// out at most once per kInterval; output in between only updates the line that goes next.
// The tool's result has the output in full. Pure: the caller passes the time.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace uexec::rpc {

class ProgressReporter {
 public:
  static constexpr std::size_t kMaxMessageBytes = 200;
  static constexpr std::chrono::milliseconds kInterval{250};
  using Clock = std::chrono::steady_clock;

  explicit ProgressReporter(nlohmann::json token) : token_(std::move(token)) {}

  // The notifications/progress params for output `delta` arriving at `now`, or nullopt when
  // one went out less than kInterval ago (the newest line is kept for the next one).
  std::optional<nlohmann::json> on_output(std::string_view delta, Clock::time_point now);
  long sent() const noexcept { return sent_; }

  // The newest non-blank line of `text`, at most kMaxMessageBytes (its end kept); empty if none.
  static std::string newest_line(std::string_view text);

 private:
  nlohmann::json token_;
  std::string line_;  // the newest line seen, not yet sent
  std::optional<Clock::time_point> last_sent_;
  long sent_ = 0;
};

}  // namespace uexec::rpc
