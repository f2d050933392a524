// sandbox_flags.h: the agent tools' default sandbox, as the long-running front doors (`mcp`,
// `exec-server`, `serve`) take it from their flags.
//
// --sandbox MODE, then --writable DIR, --deny-read GLOB, --network on|off, --backend B and
// --approval POLICY (--writable and --deny-read may repeat). seed() starts from the config
// file's [sandbox] (user_config.h); a flag then overrides its key, and the first --writable or
// --deny-read replaces the file's list. Every flag is read before any is
// judged: a bad value is recorded in `error` and finish() reports it, so the command still
// answers --help or an unknown argument that comes later. `uexec run` and `uexec sandbox` have
// their own, stricter reading of the same flags (cmd_run.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "cli/user_config.h"
#include "policy/orchestrator.h"  // ApprovalPolicy
#include "policy/profile.h"
#include "policy/sandbox_attempt.h"

namespace uexec::cli {

struct SandboxFlags {
  std::optional<policy::PermissionProfile> profile;
  policy::Backend backend = policy::Backend::kAuto;
  std::vector<std::string> writable, deny_read;
  std::optional<bool> network;
  policy::ApprovalPolicy approval = policy::ApprovalPolicy::kNever;
  std::string error;
  bool flagged = false;  // a sandbox flag was on the command line (not only the config file)

  static constexpr const char* kHelp =
      "  --sandbox MODE      run every exec_command under read-only | workspace-write |\n"
      "                      danger-full-access\n"
      "  --writable DIR, --deny-read GLOB, --network on|off, --backend auto|namespaces|landlock|bwrap\n"
      "  --approval POLICY   never (default: denials are reported) | on-failure | on-request |\n"
      "                      untrusted: clients that declare `approvals` get approval/request;\n"
      "                      under `uexec mcp`, clients that declare `elicitation` get\n"
      "                      elicitation/create (others: denied, and the result says so)\n";

  // The config file's [sandbox], before the flags are parsed.
  void seed(const UserConfig& config);
  // Declares the six flags on `flags`; their values land here.
  void declare(Flags& flags);
  // After the parse: the profile, or false with `error` (also for sandbox flags without --sandbox).
  bool finish();

 private:
  bool writable_seeded_ = false, deny_read_seeded_ = false;  // the lists are still the file's
};

}  // namespace uexec::cli
