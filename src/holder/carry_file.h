// carry_file.h: what a daemon that hands over for an upgrade carries to the next one, beyond
// the fds and facts the holder keeps anyway: each session's ring, screen model and queued
// input (session::Carried), in one sealed memfd that the holder passes on unread. A session
// that had finished (the holder let it go) comes with its pid and facts too, so that its
// output and end can still be read after the upgrade.
//
// The layout is ours alone and versioned: a magic line, a version, then per session its key
// and its Carried, integers in this machine's byte order (both daemons run on it), every byte
// string with its length first. The reader checks every length against the file's size and
// refuses a file of another version or shape as a whole; the sessions then resume as after
// a crash, their earlier output a gap. Both sides are bounded by what the rings retain.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "session/handover.h"

namespace uexec::holder {

inline constexpr std::uint32_t kCarryVersion = 1;

struct CarriedSession {
  session::Carried state;
  pid_t pid = -1;       // a finished session's (the holder no longer has it); else unused
  std::string facts;    // a finished session's facts (holder/handover_json.h, with "owner"); empty: held
};

// Writes `sessions` (key, what it carries) to a new sealed memfd.
[[nodiscard]] base::Result<base::UniqueFd> write_carry(const std::vector<std::pair<std::string, CarriedSession>>& sessions);
// Reads a file write_carry wrote; kInvalidArgument, saying where, for anything else.
[[nodiscard]] base::Result<std::unordered_map<std::string, CarriedSession>> read_carry(int fd);

}  // namespace uexec::holder
