#include "agent/stdin_input.h"

#include <signal.h>

#include "agent/keys.h"
#include "agent/tool_args.h"
#include "pty/tty_state.h"
#include "session/session.h"

namespace uexec::agent {

using base::Errc;
using base::Result;

namespace {

constexpr const char* kQueueFull =
    "write_stdin failed: failed to write to stdin: stdin queue full: the process is not reading";

Result<bool> deliver_to_tty(session::Session& s, const StdinInput& in, bool app_cursor) {
  if (in.secret) {
    auto modes = pty::tty_modes(s.process()->master_fd());
    if (!modes || modes->echo || !modes->icanon)
      return tool_error(
          "write_stdin failed: secret input refused: the terminal would echo it (ECHO is on or the program reads in "
          "raw mode)");
  }
  std::string data = in.chars;
  for (const auto& k : in.keys) data += *key_bytes(k, true, app_cursor);
  if (in.close_stdin) data += "\x04";
  if (auto r = s.write(data); !r) {
    if (r.error().code == Errc::kLimit) return tool_error(kQueueFull);
    return false;
  }
  return true;
}

// A pipe does not echo: secret input needs no check here.
Result<bool> deliver_to_pipe(session::Session& s, const StdinInput& in) {
  auto only_key = [&](const char* key) { return in.chars.empty() && in.keys == std::vector<std::string>{key}; };
  bool ctrl_c = (in.chars == "\x03" && in.keys.empty()) || only_key("ctrl-c");
  bool ctrl_d = (in.chars == "\x04" && in.keys.empty()) || only_key("ctrl-d");
  bool ctrl_bs = only_key("ctrl-\\");
  bool has_pipe = s.process()->stdin_pipe_fd() >= 0;
  if (ctrl_c) {
    (void)s.signal(SIGINT, pty::SignalTarget::kGroup);
  } else if (ctrl_bs) {
    (void)s.signal(SIGQUIT, pty::SignalTarget::kGroup);
  } else if (ctrl_d || (in.close_stdin && in.chars.empty() && in.keys.empty())) {
    if (has_pipe) (void)s.close_stdin();
  } else {
    if (!has_pipe)
      return tool_error(
          "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true or "
          "pipe_stdin=true to keep stdin open");
    std::string data = in.chars;
    for (const auto& k : in.keys) data += *key_bytes(k, false, false);
    if (auto r = s.write(data); !r) {
      if (r.error().code == Errc::kLimit) return tool_error(kQueueFull);
      return tool_error("write_stdin failed: failed to write to stdin: " + r.error().message());
    }
    if (in.close_stdin) (void)s.close_stdin();
  }
  return true;
}

}  // namespace

Result<bool> deliver_stdin(session::Session& s, const StdinInput& in, bool app_cursor) {
  if (s.verdict() || s.finished()) return false;
  return s.tty() ? deliver_to_tty(s, in, app_cursor) : deliver_to_pipe(s, in);
}

}  // namespace uexec::agent
