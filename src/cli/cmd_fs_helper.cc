// cmd_fs_helper.cc: `uexec fs-helper`, the daemon's hands inside a sandbox (rpc/fs_methods.h).
// Not for people: the daemon starts it, under the sandbox a sandboxed fs/* call carries, with
// one operation as JSON on stdin; it performs it (rpc/fs_ops.h) and prints the outcome as
// one JSON document on stdout. Whatever the sandbox refuses comes back as the operation's
// own error (EACCES, EROFS), so a denial is reported, never a silent success.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "rpc/fs_ops.h"
#include "rpc/json_rpc.h"

namespace uexec::cli {

namespace {

// A writeFile's operation: a request line's worth (16 MiB) and then some.
constexpr std::size_t kMaxOperationBytes = 32u << 20;

void print(const nlohmann::json& outcome) {
  std::string text = rpc::encode_json(outcome);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int cmd_fs_helper(const std::vector<std::string>& args) {
  if (!args.empty() || ::isatty(0)) {
    std::fputs("uexec fs-helper: runs one file operation for the daemon (JSON on stdin); not for direct use\n", stderr);
    return kExitUsage;
  }
  std::string input;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (input.size() + static_cast<std::size_t>(n) > kMaxOperationBytes) {
      print({{"error", {{"code", -32600}, {"message", "the file operation is too large"}}}});
      return 0;
    }
    input.append(buf, static_cast<std::size_t>(n));
  }
  nlohmann::json op = nlohmann::json::parse(input, nullptr, false);
  if (!op.is_object()) {
    print({{"error", {{"code", -32602}, {"message", "fs-helper: the operation is not a JSON object"}}}});
    return 0;
  }
  input.clear();
  input.shrink_to_fit();
  print(rpc::perform_fs_op(op));
  return 0;
}

}  // namespace uexec::cli
