// The WebSocket server's own listening socket (web/tcp_listener.h), on real sockets: bound,
// accepting on the loop, refused with its reason, and inherited only where it listens.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <vector>

#include "helpers/loop_fixture.h"
#include "web/tcp_listener.h"

using namespace uexec;
using uexec::base::UniqueFd;
using uexec::test::LoopFixture;
using namespace std::chrono_literals;

namespace {

// A client connection to 127.0.0.1:port; invalid when refused.
UniqueFd connect_to(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return {};
  return fd;
}

}  // namespace

TEST_CASE_FIXTURE(LoopFixture, "tcp listener: binds a free port and hands each accepted connection over") {
  auto l = web::TcpListener::bind(loop, "127.0.0.1", 0);
  REQUIRE_MESSAGE(l.has_value(), (l ? "" : l.error().message()));
  auto& listener = **l;
  CHECK(listener.port() > 0);
  std::vector<UniqueFd> accepted;
  REQUIRE(listener.start([&](UniqueFd c) { accepted.push_back(std::move(c)); }).has_value());
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(connect_to(listener.port()));
  for (auto& c : clients) CHECK(c.valid());
  CHECK(run_until([&] { return accepted.size() == 3; }, 5s));
  // The accepted socket is the client's peer: bytes go through.
  REQUIRE(::write(clients[0].get(), "x", 1) == 1);
  char b = 0;
  bool got = false;  // run_until asks its predicate once more at the end: read once
  CHECK(run_until([&] { return got || (got = ::read(accepted[0].get(), &b, 1) == 1); }, 5s));
  CHECK(b == 'x');
}

TEST_CASE_FIXTURE(LoopFixture, "tcp listener: a taken port, a foreign address and a non-address are refused, saying why") {
  auto first = web::TcpListener::bind(loop, "127.0.0.1", 0);
  REQUIRE(first.has_value());
  auto taken = web::TcpListener::bind(loop, "127.0.0.1", (*first)->port());
  REQUIRE_FALSE(taken.has_value());
  CHECK(taken.error().code == base::Errc::kLimit);
  CHECK(taken.error().message().find("the port is in use") != std::string::npos);
  auto foreign = web::TcpListener::bind(loop, "192.0.2.1", 0);  // TEST-NET-1: no machine has it
  REQUIRE_FALSE(foreign.has_value());
  CHECK(foreign.error().message().find("not one of this machine's") != std::string::npos);
  auto name = web::TcpListener::bind(loop, "no-such-interface", 0);
  REQUIRE_FALSE(name.has_value());
  CHECK(name.error().message().find("nor an interface") != std::string::npos);
  auto lo = web::TcpListener::bind(loop, "lo", 0);  // an interface name, as lws took them
  CHECK_MESSAGE(lo.has_value(), (lo ? "" : lo.error().message()));
}

TEST_CASE_FIXTURE(LoopFixture, "tcp listener: an upgrade's socket is taken only where this daemon would listen") {
  auto old = web::TcpListener::bind(loop, "127.0.0.1", 0);
  REQUIRE(old.has_value());
  const int port = (*old)->port();
  // A connection made while no daemon accepts waits in the backlog, and the heir accepts it.
  UniqueFd early = connect_to(port);
  REQUIRE(early.valid());
  UniqueFd passed(::dup((*old)->fd()));
  old->reset();
  auto other_port = web::TcpListener::inherit(loop, UniqueFd(::dup(passed.get())), "127.0.0.1", port + 1);
  CHECK_FALSE(other_port.has_value());
  auto other_addr = web::TcpListener::inherit(loop, UniqueFd(::dup(passed.get())), "::1", port);
  CHECK_FALSE(other_addr.has_value());
  UniqueFd not_listening(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  CHECK_FALSE(web::TcpListener::inherit(loop, std::move(not_listening), "127.0.0.1", 0).has_value());
  auto heir = web::TcpListener::inherit(loop, std::move(passed), "127.0.0.1", port);
  REQUIRE_MESSAGE(heir.has_value(), (heir ? "" : heir.error().message()));
  CHECK((*heir)->port() == port);
  int accepted = 0;
  REQUIRE((*heir)->start([&](UniqueFd) { ++accepted; }).has_value());
  CHECK(run_until([&] { return accepted == 1; }, 5s));
}
