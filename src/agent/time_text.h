// time_text.h: times as the agent tools show them to a model: "14:03:27" (local wall clock),
// "3m12s" ago, and seconds as a double for wall_time_seconds. Pure.
#pragma once

#include <chrono>
#include <string>

namespace uexec::agent {

// HH:MM:SS in local time.
std::string clock_text(std::chrono::system_clock::time_point t);
// "42s", "3m12s" or "2h5m".
std::string age_text(std::chrono::steady_clock::duration d);
// `d` in seconds.
inline double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace uexec::agent
