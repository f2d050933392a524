// holder_wire.h: the messages between the holder and its daemon (holder.h).
//
// One JSON object per SOCK_SEQPACKET message, its "op" naming it, with at most kMaxFds fds
// (SCM_RIGHTS) in the order its "fds" array names them. A body larger than kInlineBytes (a
// command line near ARG_MAX) travels in a sealed memfd passed as one more fd, the body then
// saying {"memfd": true}. Received fds are close-on-exec. The messages (docs/design.md, "The holder"):
//
//   daemon -> holder   hold {key, pid, slot, meta, fds}    keep copies of a session's fds
//                      meta {key, meta}                    its facts changed (a name)
//                      release {key}                       it finished: let go
//                      stdin {key, fds:[stdin]}            upgrade: a pipe's stdin, for the next daemon
//                      carried {fds:[carry, unix?, ws?]}   upgrade: everything is handed over, leaving
//                      standby {}                          a daemon started for an upgrade is ready
//   holder -> daemon   hello {wire, slots, holder, fds:[table]}   first; the counters' table
//                      adopt {key, pid, slot, meta, exit?, fds}   a session to take over
//                      release {key} | stdin {key, fds:[stdin]} | exit {key, exit}
//                                                          an upgrade's news of an adopt sent early
//                      adopted {fds:[carry?, unix?, ws?]}  no more to take over; an upgrade's extras
//                      exited {pid, exit}                  a taken-over session's leader ended
//                      upgrade {}                          hand over and leave (SIGUSR2)
// Both sides ignore ops they do not know and read missing fields as their defaults, so a
// daemon and a holder of different versions degrade (no upgrade, fewer facts), never crash;
// `wire` says which messages the holder knows (kWireVersion; absent: 1, before upgrades).
// "unix" and "ws" are the listening sockets an upgrade passes on (a holder of wire 2 that
// predates "ws" drops it, and the next daemon binds its port again).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"

namespace uexec::holder {

inline constexpr int kWireVersion = 2;
inline constexpr std::size_t kMaxFds = 8;
// The listening sockets an upgrade hands over, by their names in "carried" and "adopted".
inline constexpr const char* kListeners[] = {"unix", "ws"};
inline constexpr std::size_t kInlineBytes = 64 * 1024;

struct Message {
  nlohmann::json body;
  std::vector<base::UniqueFd> fds;  // in the order body["fds"] names them
  // The fd named `name` in body["fds"], taken (invalid when absent).
  base::UniqueFd take(const std::string& name);
};

// Sends one message. kClosed when the peer is gone; on a non-blocking socket whose buffer is
// full, kSystem with sys_errno EAGAIN (nothing was sent).
[[nodiscard]] base::Result<void> send(int sock, const nlohmann::json& body, std::span<const int> fds = {});
// The same with the body already encoded (encode(), or text known to be one JSON object).
[[nodiscard]] base::Result<void> send_text(int sock, const std::string& text, std::span<const int> fds = {});
std::string encode(const nlohmann::json& body);
// The next message. `wait`: block for it; otherwise kAgain-like kLimit when none is waiting.
// kClosed at the peer's end; kInvalidArgument for a message that is not ours (it is dropped).
[[nodiscard]] base::Result<Message> receive(int sock, bool wait);

}  // namespace uexec::holder
