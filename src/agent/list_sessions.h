// list_sessions.h: the list_sessions tool (docs/agent.md §6.1): one row per agent session,
// live or ended, and with include_exited the tombstones of the last 10 minutes (at most 20).
//
// A query: it reads the registry, the Sessions (command, cwd, tty, age, the ring) and the
// tombstones, and changes nothing. Loop thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/registry.h"
#include "base/config.h"

namespace uexec::agent {

struct ListParams {
  bool all = false;
  bool include_exited = true;
};

struct SessionRow {
  long id = 0;
  std::optional<std::string> name;
  std::string state;  // running | awaiting_input | exited | ended:<reason>
  std::string command, cwd;
  bool tty = false;
  double age_s = 0, idle_s = 0;
  std::uint64_t unread_bytes = 0;
  std::optional<int> exit_code;
  std::optional<std::string> signal, killed_by;
  std::string last_line;
  std::uint64_t retained_bytes = 0, omitted_bytes = 0;
  std::string containment;  // cgroup | pid-namespace | tracked | none
};

struct ListResult {
  std::string text;
  std::vector<SessionRow> rows;
};

// The rows and their text table ("ID NAME STATE AGE IDLE TTY EXIT COMMAND").
ListResult list_sessions(SessionRegistry& registry, const ListParams& p, const base::AgentConfig& cfg);

}  // namespace uexec::agent
