// handover_json.h: a session::Handover's facts as the holder keeps them (a JSON object it
// stores and returns unread), and the names of its fds on the wire (holder_wire.h).
// A field that is missing or of the wrong type reads as its default: a message from another
// version of uexec degrades to fewer facts, never to a crash.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "holder/holder_wire.h"
#include "pty/pty_process.h"
#include "session/handover.h"

namespace uexec::holder {

// Everything but the fds, the counters and the exit.
nlohmann::json facts_json(const session::Handover& h);
// The facts back into `h` (its id, fds, counters and exit untouched).
void read_facts(const nlohmann::json& facts, session::Handover& h);

// The fds of `held` with their names, for a hold message: [names], [fds] (valid ones only).
void name_fds(const pty::HeldFds& held, nlohmann::json& names, std::vector<int>& fds);
// The named fds of `m` into `out`.
void take_fds(Message& m, pty::AdoptedFds& out);

nlohmann::json exit_json(const pty::ExitStatus& st);
pty::ExitStatus read_exit(const nlohmann::json& j);

}  // namespace uexec::holder
