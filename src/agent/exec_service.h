// exec_service.h: the agent tools over the session core: exec_command, write_stdin,
// kill_session, read_output and list_sessions (docs/agent.md), shared by MCP and, later,
// the native exec/* methods. C++ types in and out; the rpc layer turns them into JSON.
//
// A call is a Waiter on one session. Calls on a session run FIFO (the session's queue); the
// front call takes its t0 when it gets the turn, and its wait ends by the first rule of §2.3
// that holds, re-evaluated on every wake (output, exited, closed, its one timer):
//   1. closed;  2. exited, and closed or min(t_x + 50 ms, D);  3. an `until` condition
//   (after the post-write settle);  4. the deadline D.
// The response is built at return from the owner's reader to the ring's end (minus a held-back
// partial UTF-8 sequence), and only then does the reader advance, so a cancelled call
// consumes nothing. Sessions belong to the service from spawn on: a cancelled or abandoned
// call never kills its process.
//
//   spawn ──► grace (150 ms) ──► counted (64 max, LRU pruning, warning at 60)
//                │ exit inside the grace: never counted
//   exit delivered to the agent ──► ended: output readable for ended_linger ──► tombstone
//
// Tombstones (4096) answer for ended ids with why they ended. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/awaiting_input.h"
#include "agent/envelope.h"
#include "agent/probes.h"
#include "agent/registry.h"
#include "agent/until.h"
#include "base/config.h"
#include "base/result.h"
#include "loop/timer.h"
#include "policy/denial.h"
#include "policy/orchestrator.h"
#include "policy/sandbox_attempt.h"
#include "session/process_manager.h"

namespace uexec::agent {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Error kinds of the agent tools (§2.8); the message is in Error::context.
enum class ToolErrc {
  kMissingCommandLine,
  kCreateProcess,
  kUnknownSession,
  kStdinClosed,
  kWriteToStdin,
  kUnknownKey,
  kInvalidParam,
  kNameInUse,
  kSecretWouldEcho,
  kLoginDisabled,
};

// What the output of a response shows: the new raw bytes (decoded), or the terminal's
// screen after them (tty only: a TUI such as top, less or vim as text).
enum class View { kRaw, kScreen };

struct ExecParams {
  std::string cmd;
  std::optional<std::string> workdir;
  std::optional<std::string> shell;
  std::optional<bool> login;
  bool tty = false;
  bool pipe_stdin = false;
  std::optional<long> yield_time_ms;
  std::optional<long> max_output_tokens;
  std::optional<long> rows, cols;
  View view = View::kRaw;
  std::optional<std::string> name;
  bool replace = false;
  std::optional<Until> until;  // nullopt: the default set {exit, awaiting_input}
  std::optional<long> timeout_ms, idle_timeout_ms;
  // "require_escalated": the model asks to run without the sandbox (refused under policy never).
  bool require_escalated = false;
  std::string justification;  // the model's reason, shown when approval is asked
  // Who decides approvals for this call (the protocol session's orchestrator: it asks the
  // client and caches approved-for-session answers). Null: nothing is asked, as policy never.
  std::shared_ptr<policy::ToolOrchestrator> approvals;
  // Test hook: the sandbox attempt to run under (overrides the service's default sandbox).
  std::optional<policy::SandboxAttempt> attempt;
  // Streaming (§3.6): while the call waits, its output as text pieces (MCP progress).
  std::function<void(std::string_view)> on_delta;
};

struct WriteParams {
  std::optional<long> session_id;
  std::optional<std::string> name;
  std::string chars;
  std::vector<std::string> keys;
  std::optional<long> yield_time_ms;
  std::optional<long> max_output_tokens;
  bool close_stdin = false;
  std::optional<Until> until;
  bool secret = false;
  View view = View::kRaw;
  std::function<void(std::string_view)> on_delta;  // as ExecParams::on_delta
};

struct KillParams {
  std::optional<long> session_id;
  std::optional<std::string> name;
  std::string signal = "terminate";
  long grace_ms = 1000;
  std::optional<long> max_output_tokens;
};

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

struct ListParams {
  bool all = false;
  bool include_exited = true;
};

// One response of exec_command / write_stdin / kill_session / read_output: the text
// envelope plus the structured fields (§2.7).
// The screen behind a View::kScreen response.
struct ScreenInfo {
  int rows = 0, cols = 0;
  int cursor_row = 0, cursor_col = 0;  // 0-based
  bool alt_screen = false;
  std::string title;
  bool exact = true;  // false: some output was evicted before the model saw it
};

struct Response {
  std::string text;
  std::string chunk_id;
  double wall_time_seconds = 0;
  std::string output;
  std::optional<int> exit_code;
  std::optional<long> session_id;  // null once the exit is reported
  std::uint64_t original_token_count = 0;
  long session = 0;
  std::optional<std::string> name;
  std::string state;  // running | awaiting_input | exited
  std::optional<std::string> signal;
  bool core_dumped = false;
  std::optional<std::string> killed_by;
  std::optional<std::string> fired;  // exit | regex | idle | port | awaiting_input
  std::optional<std::string> match_text;
  std::optional<std::uint64_t> match_offset;
  std::optional<Listener> match_port;
  std::optional<AwaitingInput> awaiting_input;
  std::uint64_t range_offset = 0, range_length = 0;
  std::vector<Omitted> omitted;
  bool output_closed = false;
  bool input_delivered = true;
  std::size_t stdin_pending_bytes = 0;
  std::vector<std::string> warnings;
  std::optional<policy::SandboxDenied> sandbox_denied;
  std::optional<ScreenInfo> screen;  // set for View::kScreen
  // Descendants that outlived the leader: still running (killed when the session closes) or,
  // once it closed, killed then.
  std::vector<session::LingeringProcess> lingering;
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

using Reply = std::function<void(base::Result<Response>)>;

// One entry of the event log: each session has exactly one start and one end, both naming
// the exec_command call that started it (the end too, even after that call returned).
struct SessionEvent {
  enum class Kind { kStart, kEnd };
  Kind kind = Kind::kStart;
  long session = 0;
  CallId call = 0;
  std::string cmd;
  std::optional<int> exit_code;        // end only
  std::optional<std::string> signal;   // end only: the signal that ended it
  std::optional<std::string> killed_by;
};

class ExecService {
 public:
  // `base_env` is the front door's environment ("NAME=value"); `default_cwd` resolves workdirs.
  ExecService(session::ProcessManager& pm, std::vector<std::string> base_env, std::string default_cwd);
  ~ExecService();
  ExecService(const ExecService&) = delete;
  ExecService& operator=(const ExecService&) = delete;

  // Each replies exactly once (possibly before returning), unless cancelled.
  CallId exec_command(ExecParams p, Reply done);
  CallId write_stdin(WriteParams p, Reply done);
  CallId kill_session(KillParams p, Reply done);
  [[nodiscard]] base::Result<Response> read_output(const ReadParams& p);
  ListResult list_sessions(const ListParams& p);
  // Ends the call's wait without replying; the process keeps running and nothing is consumed.
  void cancel(CallId id);
  // Escalation on every live session; `done` runs when all finished or the grace is over.
  void shutdown(std::function<void()> done);

  std::size_t live_sessions() const noexcept;  // counted and not yet delivered as ended
  // Every exec_command runs under this profile (`uexec mcp --sandbox MODE`). Under approval
  // policy never, or for a call without ExecParams::approvals, a denial is reported in the
  // envelope and a require_escalated call is refused. Otherwise the call's orchestrator runs
  // it (docs/sandbox.md §6): it may ask first (escalation, untrusted), and after a denial ask
  // to retry once without the sandbox; the call then answers with the retry's output.
  void set_default_sandbox(policy::PermissionProfile profile, policy::Backend backend,
                           policy::ApprovalPolicy approval = policy::ApprovalPolicy::kNever) {
    sandbox_profile_ = std::move(profile);
    sandbox_backend_ = backend;
    approval_policy_ = approval;
  }
  policy::ApprovalPolicy approval_policy() const noexcept { return approval_policy_; }
  const base::AgentConfig& config() const noexcept { return cfg_; }

  // The event log: the last 1024 events, and a hook that sees each as it happens.
  const std::deque<SessionEvent>& events() const noexcept { return events_; }
  std::function<void(const SessionEvent&)> on_event;
  // Called just before a session's record goes for good (tombstone, shutdown): whoever
  // shares its Session (the protocol's process view of agent sessions) lets go of it.
  std::function<void(long id)> on_forget;

 private:
  struct Call;

  std::optional<policy::PermissionProfile> sandbox_profile_;
  policy::Backend sandbox_backend_ = policy::Backend::kAuto;
  policy::ApprovalPolicy approval_policy_ = policy::ApprovalPolicy::kNever;

  Call* new_call(int kind, long sid, Reply done);
  void enqueue(Call* c);
  void begin(Call* c);
  void evaluate(Call* c);
  void finish(Call* c);
  long remove_call(Call* c);  // returns the call's session id; does not start the next call
  void start_next(long sid);
  void check_shutdown();
  void fail(Call* c, base::Error e);
  Response build_response(AgentSession& a, Call& c);
  base::Result<std::pair<std::string, ScreenInfo>> screen_view(session::Session& s, std::size_t budget);
  static std::string screen_line(const ScreenInfo& info);
  std::optional<AwaitingInput> probe_awaiting(AgentSession& a);
  void stream_deltas(Call& c, AgentSession& a);

  base::Result<long> start_session(const ExecParams& p, Call* c);
  void run_orchestrated(Call* c, ExecParams p, const std::string& cwd);
  void on_activity(AgentSession& a);
  void log_event(SessionEvent e);

  session::ProcessManager& pm_;
  loop::Loop& loop_;
  base::AgentConfig cfg_;
  std::vector<std::string> base_env_;
  std::string default_cwd_;
  SessionRegistry registry_;  // agent sessions by id, their lifecycle and tombstones
  std::unordered_map<long, std::deque<CallId>> queues_;  // per session id: its calls, FIFO
  std::unordered_map<CallId, std::unique_ptr<Call>> calls_;
  CallId next_call_ = 1;
  loop::Timer shutdown_timer_;
  std::function<void()> shutdown_done_;
  Clock::time_point shutdown_deadline_{};
  std::deque<SessionEvent> events_;
};

}  // namespace uexec::agent
