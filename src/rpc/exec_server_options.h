// exec_server_options.h: the native protocol server's tunables (docs/protocol.md §7 and §8),
// set by the front door (`uexec serve`, `uexec exec-server`) and read by the server's parts.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace uexec::rpc {

struct ExecServerOptions {
  bool daemon = false;                                // sockets: sessions outlive connections
  // How long a detached session waits for its resume before its processes are ended (a
  // client may ask for less, or -1 on a daemon: until killed). Codex's resume design: 30 s.
  std::chrono::milliseconds detached_ttl{30000};
  // How long a closed process stays listed and readable before it is forgotten (its id then
  // answers with its tombstone); nullopt: until the daemon ends. Codex's exec-server: 30 s.
  std::optional<std::chrono::milliseconds> exited_retention{std::chrono::milliseconds{30000}};
  std::size_t high_watermark = 4u << 20, low_watermark = 1u << 20;
  std::size_t read_max_bytes = 4u << 20;
  std::size_t max_processes = 4096;
  std::size_t max_subscribers = 64;                   // subscribing sessions per process
  std::size_t max_waits = 1024;                       // pending long polls per connection
  std::chrono::milliseconds stall_timeout{60000};     // stallTimeoutMs; 0: never close
  std::chrono::milliseconds approval_timeout{600000};  // approvalTimeoutMs: then denied
  // fs/* (fs_methods.h): served only when set (a fuzzer or a test that must not touch files
  // leaves it off); sandboxed calls run `<fs_helper> fs-helper` (the uexec binary).
  bool file_system = false;
  std::string fs_helper;
};

}  // namespace uexec::rpc
