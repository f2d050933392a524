// seatbelt_input.h: a resolved policy as the Seatbelt generator's input (seatbelt.h).
//
// On Linux the seatbelt backend cannot run, but its policy can still be shown:
// `uexec sandbox --backend seatbelt --print -- CMD` resolves the same flags here and prints
// the exact `sandbox-exec` argv and SBPL text macOS would run, for a person to review or to
// use there. The mapping, field by field:
//   - reads: everything (uexec profiles always read `:root`);
//   - writes: "/" with deny entries (danger-full-access) is full write; otherwise every
//     writable root, with the carve-outs resolve() found strictly beneath it and the
//     protected names (kProtectedNames and the profile's extra ones);
//   - deny-read: each entry as resolve() anchored it, a glob as a glob, a plain path as a path;
//   - network: the profile's, with the loopback proxy ports of the request's environment;
//   - uexec's own directories: the daemon's socket directory and the state directory, never
//     readable, writable or connectable.
// Pure apart from what resolve() already read. Any thread.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "policy/profile.h"
#include "policy/seatbelt.h"

namespace uexec::policy {

// The generator's input for `profile` resolved as `resolved`, checked (check_seatbelt_input).
[[nodiscard]] base::Result<SeatbeltInput> seatbelt_input(const PermissionProfile& profile,
                                                         const ResolvedPolicy& resolved,
                                                         const std::vector<std::string>& env,
                                                         const std::string& control_dir,
                                                         const std::string& state_dir);

// `argv` as one POSIX shell command line: every word single-quoted where it needs quoting.
std::string shell_quote(const std::vector<std::string>& argv);

}  // namespace uexec::policy
