// process_output_methods.h: reading a process (docs/protocol.md §3.3, §4.3 and §4.5): process/read
// (a replay from afterSeq, optionally a long poll with waitMs), process/wait (until a
// condition holds: ProcessWait, over agent::UntilWait) and process/snapshot (the screen model).
//
// Long polls are waiters of the asking session (LongPolls), at most max_waits per connection:
// past it the request gets limitReached at once.
// Loop thread only.
#pragma once

#include <nlohmann/json.hpp>

#include "rpc/connection.h"
#include "rpc/exec_server_options.h"
#include "rpc/process_table.h"

namespace uexec::rpc {

class ProcessOutputMethods {
 public:
  ProcessOutputMethods(ProcessTable& table, const ExecServerOptions& options) noexcept
      : table_(table), opts_(options) {}

  void read(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  void wait(Connection& c, const nlohmann::json& id, const nlohmann::json& params);
  // `seq` is the last output applied, so a subscribe with afterSeq = seq continues without a
  // gap or a duplicate.
  void snapshot(Connection& c, const nlohmann::json& id, const nlohmann::json& params);

 private:
  // True (and limitReached sent) when `c` already has max_waits long polls.
  bool waits_full(Connection& c, const nlohmann::json& id);

  ProcessTable& table_;
  const ExecServerOptions& opts_;
};

}  // namespace uexec::rpc
