// client.h: a small blocking JSON-RPC client for the daemon's Unix socket, used by the CLI
// (`uexec ls | start | attach | send | kill | logs`). One request at a time; notifications
// that arrive meanwhile are queued for next_notification(). No libuv: the CLI's own loop is
// a poll() over the socket and the terminal.
#pragma once

#include <deque>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"

namespace uexec::rpc {

using nlohmann::json;

class Client {
 public:
  // Connects and runs initialize/initialized. `detached_ttl_ms` -1 keeps what this client
  // starts running after it disconnects (until killed).
  [[nodiscard]] static base::Result<Client> connect_unix(const std::string& path, long detached_ttl_ms = 10000);

  // A request: its result, or an Error whose context is the server's message (a spawn
  // failure comes back as the spawn's own Error: kExecFailed, its errno, "execve PATH").
  [[nodiscard]] base::Result<json> call(const std::string& method, json params, int timeout_ms = 10000);
  // The next notification, waiting up to timeout_ms (-1: forever); nullopt on timeout or EOF.
  std::optional<json> next_notification(int timeout_ms);
  // Reads what is available without blocking; false when the server closed the connection.
  bool pump(int timeout_ms);
  bool has_notification() const noexcept { return !notes_.empty(); }
  int fd() const noexcept { return fd_.get(); }
  const std::string& session_id() const noexcept { return session_id_; }

 private:
  static base::Error error_of(const json& error);
  bool read_some(int timeout_ms);
  bool take_line(json* out);

  base::UniqueFd fd_;
  std::string buf_;
  std::deque<json> notes_;
  std::deque<json> replies_;
  long next_id_ = 1;
  bool eof_ = false;
  std::string session_id_;
};

}  // namespace uexec::rpc
