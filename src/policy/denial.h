// denial.h: deciding whether a sandboxed command failed because the sandbox denied it.
//
// Two sources, in order of authority (docs/sandbox.md §5): records the sandbox executor itself
// reported (seccomp decisions, SIGSYS kills, Landlock audit, mount setup), and, only when
// there are none, a keyword predicate over the retained output. A denial is a value, not
// an exception: a denied command is an expected outcome. Pure: no libuv, no JSON.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pty/exit_status.h"

namespace uexec::policy {

enum class DenialSource { kExecutor, kHeuristic };
const char* denial_source_name(DenialSource s) noexcept;

// One thing the sandbox executor saw itself deny (docs/sandbox.md §5.4).
struct DenialRecord {
  std::string source;     // "seccomp", "landlock", "mount"
  std::string kind;       // "fs_write", "network", …
  std::string detail;     // a path, a syscall: "write /etc/hosts"
  // Counts as the verdict's evidence. A filesystem record (--log-denials) does not: it is the
  // listener's reading of a write the kernel then decided, shown, never proof of a denial.
  bool evidence = true;
};

// Where an executor leaves its records; shared by the attempt and the session.
struct DenialLog {
  std::vector<DenialRecord> records;
};

// The verdict's denial part (SandboxDenied): what the client and the orchestrator see.
struct SandboxDenied {
  int exit_code = 0;
  DenialSource source = DenialSource::kHeuristic;
  std::string mechanism;  // "seccomp", "landlock", "mount", "network", "keyword"
  std::string detail;     // "landlock write /etc/hosts", or `output contains "…"`
  // "executor: landlock write /etc/hosts" / "heuristic: output contains "read-only file system""
  std::string describe() const;
};

// The production classifier, run once per sandboxed session when the exit drain ends:
// exit 0 never counts; executor records that are evidence count on any non-zero exit (even 2, 126, 127);
// without such records, 2, 126 and 127 never count, SIGSYS under seccomp counts, and otherwise
// the whole-word keyword scan of `output` decides. `mount_view` adds the EBUSY/EXDEV texts.
std::optional<SandboxDenied> classify_exit(const pty::ExitStatus& status, const DenialLog* log,
                                           std::string_view output, bool seccomp, bool mount_view);

// The keyword the scan found in `output` (lower-cased), or empty.
std::string denial_keyword(std::string_view output, bool mount_view);

// One-shot finalize (docs/sandbox.md §5.3): a timeout is checked first (Timeout even when the output
// looks denied), then a sandbox denial, else the ordinary result with the real exit code: a
// non-zero exit without evidence stays ordinary. Unsandboxed runs are never Denied.
enum class FinalKind { kCompleted, kDenied, kTimeout };
struct FinalResult {
  FinalKind kind = FinalKind::kCompleted;
  int exit_code = 0;
  std::optional<SandboxDenied> denial;
};
FinalResult finalize_exec_result(const pty::ExitStatus& status, bool timed_out, bool sandboxed,
                                 const DenialLog* log, std::string_view output, bool seccomp, bool mount_view);

// Codex's own predicate, kept under its name for compatibility tests (docs/sandbox.md §5.2, seed
// 000): kind None or exit 0 → false; any of the seven keywords in stderr, stdout or the
// aggregated output (plain substring, lower-cased) → true; exit 2, 126, 127 → false; a Linux
// kind and exit 128+SIGSYS → true; else false. Side-effect free. Production uses classify_exit.
struct ExecOutput {
  int exit_code = 0;
  std::string stdout_text, stderr_text, aggregated;
};
bool is_likely_sandbox_denied(bool sandboxed, bool linux_seccomp, const ExecOutput& out);

}  // namespace uexec::policy
