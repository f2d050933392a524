// process_address.h: how a native request names a process (docs/protocol.md §4.4): by
// `processId` within the connection's protocol session, or within another session of the same
// server when it carries `sessionId` (an extension: viewers, the web UI, `uexec attach`).
#pragma once

#include <nlohmann/json.hpp>

#include "rpc/connection.h"
#include "rpc/process_table.h"

namespace uexec::rpc {

// The session `params` address: `sessionId`'s, else `c`'s own. A ParamError for an unknown one.
ProtocolSession& addressed_session(ProcessTable& table, Connection& c, const nlohmann::json& params);

// The process `params` address, or null after answering `id` with unknownProcess (and the
// tombstone's reason).
ProtocolProcess* addressed_process(ProcessTable& table, Connection& c, const nlohmann::json& id,
                                   const nlohmann::json& params);

}  // namespace uexec::rpc
