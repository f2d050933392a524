// host.h: the running parts of a long-lived front door (`serve`, `exec-server`, `mcp`), built
// and torn down in one place.
//
// A Host owns the loop, the ProcessManager, the AgentService (the agent tools) and, for the
// native protocol, the ExecServer; then the front doors the command opens on them: the daemon's
// Unix socket, a WebSocket listener, stdio (the native protocol or MCP). run() turns the loop
// until SIGTERM, SIGINT, SIGHUP or stdin's EOF stops the host, then tears it down.
//
// Stopping: every front door stops taking input (the Unix listener closes, which detaches its
// clients; the WebSocket listener stops; stdin is no longer read; MCP's pending approvals are
// denied, nobody is left to answer them); the service and the server end their processes with
// the usual escalation (exec-server's stdin EOF without a grace: SIGKILL at once, as Codex
// does); once the server (for MCP: the service) is done and stdout is flushed, the loop stops.
// Teardown: the signal watchers, the front doors, the server, the service, the manager, the
// loop: each goes before what it uses.
// Upgrade (under a holder, when it asks): within one loop callback, so that nothing is read
// any more, every held session hands over what it holds (Session::carry), the Unix and
// WebSocket listeners go with them, the journal writes what it queued, and the process leaves
// at once with _exit: nothing is ended or unlinked, since it all belongs to the next daemon
// now. If the hand-over fails, the callback returns and this daemon goes on. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_service.h"
#include "base/config.h"
#include "base/result.h"
#include "cli/sandbox_flags.h"
#include "cli/user_config.h"
#include "holder/holder_link.h"
#include "journal/session_journal.h"
#include "loop/loop.h"
#include "loop/signal_watcher.h"
#include "rpc/exec_server.h"
#include "rpc/line_channel.h"
#include "rpc/mcp_server.h"
#include "rpc/unix_server.h"
#include "session/process_manager.h"
#if UEXEC_HAVE_LWS
#include "web/ws_server.h"
#endif

namespace uexec::cli {

// SIGTERM, SIGINT and SIGHUP run `stop` on the loop; keep the result alive while it runs.
std::vector<std::unique_ptr<loop::SignalWatcher>> on_stop_signals(loop::Loop& loop, std::function<void()> stop);

struct HostOptions {
  const char* who = "uexec";                                 // prefixes its messages: "uexec serve"
  const SandboxFlags* sandbox = nullptr;                     // the agent tools' default sandbox
  const UserConfig* config = nullptr;                        // [sessions] and [agent]; else the defaults
  std::optional<std::chrono::milliseconds> terminate_grace;  // SIGTERM to SIGKILL; else the default
  std::optional<rpc::ExecServerOptions> exec_server;         // the native protocol's server; none for MCP
  // Keep every process's output on disk under `journal_root` (journal/): the daemon's --journal.
  std::optional<journal::Limits> journal;
  std::string journal_root;  // empty: journal::default_root()
  // The sessions end with this process even when it is killed (session/owner_lifeline.h):
  // `uexec mcp` alone and `uexec exec-server`; not the daemon, whose sessions outlive it.
  bool sessions_end_with_host = false;
  // Under a holder (holder/holder.h): its pid, which the sessions' cgroup subtree is named
  // after (base::Config::containment_owner), and sandboxes then outlive this process
  // (base::Config::held); 0: no holder.
  pid_t containment_owner = 0;
};

class Host {
 public:
  // Builds the loop, manager, service and server; nullptr after saying why on stderr (a bad
  // UEXEC_CONTAINMENT).
  static std::unique_ptr<Host> create(const HostOptions& options);
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  loop::Loop& loop() { return loop_; }
  // Where the journal is written (HostOptions::journal), or "" without one.
  std::string journal_root() const { return journal_ ? journal_->writer().root() : std::string(); }
  // The native protocol's server (HostOptions::exec_server was set).
  rpc::ExecServer& server() { return *server_; }

  // The daemon's Unix socket at `path`, on the server (the listener an upgraded daemon left,
  // when take_holder found one).
  [[nodiscard]] base::Result<void> listen_unix(const std::string& path);
#if UEXEC_HAVE_LWS
  // A WebSocket listener on the server (on the socket an upgraded daemon left, when it listens
  // where `options` say); returns the port it listens on.
  [[nodiscard]] base::Result<int> listen_ws(const web::WsOptions& options);
#endif
  // Under a holder (holder/holder.h): reads what it hands over on `link`, takes over the
  // sessions an earlier daemon left (the manager, then the server), and from now on tells the
  // holder of every session. Returns how many were taken over; `on_lost` runs if the holder
  // goes later. Call before the front doors listen.
  [[nodiscard]] base::Result<std::size_t> take_holder(base::UniqueFd link, std::function<void()> on_lost);
  // The server on stdin/stdout; stdin's EOF stops the host, with SIGKILL at once if `kill_at_eof`.
  [[nodiscard]] base::Result<void> serve_stdio(bool kill_at_eof);
  // MCP on stdin/stdout, on the service; stdin's EOF stops the host.
  // `structured_content`: McpEndpoint::set_structured_content.
  [[nodiscard]] base::Result<void> serve_mcp_stdio(bool structured_content);

  // Runs once when the host begins to stop, before any front door closes.
  std::function<void()> on_stopping;

  // Turns the loop until the host has stopped (SIGTERM, SIGINT, SIGHUP, stdin's EOF), then
  // tears it down.
  void run();

 private:
  Host(const HostOptions& options, const base::Config& cfg);
  void stop(bool kill_now);
  void upgrade();
  void teardown();

  std::vector<std::string> env_;
  std::string cwd_;
  loop::Loop loop_;
  std::unique_ptr<journal::SessionJournal> journal_;  // outlives pm_, which tells it of each session
  std::unique_ptr<session::OwnerLifeline> lifeline_;  // outlives pm_ too: disarmed once it ended them
  std::unique_ptr<holder::HolderLink> holder_;        // outlives pm_ too: a recorder of it
  std::unique_ptr<session::ProcessManager> pm_;
  std::unique_ptr<agent::AgentService> exec_;
  std::unique_ptr<rpc::ExecServer> server_;
  // The front doors.
  std::unique_ptr<rpc::UnixServer> unix_;
#if UEXEC_HAVE_LWS
  std::unique_ptr<web::WsServer> ws_;
#endif
  std::unique_ptr<rpc::LineChannel> stdio_;
  std::unique_ptr<rpc::ExecServer::Connection> stdio_conn_;
  std::unique_ptr<rpc::McpServer> mcp_;

  std::vector<std::unique_ptr<loop::SignalWatcher>> stop_watchers_;
  bool stopping_ = false;
};

}  // namespace uexec::cli
