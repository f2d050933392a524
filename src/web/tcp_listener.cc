#include "web/tcp_listener.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <cstring>

#include "base/log.h"

namespace uexec::web {

using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

Error cannot_listen(const std::string& host, int port, const std::string& why) {
  return Error{base::Errc::kLimit, 0,
               "cannot listen on " + host + ":" + std::to_string(port) + ": " + why + "; pick another with --ws"};
}

// host:port as a socket address: a numeric address, else an interface's first IPv4 address.
Result<sockaddr_storage> address_of(const std::string& host, int port, socklen_t* len) {
  sockaddr_storage ss{};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) == 0 && res) {
    std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    ::freeaddrinfo(res);
    return ss;
  }
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || host != i->ifa_name) continue;
      auto* in = reinterpret_cast<sockaddr_in*>(&ss);
      std::memcpy(in, i->ifa_addr, sizeof(sockaddr_in));
      in->sin_port = htons(static_cast<std::uint16_t>(port));
      *len = sizeof(sockaddr_in);
      ::freeifaddrs(ifs);
      return ss;
    }
    ::freeifaddrs(ifs);
  }
  return cannot_listen(host, port, "not an IP address, nor an interface with an IPv4 address");
}

int port_of(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
  return -1;
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET)
    return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr == reinterpret_cast<const sockaddr_in&>(b).sin_addr.s_addr;
  if (a.ss_family == AF_INET6)
    return std::memcmp(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr,
                       &reinterpret_cast<const sockaddr_in6&>(b).sin6_addr, sizeof(in6_addr)) == 0;
  return false;
}

Result<int> bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) return Error::sys("getsockname");
  return port_of(ss);
}

}  // namespace

TcpListener::TcpListener(loop::Loop& loop, UniqueFd fd, int port)
    : loop_(loop), fd_(std::move(fd)), port_(port), resume_(loop) {}

Result<std::unique_ptr<TcpListener>> TcpListener::bind(loop::Loop& loop, const std::string& host, int port) {
  socklen_t len = 0;
  auto addr = address_of(host, port, &len);
  if (!addr) return std::move(addr).error();
  UniqueFd fd(::socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return Error::sys("socket for " + host + ":" + std::to_string(port));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), len) != 0 || ::listen(fd.get(), 128) != 0) {
    switch (int err = errno) {
      case EADDRINUSE: return cannot_listen(host, port, "the port is in use");
      case EADDRNOTAVAIL: return cannot_listen(host, port, "the address is not one of this machine's");
      case EACCES: return cannot_listen(host, port, "permission denied (a port below 1024 needs privileges)");
      default: return cannot_listen(host, port, std::strerror(err));
    }
  }
  auto bound = bound_port(fd.get());
  if (!bound) return std::move(bound).error();
  return std::unique_ptr<TcpListener>(new TcpListener(loop, std::move(fd), *bound));
}

Result<std::unique_ptr<TcpListener>> TcpListener::inherit(loop::Loop& loop, UniqueFd fd, const std::string& host,
                                                          int port) {
  const std::string where = host + ":" + std::to_string(port);
  int listening = 0;
  socklen_t optlen = sizeof listening;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) < 0 || !listening)
    return Error::invalid("the inherited WebSocket fd is not a listening socket");
  socklen_t len = 0;
  auto want = address_of(host, port, &len);
  if (!want) return std::move(want).error();
  sockaddr_storage have{};
  socklen_t have_len = sizeof have;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&have), &have_len) < 0) return Error::sys("getsockname");
  if (!same_address(have, *want) || (port != 0 && port_of(have) != port))
    return Error::invalid("the inherited WebSocket listener (port " + std::to_string(port_of(have)) +
                          ") is not on " + where);
  if (auto fl = ::fcntl(fd.get(), F_GETFL); fl < 0 || ::fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) < 0)
    return Error::sys("fcntl O_NONBLOCK on the inherited WebSocket listener");
  const int bound = port_of(have);
  return std::unique_ptr<TcpListener>(new TcpListener(loop, std::move(fd), bound));
}

Result<void> TcpListener::start(std::function<void(UniqueFd)> on_accept) {
  on_accept_ = std::move(on_accept);
  const int fd = fd_.get();
  auto poll = loop::make_handle<uv_poll_t>([&](uv_poll_t* p) { return uv_poll_init(loop_.get(), p, fd); },
                                           "uv_poll_init WebSocket listener");
  if (!poll) return std::move(poll).error();
  poll_ = std::move(poll).value();
  poll_.get()->data = this;
  if (int rc = uv_poll_start(poll_.get(), UV_READABLE, &TcpListener::on_readable); rc < 0)
    return Error::uv(rc, "uv_poll_start WebSocket listener");
  return {};
}

void TcpListener::on_readable(uv_poll_t* h, int status, int /*events*/) noexcept {
  auto* self = static_cast<TcpListener*>(h->data);
  if (self && status >= 0) self->accept_all();
}

void TcpListener::accept_all() {
  // A bounded batch per wake-up: a flood of connections cannot hold the loop.
  for (int i = 0; i < 64; ++i) {
    UniqueFd c(::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (c) {
      on_accept_(std::move(c));
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      UEXEC_LOG(kWarn, "WebSocket listener: accept: {}; pausing 100 ms", std::strerror(errno));
      uv_poll_stop(poll_.get());
      resume_.start(std::chrono::milliseconds(100),
                    [this] { (void)uv_poll_start(poll_.get(), UV_READABLE, &TcpListener::on_readable); });
    }
    return;  // EAGAIN: all taken
  }
}

}  // namespace uexec::web
