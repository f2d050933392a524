// agent_service.h: the agent tools over the session core: exec_command, write_stdin,
// kill_session, read_output and list_sessions (docs/agent.md), shared by MCP and the native
// exec/* methods. C++ types in and out; the rpc layer turns them into JSON.
//
// AgentService checks each tool's arguments, spawns, writes input and signals, and joins the
// parts that each hold one concern:
//
//   registry.h         ids, the records (AgentSession: the agent's view of a Session), the
//                      grace ──► counted ──► ended ──► tombstone lifecycle, names
//   call_queue.h       the running calls (call.h), FIFO per session, their turns and timers
//   until.h            when a call's wait ends: the rules of docs/agent.md §2.3 and `until`
//   response_builder.h the response of a call whose wait ended
//   stdin_input.h      how write_stdin's chars and keys reach the session
//   read_output.h, list_sessions.h   the two queries
//
// A call's life: accepted (arguments checked) ──► queued on its session ──► its turn: input
// written, t0, the wait starts ──► re-evaluated on every wake (output, exited, closed, its
// one timer) ──► response built from the owner's reader, reader advanced ──► reply. A
// cancelled call consumes nothing, and sessions belong to the service from spawn on: a
// cancelled or abandoned call never kills its process. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/call_queue.h"
#include "agent/list_sessions.h"
#include "agent/read_output.h"
#include "agent/registry.h"
#include "agent/response.h"
#include "agent/until.h"
#include "base/config.h"
#include "base/result.h"
#include "loop/timer.h"
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

class AgentService {
 public:
  // `base_env` is the front door's environment ("NAME=value"); `default_cwd` resolves workdirs.
  AgentService(session::ProcessManager& pm, std::vector<std::string> base_env, std::string default_cwd);
  ~AgentService();
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  // Each replies exactly once (possibly before returning), unless cancelled.
  CallId exec_command(ExecParams p, Reply done);
  CallId write_stdin(WriteParams p, Reply done);
  CallId kill_session(KillParams p, Reply done);
  [[nodiscard]] base::Result<Response> read_output(const ReadParams& p);
  // The daemon keeps a journal under `root`: read_output falls back to it, and the ids of the
  // agent sessions it holds are never issued again (so an id names one session across restarts).
  void use_journal(std::string root);
  ListResult list_sessions(const ListParams& p);
  // Ends the call's wait without replying; the process keeps running and nothing is consumed.
  void cancel(CallId id);
  // Takes over agent session `id`, which an earlier daemon started and the manager has just
  // taken over under the same id (holder/): write_stdin, read_output and the rest reach it.
  [[nodiscard]] base::Result<void> adopt(long id);
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
  std::optional<policy::PermissionProfile> sandbox_profile_;
  policy::Backend sandbox_backend_ = policy::Backend::kAuto;
  policy::ApprovalPolicy approval_policy_ = policy::ApprovalPolicy::kNever;

  Call& new_call(CallKind kind, long sid, Reply done);
  void begin(Call& c);
  void evaluate(Call& c);  // the wait's rules (until.h); at the end, finish
  void finish(Call& c);    // builds the response and replies (or hands it to the orchestrator)
  void fail(Call& c, base::Error e);
  void stream_deltas(Call& c, const AgentSession& a);
  void check_shutdown();

  base::Result<long> start_session(const ExecParams& p, Call* c);
  void run_orchestrated(Call& c, ExecParams p, const std::string& cwd);
  void on_activity(AgentSession& a);
  void log_event(SessionEvent e);

  session::ProcessManager& pm_;
  loop::Loop& loop_;
  base::AgentConfig cfg_;
  std::vector<std::string> base_env_;
  std::string default_cwd_;
  SessionRegistry registry_;  // agent sessions by id, their lifecycle and tombstones
  static constexpr std::size_t kMaxJournaledIds = 45000;  // of the 99000 agent ids
  JournalLookup journal_;     // use_journal; an empty root without one
  CallQueue calls_;           // the running calls, FIFO per session
  loop::Timer shutdown_timer_;
  std::function<void()> shutdown_done_;
  Clock::time_point shutdown_deadline_{};
  std::deque<SessionEvent> events_;
};

}  // namespace uexec::agent
