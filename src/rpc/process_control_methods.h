// process_control_methods.h: acting on a running process (docs/protocol.md §3.4, §3.5 and §4.2):
// process/write (with writeId memory, and waiting for room when the child is not reading),
// process/closeStdin, process/signal, process/terminate and process/resize.
//
// Each asks SharingMethods::may_control first: a viewer without granted input only watches.
// A write the child has no room for waits as a ticking waiter of the session (LongPolls),
// never blocking the loop.
// Loop thread only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "rpc/connection.h"
#include "rpc/process_table.h"

namespace uexec::rpc {

class ProcessControlMethods {
 public:
  explicit ProcessControlMethods(ProcessTable& table) noexcept : table_(table) {}

  void write(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  void close_stdin(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  void signal(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  void terminate(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  void resize(Connection& c, const nlohmann::json& id, const nlohmann::json& params);

  // The signals process/signal takes, by their protocol names (initialize lists them).
  static const std::vector<std::pair<std::string, int>>& signal_names();

 private:
  ProcessTable& table_;
};

}  // namespace uexec::rpc
