// process_lifecycle_methods.h: starting processes and listing them (docs/protocol.md §3.1, §4.1
// and §4.2): process/start and process/list.
//
// process/start decodes its params into a policy::ExecRequest (argv, the environment, cwd, tty
// and size, limits, the sandbox), applies the protocol's rules (named processes are reused or
// replaced, processIds are unique per session, at most max_processes), asks the
// ProcessManager to start it and puts the view in the ProcessTable. Its reply goes out before
// any notification for the process can: those come from later loop callbacks.
// Loop thread only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rpc/connection.h"
#include "rpc/exec_server_options.h"
#include "rpc/output_pump.h"
#include "rpc/process_table.h"
#include "rpc/sharing_methods.h"
#include "session/process_manager.h"

namespace uexec::rpc {

class ProcessLifecycleMethods {
 public:
  // `server_env` and `cwd` are what a request without env or cwd gets.
  ProcessLifecycleMethods(session::ProcessManager& pm, ProcessTable& table, OutputPump& pump, SharingMethods& sharing,
                          const ExecServerOptions& options, const std::vector<std::string>& server_env,
                          const std::string& cwd) noexcept
      : pm_(pm), table_(table), pump_(pump), sharing_(sharing), opts_(options), env_(server_env), cwd_(cwd) {}

  void start(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  void list(Connection& c, const nlohmann::json& id, const nlohmann::json& params);

 private:
  session::ProcessManager& pm_;
  ProcessTable& table_;
  OutputPump& pump_;
  SharingMethods& sharing_;
  const ExecServerOptions& opts_;
  const std::vector<std::string>& env_;
  const std::string& cwd_;
};

}  // namespace uexec::rpc
