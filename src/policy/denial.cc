#include "policy/denial.h"

#include <signal.h>

#include <algorithm>
#include <cctype>

namespace uexec::policy {

const char* denial_source_name(DenialSource s) noexcept {
  return s == DenialSource::kExecutor ? "executor" : "heuristic";
}

std::string SandboxDenied::describe() const {
  return std::string(denial_source_name(source)) + ": " + detail;
}

namespace {

// A word boundary for the tool-name keywords: characters outside [A-Za-z0-9_./-], so that
// "./sandbox/main.c" and "sandbox-exec" never match (Codex's `find` false positive).
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-';
}

bool contains_word(const std::string& hay, std::string_view word) {
  for (std::size_t pos = hay.find(word); pos != std::string::npos; pos = hay.find(word, pos + 1)) {
    bool left = pos == 0 || !is_word_char(hay[pos - 1]);
    std::size_t end = pos + word.size();
    bool right = end >= hay.size() || !is_word_char(hay[end]);
    if (left && right) return true;
  }
  return false;
}

}  // namespace

std::string denial_keyword(std::string_view output, bool mount_view) {
  std::string lower(output);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view phrase : {"operation not permitted", "permission denied", "read-only file system",
                                  "failed to write file"})
    if (lower.find(phrase) != std::string::npos) return std::string(phrase);
  if (mount_view)
    for (std::string_view phrase : {"device or resource busy", "invalid cross-device link"})
      if (lower.find(phrase) != std::string::npos) return std::string(phrase);
  for (std::string_view word : {"sandbox", "seccomp", "landlock"})
    if (contains_word(lower, word)) return std::string(word);
  return {};
}

FinalResult finalize_exec_result(const pty::ExitStatus& status, bool timed_out, bool sandboxed,
                                 const DenialLog* log, std::string_view output, bool seccomp, bool mount_view) {
  FinalResult r;
  r.exit_code = status.shell_code();
  if (timed_out) {
    r.kind = FinalKind::kTimeout;
    return r;
  }
  if (sandboxed) r.denial = classify_exit(status, log, output, seccomp, mount_view);
  r.kind = r.denial ? FinalKind::kDenied : FinalKind::kCompleted;
  return r;
}

bool is_likely_sandbox_denied(bool sandboxed, bool linux_seccomp, const ExecOutput& out) {
  if (!sandboxed || out.exit_code == 0) return false;
  static constexpr std::string_view kKeywords[] = {"operation not permitted", "permission denied",
                                                    "read-only file system", "seccomp", "sandbox",
                                                    "landlock", "failed to write file"};
  for (const std::string* section : {&out.stderr_text, &out.stdout_text, &out.aggregated}) {
    std::string lower(*section);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (auto k : kKeywords)
      if (lower.find(k) != std::string::npos) return true;
  }
  if (out.exit_code == 2 || out.exit_code == 126 || out.exit_code == 127) return false;
  return linux_seccomp && out.exit_code == 128 + SIGSYS;
}

std::optional<SandboxDenied> classify_exit(const pty::ExitStatus& status, const DenialLog* log,
                                           std::string_view output, bool seccomp, bool mount_view) {
  int code = status.shell_code();
  if (code == 0) return std::nullopt;
  if (log)
    for (const DenialRecord& r : log->records)
      if (r.evidence) return SandboxDenied{code, DenialSource::kExecutor, r.source, r.source + " " + r.detail};
  if (status.signal == 0 && (code == 2 || code == 126 || code == 127)) return std::nullopt;
  // A signal death, or a wrapper's 128+SIGSYS (bwrap reports its child's death that way).
  if (seccomp && (status.signal == SIGSYS || code == 128 + SIGSYS))
    return SandboxDenied{code, DenialSource::kExecutor, "seccomp", "seccomp killed the process (SIGSYS)"};
  std::string kw = denial_keyword(output, mount_view);
  if (kw.empty()) return std::nullopt;
  return SandboxDenied{code, DenialSource::kHeuristic, "keyword", "output contains \"" + kw + "\""};
}

}  // namespace uexec::policy
