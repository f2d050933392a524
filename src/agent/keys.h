// keys.h: named keys for write_stdin (docs/agent.md §2.5), as the bytes a terminal sends.
//
// "enter", "up", "ctrl-c", "C-c", "^C", "page-up"… → bytes. tty sessions get terminal bytes
// (enter is CR; arrows use the SS3 form when the program asked for application cursor
// keys); pipe sessions get LF for enter. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uexec::agent {

// The bytes for `name`, or nullopt for an unknown name. `app_cursor`: DECCKM is on.
std::optional<std::string> key_bytes(std::string_view name, bool tty, bool app_cursor);
// The canonical name ("ctrl-c" for "C-c", "^C", "CTRL-C"), or empty when unknown.
std::string canonical_key(std::string_view name);
// Every accepted canonical name, for error messages and the tool schema.
const std::vector<std::string>& key_names();

}  // namespace uexec::agent
