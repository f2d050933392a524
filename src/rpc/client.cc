#include "rpc/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace uexec::rpc {

using base::Error;
using base::Result;

namespace {

// The errno named `name` ("ENOENT"), 0 when unknown.
int errno_from_name(const std::string& name) {
  for (int e = 1; e < 4096; ++e)
    if (const char* n = strerrorname_np(e); n && name == n) return e;
  return 0;
}

}  // namespace

Error Client::error_of(const json& error) {
  std::string message = error.is_object() ? error.value("message", "error") : "error";
  const json data = error.is_object() && error.contains("data") ? error["data"] : json();
  // The daemon's spawn failure, as the spawn itself reported it (what `run` would print).
  if (data.is_object() && data.value("kind", "") == "spawnFailed") {
    std::string syscall = data.value("syscall", ""), path = data.value("path", "");
    int err = errno_from_name(data.value("errno", ""));
    if (!syscall.empty() && err != 0)
      return Error{base::Errc::kExecFailed, err, path.empty() ? syscall : syscall + " " + path};
  }
  return Error{base::Errc::kInvalidArgument, 0, message};
}

Result<Client> Client::connect_unix(const std::string& path, long detached_ttl_ms) {
  Client c;
  c.fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!c.fd_) return Error::sys("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Error::invalid("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(c.fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return Error::sys("connect " + path + " (is `uexec serve` running?)");
  auto init = c.call("initialize", {{"clientName", "uexec-cli"}, {"detachedTtlMs", detached_ttl_ms}});
  if (!init) return std::move(init).error();
  c.session_id_ = init->value("sessionId", "");
  std::string note = json{{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}}.dump() + "\n";
  if (::write(c.fd_.get(), note.data(), note.size()) < 0) return Error::sys("write");
  return c;
}

bool Client::read_some(int timeout_ms) {
  if (eof_) return false;
  pollfd p{fd_.get(), POLLIN, 0};
  int rc = ::poll(&p, 1, timeout_ms);
  if (rc <= 0) return true;
  char tmp[65536];
  ssize_t n = ::read(fd_.get(), tmp, sizeof tmp);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buf_.append(tmp, static_cast<std::size_t>(n));
  json m;
  while (take_line(&m)) (m.contains("method") ? notes_ : replies_).push_back(std::move(m));
  return true;
}

bool Client::take_line(json* out) {
  auto nl = buf_.find('\n');
  if (nl == std::string::npos) return false;
  std::string line = buf_.substr(0, nl);
  buf_.erase(0, nl + 1);
  *out = json::parse(line, nullptr, false);
  if (out->is_discarded()) *out = json::object();
  return true;
}

bool Client::pump(int timeout_ms) { return read_some(timeout_ms); }

Result<json> Client::call(const std::string& method, json params, int timeout_ms) {
  long id = next_id_++;
  std::string msg = json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}.dump() + "\n";
  for (std::size_t off = 0; off < msg.size();) {
    ssize_t n = ::write(fd_.get(), msg.data() + off, msg.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::sys("write to the daemon");
    off += static_cast<std::size_t>(n);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    for (auto it = replies_.begin(); it != replies_.end(); ++it) {
      if (!it->contains("id") || (*it)["id"] != id) continue;
      json r = std::move(*it);
      replies_.erase(it);
      if (r.contains("error")) return error_of(r["error"]);
      return r["result"];
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return Error{base::Errc::kClosed, ETIMEDOUT, method + ": no answer from the daemon"};
    if (!read_some(static_cast<int>(left))) return Error{base::Errc::kClosed, 0, method + ": the daemon closed the connection"};
  }
}

std::optional<json> Client::next_notification(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 1000000000 : timeout_ms);
  while (notes_.empty()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || !read_some(static_cast<int>(left))) break;
  }
  if (notes_.empty()) return std::nullopt;
  json m = std::move(notes_.front());
  notes_.pop_front();
  return m;
}

}  // namespace uexec::rpc
