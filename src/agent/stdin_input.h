// stdin_input.h: how write_stdin's chars and named keys reach a session: the stdin rules of
// docs/agent.md §2.5 and the secret-input check of §6.6.
//
//   tty   everything is written to the master (keys as a terminal sends them, arrows in the
//         form the program asked for; close_stdin appends ^D); the line discipline turns
//         ^C into SIGINT. Secret input is refused unless ECHO is off and ICANON on.
//   pipe  ^C or ^\ alone (chars or key) signal the process group, ^D alone or close_stdin
//         alone closes stdin; anything else needs a stdin pipe (pipe_stdin), is written to
//         it, and close_stdin then closes it once queued writes drain.
//
// Writes never block (the Session queues them). Pure but for the Session it writes to.
// Loop thread only.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace uexec::session {
class Session;
}

namespace uexec::agent {

struct StdinInput {
  std::string chars;
  std::vector<std::string> keys;  // canonical names (keys.h), already checked
  bool close_stdin = false;
  bool secret = false;
  bool empty() const noexcept { return chars.empty() && keys.empty() && !close_stdin; }
};

// Delivers `in` to `s`; `app_cursor`: the program asked for application cursor keys. True
// when delivered, false when the process had already exited (or a tty write failed other
// than by a full queue); refusals are errors worded "write_stdin failed: …".
[[nodiscard]] base::Result<bool> deliver_stdin(session::Session& s, const StdinInput& in, bool app_cursor);

}  // namespace uexec::agent
