// sharing_methods.h: one process watched by several protocol sessions (docs/protocol.md §8):
// process/subscribe and process/unsubscribe (with the "viewer" and "owner" roles),
// process/grant, and the rule every other handler asks before acting on a process
// (may_control).
//
// Any session of a server may subscribe to any process, each from its own cursor, up to
// max_subscribers sessions. A session that subscribes as a viewer may only watch until the
// owner grants it input; while the owner is away (no connection) no one can grant, so viewers
// may act.
// Loop thread only.
#pragma once

#include <nlohmann/json.hpp>

#include "rpc/connection.h"
#include "rpc/exec_server_options.h"
#include "rpc/output_pump.h"
#include "rpc/process_table.h"

namespace uexec::rpc {

class SharingMethods {
 public:
  SharingMethods(ProcessTable& table, OutputPump& pump, const ExecServerOptions& options) noexcept
      : table_(table), pump_(pump), opts_(options) {}

  // process/subscribe (`on`) and process/unsubscribe.
  void subscribe(Connection& c, const nlohmann::json& id, const nlohmann::json& params, bool on);
  // process/grant: the owner lets a viewer type (input: true) or takes it back.
  void grant(Connection& c, const nlohmann::json& id, const nlohmann::json& params);

  // False (and the readOnly error sent) when `c`'s session may not `what` process `p`.
  // `input`: granted input allows it (writes, signals); else it is the owner's alone.
  static bool may_control(Connection& c, const nlohmann::json& id, ProtocolProcess& p, const char* what, bool input);
  // Subscribes `c`'s session to `p` at the end of its output, unless it already is; false
  // (and limitReached sent) when `p` has max_subscribers already.
  bool subscribe_at_end(Connection& c, const nlohmann::json& id, ProtocolProcess& p);

 private:
  bool subscribers_full(Connection& c, const nlohmann::json& id, ProtocolProcess& p);

  ProcessTable& table_;
  OutputPump& pump_;
  const ExecServerOptions& opts_;
};

}  // namespace uexec::rpc
