// verdict_json.h: how a session::Session's ending reads on the native protocol: the exit
// status, the sandbox's denial, the limit that ended it and what happened under its limits
// (docs/protocol.md §3.6 and §5).
//
// Written once and used by every message that reports an ending: process/exited, process/read,
// process/wait, process/list and process/closed (and approval/request's denial). Each message
// takes the groups it has always carried; a group's fields are null (or false) while the
// process runs, so a client sees the same members before and after the exit.
#pragma once

#include <nlohmann/json.hpp>

#include "policy/denial.h"
#include "session/session.h"

namespace uexec::rpc {

using nlohmann::json;

// {source, mechanism, detail}: one denial, as approval/request and the verdict show it.
json denial_json(const policy::SandboxDenied& denial);

// exitCode and signal (its name): null until the verdict exists.
void put_exit_status(json& out, const session::Session& s);

// sandboxDenied (false until denied), denial ({source, mechanism, detail} or null) and
// sandboxDenials (what the sandbox recorded; null until the verdict exists).
void put_denial(json& out, const session::Session& s);

// endedBy ({limit, message}), only when a limit ended it.
void put_ended_by(json& out, const session::Session& s);

// {oomKills, pidsMaxHits, cpuThrottledMs, throttledMs}: what happened under its limits.
json limit_events_json(const session::Session& s);

}  // namespace uexec::rpc
