// read_output.h: the read_output tool (docs/agent.md §6.7): retained output of a live or
// ended-but-lingering agent session, without moving any reader.
//
// Three shapes: a byte range (default: from the first retained byte, within the token
// budget), the last N lines, or grep hits as `L<line>@<offset>: <text>` with context, line
// numbers counted across the evicted middle; or, for a tty, the current screen. A query: it
// reads the registry and the Session, and changes neither. A session no record holds any more
// is read from the daemon's journal when there is one (journal/journal_format.h), in the same
// three shapes. Loop thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "agent/registry.h"
#include "agent/response.h"
#include "base/config.h"
#include "base/result.h"

namespace uexec::agent {

struct ReadParams {
  std::optional<long> session_id;
  std::optional<std::string> name;
  std::optional<std::uint64_t> offset, length;
  std::optional<long> tail_lines;
  std::optional<std::string> grep;
  bool ignore_case = false;
  long context = 0;
  long max_matches = 50;
  std::optional<long> max_output_tokens;
  View view = View::kRaw;
};

// Where read_output looks for a session no record holds: the daemon's journal root ("" for
// none) and the directories of the agent sessions earlier daemons left there (id -> dir, read
// once at start); an id this daemon issued and forgot is found by a scan of the root.
struct JournalLookup {
  std::string root;
  std::unordered_map<long, std::string> dirs;
};

// The output `p` asks for, as an envelope; errors are worded "read_output failed: …". An id no
// record holds is read from its journal (JournalLookup) when there is one: its output and how
// it ended.
[[nodiscard]] base::Result<Response> read_output(SessionRegistry& registry, const ReadParams& p,
                                                 const base::AgentConfig& cfg, const JournalLookup& journal);

}  // namespace uexec::agent
