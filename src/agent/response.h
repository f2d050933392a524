// response.h: what one agent tool call answers (docs/agent.md §2.6, §2.7): the Codex text
// envelope, and the same facts as structured fields for clients that read them.
//
// Built by response_builder.h for exec_command, write_stdin and kill_session, and by
// read_output.h for read_output; rpc/agent_tools.cc turns it into JSON. Types only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/awaiting_input.h"
#include "agent/envelope.h"
#include "agent/probes.h"
#include "base/result.h"
#include "policy/denial.h"
#include "session/containment.h"

namespace uexec::agent {

// What the output of a response shows: the new raw bytes (decoded), or the terminal's
// screen after them (tty only: a TUI such as top, less or vim as text).
enum class View { kRaw, kScreen };

// The screen behind a View::kScreen response.
struct ScreenInfo {
  int rows = 0, cols = 0;
  int cursor_row = 0, cursor_col = 0;  // 0-based
  bool alt_screen = false;
  std::string title;
  bool exact = true;  // false: some output was evicted before the model saw it
};

// One response of exec_command / write_stdin / kill_session / read_output: the text
// envelope plus the structured fields (§2.7).
struct Response {
  std::string text;
  std::string chunk_id;
  double wall_time_seconds = 0;
  std::string output;
  std::optional<int> exit_code;
  std::optional<long> session_id;  // null once the exit is reported
  std::uint64_t original_token_count = 0;
  long session = 0;
  std::optional<std::string> name;
  std::string state;  // running | awaiting_input | exited
  std::optional<std::string> signal;
  bool core_dumped = false;
  std::optional<std::string> killed_by;
  std::optional<std::string> fired;  // exit | regex | idle | port | awaiting_input
  std::optional<std::string> match_text;
  std::optional<std::uint64_t> match_offset;
  std::optional<Listener> match_port;
  std::optional<AwaitingInput> awaiting_input;
  std::uint64_t range_offset = 0, range_length = 0;
  std::vector<Omitted> omitted;
  bool output_closed = false;
  bool input_delivered = true;
  std::size_t stdin_pending_bytes = 0;
  std::vector<std::string> warnings;
  std::optional<policy::SandboxDenied> sandbox_denied;
  std::optional<ScreenInfo> screen;  // set for View::kScreen
  std::optional<std::string> journal;  // read_output from the journal: that journal's directory
  // Descendants that outlived the leader: still running (killed when the session closes) or,
  // once it closed, killed then.
  std::vector<session::LingeringProcess> lingering;
};

// How a tool call answers: exactly once, unless cancelled.
using Reply = std::function<void(base::Result<Response>)>;

}  // namespace uexec::agent
