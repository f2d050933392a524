// session_methods.h: a connection's protocol session and what it learns about the server
// (docs/protocol.md §2 and §3.7): initialize (a new session, or resuming a detached one under
// `uexec serve`), environment/info and environment/status.
//
// initialize answers with the session id, the environment, and the capabilities: the
// extension methods the method table lists, the signals, the sandbox modes and the backends
// this host can run, the size limits. A resumed session gets everything its processes
// produced while it was away, pushed from its cursors.
// Loop thread only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "rpc/connection.h"
#include "rpc/exec_server_options.h"
#include "rpc/method_table.h"
#include "rpc/output_pump.h"
#include "rpc/process_table.h"
#include "session/process_manager.h"

namespace uexec::rpc {

class SessionMethods {
 public:
  // `cwd` is the server's directory (environmentInfo.cwd); `methods` lists the extensions.
  SessionMethods(session::ProcessManager& pm, ProcessTable& table, OutputPump& pump, const ExecServerOptions& options,
                 const std::string& cwd) noexcept
      : pm_(pm), table_(table), pump_(pump), opts_(options), cwd_(cwd) {}

  // The table whose extensions initialize advertises (set once, after the table is built).
  void set_method_table(const MethodTable& methods) noexcept { methods_ = &methods; }

  void initialize(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  void environment_info(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  void environment_status(Connection& c, const nlohmann::json& id, const nlohmann::json& params);

 private:
  nlohmann::json environment() const;

  session::ProcessManager& pm_;
  ProcessTable& table_;
  OutputPump& pump_;
  const ExecServerOptions& opts_;
  const std::string& cwd_;
  const MethodTable* methods_ = nullptr;
};

}  // namespace uexec::rpc
