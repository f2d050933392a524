// response_builder.h: the Response of a call whose wait ended (docs/agent.md §2.6, §2.7, §3.7),
// and the pieces read_output shares with it.
//
// A call's response is built at return, from the owner's reader to the ring's end (minus a
// held-back partial UTF-8 sequence, §3.4), within the call's token budget; only then does the
// reader advance, so a cancelled call consumes nothing. Around the body: the envelope's
// status line (exit code, or the session id while it runs), why the wait ended (`fired`),
// awaiting input, the signal and who sent it, a sandbox denial, lingering processes, the
// screen for View::kScreen, and the call's warnings. Loop thread only (it reads the Session).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent_session.h"
#include "agent/call.h"
#include "agent/response.h"
#include "base/config.h"
#include "base/result.h"
#include "session/session.h"

namespace uexec::agent {

// The response to `c`, whose wait on `a` ended now. Consumes the output (a.reader moves to
// what the body covered) and marks a reported prompt; ending the record is the caller's.
Response build_call_response(AgentSession& a, const Call& c, const base::AgentConfig& cfg);

// The session's screen as text, cut to `budget` bytes from the top, with what the model
// knows about it; errors when `s` has no screen (not a tty).
[[nodiscard]] base::Result<std::pair<std::string, ScreenInfo>> screen_view(session::Session& s, std::size_t budget);
// "Screen: 24x80, cursor at row 3 col 1, alternate screen, title \"vim\"".
std::string screen_line(const ScreenInfo& info);
// After the exit: the descendants that still hold the output (killed when the session
// closes), or those killed when it closed, into `r` and as an envelope line into `extra`.
void report_lingering(const session::Session& s, Response& r, std::vector<std::string>& extra);

}  // namespace uexec::agent
