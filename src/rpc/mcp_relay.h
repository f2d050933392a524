// mcp_relay.h: `uexec mcp --connect`: the MCP front door, with its sessions in the daemon.
//
// It speaks MCP on stdio as McpServer does (both are McpEndpoints: the same envelope rules,
// protocol versions, tool list and schemas) but owns no ProcessManager: each tools/call becomes the native exec/*
// request of the same tool on one connection to `uexec serve` (docs/protocol.md §4.6), and the
// CallToolResult that comes back is passed through unchanged (only `structuredContent` is
// dropped for protocol versions before 2025-06-18). The sessions belong to the daemon, so they
// outlive this process and any client of the daemon can find them (exec/listSessions).
//
//   MCP client ──stdio──► McpRelay ──unix socket──► uexec serve (ExecServer → AgentService)
//   tools/call {name, arguments, _meta.progressToken?}
//        → exec/command | writeStdin | listSessions | killSession | readOutput
//          {…arguments, _meta:{progressToken:<the relay's request id>}}
//   ← result  (a JSON-RPC error becomes an isError result)      ← the exec/* result
//   ← notifications/progress {progressToken, progress, message} ← exec/outputDelta {delta}
//
// The daemon connection:
//
//   start() ─► kConnecting ─(initialize answered)─► kReady ─(EOF)─► kDown ─(timer)─► kConnecting
//                  │ (refused, or no daemon)                          ▲
//                  └─ first time: start()'s `ready` gets the Error ───┘ later: retried, 0.5 s → 5 s
//
// It initializes with detachedTtlMs -1 ("until killed"), and on a reconnect asks for its old
// session back (resumeSessionId), or takes a fresh one if the daemon has forgotten it. While
// the daemon is away, calls end at once with the isError result "uexec daemon unavailable: …",
// and so do the calls that were waiting when it went.
// Not relayed: notifications/cancelled drops the call's reply, but the daemon's wait runs to
// its end (the native protocol has no cancel; the yield is bounded anyway).
// Approvals: the relay declares `approvals` to the daemon, and each approval/request it gets is
// asked of the MCP client as elicitation/create when the client declared `elicitation`
// (mcp_elicitation.h), the answer mapped back ({decision}); otherwise it answers denied at
// once and adds to that call's result that approval was needed. A question still open when
// the daemon goes away (or withdraws it with approval/cancelled) is withdrawn from the client.
// Loop thread only.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "rpc/line_channel.h"
#include "rpc/mcp_elicitation.h"
#include "rpc/mcp_progress.h"
#include "rpc/mcp_protocol.h"

namespace uexec::rpc {

using nlohmann::json;

class McpRelay final : public McpEndpoint {
 public:
  // `socket_path`: the daemon's Unix socket; `send` writes one MCP message (one line) to the
  // client.
  McpRelay(loop::Loop& loop, std::string socket_path, std::function<void(std::string)> send);
  ~McpRelay();
  McpRelay(const McpRelay&) = delete;
  McpRelay& operator=(const McpRelay&) = delete;

  // Connects to the daemon and initializes. `ready` runs once, from the loop, with the outcome
  // of that first handshake; a connect failure comes back at once instead.
  [[nodiscard]] base::Result<void> start(std::function<void(base::Result<void>)> ready);
  // MCP input lines from the client go to handle_line / handle_oversize (McpEndpoint).
  // Stops relaying and reconnecting; the daemon keeps the sessions. Safe in any callback.
  void stop();

  static constexpr std::chrono::milliseconds kFirstRetry{500}, kMaxRetry{5000};

 private:
  enum class State { kConnecting, kReady, kDown, kStopped };
  struct Pending {
    json mcp_id;             // the client's request id
    json progress_token;     // the client's progressToken, or null
    std::string tool;
    std::string cmd;         // exec_command's command line, to match approval/requests
    std::string note;        // approval was needed and could not be asked: said in the result
    std::optional<ProgressReporter> progress;  // made at the first output, when progress_token is set
    bool cancelled = false;  // notifications/cancelled: drop the reply
  };

  [[nodiscard]] base::Result<void> connect();
  void on_daemon_line(std::string_view line);
  void on_daemon_eof();
  void on_initialized(const json& reply);
  void schedule_reconnect();
  void send_daemon(std::string line);  // one encoded message (json_rpc.h)
  void on_approval_request(const json& id, const json& params);

  void call_tool(const json& id, const std::string& name, const json& args, const json& progress_token) override;
  void cancel(const std::string& request_key) override;
  std::string unavailable(const std::string& why) const;

  loop::Loop& loop_;
  std::string socket_path_;
  std::function<void(base::Result<void>)> ready_;  // until the first handshake ends
  State state_ = State::kDown;
  std::unique_ptr<LineChannel> daemon_;
  std::unique_ptr<LineChannel> dead_;  // the channel that just hit EOF: freed off its callback
  loop::Timer retry_;
  std::chrono::milliseconds retry_delay_ = kFirstRetry;
  std::string session_id_;      // the daemon session, for resumeSessionId
  std::int64_t next_id_ = 1;    // ids of requests to the daemon
  std::int64_t init_id_ = 0;    // the initialize in flight
  bool resuming_ = false;
  std::map<std::int64_t, Pending> pending_;    // daemon request id → call
  std::map<std::string, std::int64_t> by_mcp_; // client request id (dumped) → daemon id
  std::map<std::string, std::string> approvals_;  // daemon approvalId → our elicitation id
};

}  // namespace uexec::rpc
