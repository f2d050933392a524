#include "holder/holder_wire.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace uexec::holder {

using base::Errc;
using base::Error;
using base::Result;
using base::UniqueFd;
using nlohmann::json;

base::UniqueFd Message::take(const std::string& name) {
  const json& names = body.contains("fds") && body["fds"].is_array() ? body["fds"] : json::array();
  for (std::size_t i = 0; i < names.size() && i < fds.size(); ++i)
    if (names[i].is_string() && names[i].get<std::string>() == name) return std::move(fds[i]);
  return {};
}

namespace {

Result<void> send_raw(int sock, const std::string& text, std::span<const int> fds) {
  if (fds.size() > kMaxFds + 1) return Error::invalid("holder message: too many fds");
  iovec iov{const_cast<char*>(text.data()), text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * (kMaxFds + 1))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (::sendmsg(sock, &msg, MSG_NOSIGNAL) >= 0) return {};
    if (errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN) return Error{Errc::kClosed, errno, "holder link"};
    return Error::sys("sendmsg holder link");
  }
}

}  // namespace

std::string encode(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

Result<void> send(int sock, const json& body, std::span<const int> fds) { return send_text(sock, encode(body), fds); }

Result<void> send_text(int sock, const std::string& text, std::span<const int> fds) {
  if (text.size() <= kInlineBytes) return send_raw(sock, text, fds);
  // Too large for one datagram: the body rides in a sealed memfd.
  UniqueFd mem(::memfd_create("uexec-holder-message", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!mem) return Error::sys("memfd_create holder message");
  for (std::size_t off = 0; off < text.size();) {
    ssize_t n = ::write(mem.get(), text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::sys("write holder message");
    off += static_cast<std::size_t>(n);
  }
  ::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  std::vector<int> all(fds.begin(), fds.end());
  all.push_back(mem.get());
  return send_raw(sock, R"({"memfd":true})", all);
}

Result<Message> receive(int sock, bool wait) {
  // One buffer per thread, never zeroed: a hand-over of 1000 sessions receives 1000 messages.
  thread_local std::unique_ptr<char[]> buf = std::make_unique_for_overwrite<char[]>(kInlineBytes + 1);
  iovec iov{buf.get(), kInlineBytes + 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * (kMaxFds + 1))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (wait ? 0 : MSG_DONTWAIT));
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return Error{Errc::kLimit, 0, "no holder message waiting"};
  if (n < 0) return Error{Errc::kClosed, errno, "recvmsg holder link"};
  Message out;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      out.fds.emplace_back(fd);
    }
  }
  if (n == 0) return Error{Errc::kClosed, 0, "holder link closed"};
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) return Error::invalid("holder message cut short");
  out.body = json::parse(buf.get(), buf.get() + n, nullptr, /*allow_exceptions=*/false);
  if (out.body.is_object() && out.body.value("memfd", false)) {
    if (out.fds.empty()) return Error::invalid("holder message: memfd missing");
    UniqueFd mem = std::move(out.fds.back());
    out.fds.pop_back();
    struct stat st {};
    if (::fstat(mem.get(), &st) != 0 || st.st_size <= 0 || st.st_size > (64 << 20))
      return Error::invalid("holder message: bad memfd");
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    if (::pread(mem.get(), text.data(), text.size(), 0) != st.st_size) return Error::invalid("holder message: short memfd");
    out.body = json::parse(text, nullptr, false);
  }
  if (!out.body.is_object() || !out.body.contains("op") || !out.body["op"].is_string())
    return Error::invalid("holder message is not ours");
  return out;
}

}  // namespace uexec::holder
