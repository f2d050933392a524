// config.h: every tunable in one place, with the defaults of docs/agent.md §8.
//
// Units live in the types. Values marked "issue 2" follow the foundation issue where it
// is stricter than the agent tools' defaults (docs/agent.md §1.1, docs/design.md); later layers may override them per
// front door. Plain aggregate: copy it, change fields, pass it down.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace uexec::base {

using std::chrono::milliseconds;

struct PtySize {
  unsigned short rows = 24;
  unsigned short cols = 80;
  friend bool operator==(const PtySize&, const PtySize&) = default;
};

// The agent tools' tunables (docs/agent.md §8), Codex's values unless noted.
struct AgentConfig {
  milliseconds yield_min{250}, yield_max{30000};
  milliseconds exec_yield_default{10000}, write_yield_default{250};
  milliseconds poll_min{5000}, poll_max{300000};
  // The default is Codex's 10000 less 500: Gemini CLI cuts a tool result over 40 000 characters
  // a second time, and 38 000 bytes of output leave room for the envelope's lines.
  long max_output_tokens = 9500, max_output_tokens_cap = 10000, bytes_per_token = 4;
  std::size_t max_sessions = 64, warn_sessions = 60, protected_recent = 8;
  milliseconds early_exit_grace{150}, post_exit_close_cap{50}, post_write_settle{100};
  milliseconds input_quiet{200}, port_probe{100};
  std::size_t tombstones_max = 4096;
  milliseconds ended_linger{600000};
  bool allow_login_shell = true;
  bool env_preset = true;  // the agent preset (agent/agent_env.h) over each command's environment
  bool deterministic_ids = false;  // tests: ids 1000, 1001, …
  bool envelope_extensions = true;
  std::size_t delta_max_bytes = 8192, deltas_per_call = 10000;  // streaming (docs/agent.md §3.6)
};

// How sessions' descendants are found and killed (session/containment.h): kAuto uses a
// cgroup v2 when the manager can make one, else tracking; kTracked never uses cgroups;
// kOff leaves descendants alone (and the manager is no subreaper).
enum class ContainmentMode : unsigned char { kAuto, kCgroup, kTracked, kOff };

// Per-session resource limits (issue 6); unset fields mean no limit. A request's limits
// (ExecRequest::limits) override Config::limits field by field. The kernel-side ones need
// cgroup controllers (session/limits.h); a session that asks for them where there are none
// is refused, never started unlimited.
struct SessionLimits {
  std::optional<std::uint64_t> output_bytes_per_sec;  // reading pauses past it, as a slow terminal
  std::optional<std::size_t> retain_bytes;            // overrides Config::retain_bytes
  std::optional<milliseconds> wall_timeout;           // terminate after this long
  std::optional<milliseconds> idle_timeout;           // terminate after this long without output or input
  std::optional<std::uint64_t> memory_max_bytes;      // cgroup memory.max: the kernel's OOM killer ends it
  std::optional<std::uint32_t> pids_max;              // cgroup pids.max: fork fails past it
  std::optional<double> cpu_max;                      // cgroup cpu.max, in CPUs (0.5 = half of one)
  // Not a limit the session reports: room for input not yet written, over Config::stdin_queue_max
  // (the fs helper takes a whole writeFile at once).
  std::optional<std::size_t> stdin_queue_bytes;

  bool needs_cgroup() const noexcept { return memory_max_bytes || pids_max || cpu_max; }
  bool any() const noexcept {
    return output_bytes_per_sec || retain_bytes || wall_timeout || idle_timeout || needs_cgroup();
  }
  // `over`'s set fields replace ours.
  SessionLimits merged(const SessionLimits& over) const {
    SessionLimits r = *this;
    if (over.output_bytes_per_sec) r.output_bytes_per_sec = over.output_bytes_per_sec;
    if (over.retain_bytes) r.retain_bytes = over.retain_bytes;
    if (over.wall_timeout) r.wall_timeout = over.wall_timeout;
    if (over.idle_timeout) r.idle_timeout = over.idle_timeout;
    if (over.memory_max_bytes) r.memory_max_bytes = over.memory_max_bytes;
    if (over.pids_max) r.pids_max = over.pids_max;
    if (over.cpu_max) r.cpu_max = over.cpu_max;
    if (over.stdin_queue_bytes) r.stdin_queue_bytes = over.stdin_queue_bytes;
    return r;
  }
};

struct Config {
  // After the leader is reaped, wait at most this long for output EOF before the verdict
  // and the `exited` event (Codex's 20 ms drain). Runs on a uv timer, never a sleep.
  milliseconds exit_drain{20};
  // After `exited`, wait at most this long for EOF before hanging up the output fds and
  // publishing `closed`. The foundation issue finishes a session within the exit drain, so
  // the default is 0; the protocol's closeDrainMs (1000) is set by the front doors that need it.
  milliseconds close_drain{0};
  // Escalation: SIGHUP/SIGTERM, then SIGKILL after this grace.
  milliseconds terminate_grace{1000};

  // Output retention per session: head = floor(max/2) bytes, tail = the rest.
  std::size_t retain_bytes = 1024 * 1024;
  // Most bytes read from one fd per readable event before yielding to other sessions.
  std::size_t read_burst_bytes = 1024 * 1024;
  // Most bytes queued for a child's stdin before writes fail with kLimit.
  std::size_t stdin_queue_max = 1024 * 1024;
  // Freed memory back to the kernel (glibc's malloc_trim, see ProcessManager): when the last
  // session is gone and sessions worth `trim_idle_bytes` were removed since the last trim;
  // while sessions remain, `trim_delay` after `trim_busy_bytes` were. 0 turns either off.
  std::size_t trim_idle_bytes = 64 * 1024;
  std::size_t trim_busy_bytes = 32u << 20;
  milliseconds trim_delay{2000};

  PtySize default_size{};
  ContainmentMode containment = ContainmentMode::kAuto;
  // The pid the cgroup subtree is named after (`uexec-<pid>-<n>`); 0: this process. A daemon
  // under a holder (holder/holder.h) names it after the holder and keeps the subtree it finds,
  // so a daemon started after a crash takes its predecessor's sessions' cgroups over.
  pid_t containment_owner = 0;
  // A holder keeps this manager's sessions for the next one if it dies (holder/holder.h):
  // sandboxes then outlive it too (SpawnSpec::die_with_manager).
  bool held = false;
  SessionLimits limits{};  // every session's, unless its request says otherwise
  AgentConfig agent{};
};

// Size of the loop-owned read slab: one read(2) returns at most this many bytes.
inline constexpr std::size_t kReadSlabSize = 64 * 1024;

}  // namespace uexec::base
