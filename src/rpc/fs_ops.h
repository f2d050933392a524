// fs_ops.h: the file operations behind the fs/* methods (docs/protocol.md §3.9), as Codex's
// exec-server 0.169.0 performs them, on native absolute paths.
//
// One operation in, one outcome out, both JSON: the operation is the method's params with
// every path already a native absolute path ({"method":"fs/readFile","path":"/a/b"}), the
// outcome {"result": …} or {"error": {"code", "message", "errno"?}}. The same function runs
// on libuv's thread pool for an unsandboxed call and inside `uexec fs-helper` for a sandboxed
// one (fs_methods.h), so both give the same answers; JSON is what crosses the helper's pipes.
//
// Errors follow Codex: the path (or a parent) missing is -32004, a permission refused or a
// rule of the method broken is -32600, any other failure of the system is -32603; the
// message is strerror with "(os error N)". Paths in results (fs/canonicalize) are native.
//
// Blocking, and owns nothing: never call it on the loop thread.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

namespace uexec::rpc {

// fs/readFile refuses a larger file: its base64 answer is one line, held whole by the daemon
// (Codex allows 512 MiB). Larger files are for process/start (cat, split, dd).
inline constexpr std::size_t kReadFileMaxBytes = 64u << 20;
// The deepest tree fs/remove and fs/copy walk; deeper is refused with ELOOP.
inline constexpr int kMaxTreeDepth = 1024;
// Codex's code for a path that does not exist.
inline constexpr int kPathNotFound = -32004;

// Performs `op` (see above); never throws.
nlohmann::json perform_fs_op(const nlohmann::json& op) noexcept;

}  // namespace uexec::rpc
