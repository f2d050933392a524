// probes.h: looking at a session's processes from the outside, through /proc.
//
// For `until: {port}` (is some process of the session listening on a TCP port?) and for
// the ANSI stripping `until: {regex}` matches on. Pure reads; no libuv.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace uexec::agent {

struct Listener {
  int port = 0;
  pid_t pid = 0;
  std::string comm;
};

// A TCP LISTEN socket on `port` (0: any) held by a process of session `sid` (its setsid
// leader's pid), IPv4 or IPv6.
std::optional<Listener> find_listener(pid_t sid, int port);

// Removes CSI and OSC escape sequences, other two-byte escapes, and '\r'.
std::string strip_ansi(std::string_view text);

}  // namespace uexec::agent
