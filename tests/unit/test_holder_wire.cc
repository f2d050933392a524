// Unit tests for holder::send / holder::receive (holder/holder_wire.h): JSON and named fds over
// a SOCK_SEQPACKET pair, a body too large for one datagram, the peer's end, a stranger's message.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "holder/handover_json.h"
#include "holder/holder_wire.h"

using namespace uexec;
using nlohmann::json;

namespace {
struct Pair {
  base::UniqueFd a, b;
  Pair() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    a.reset(sv[0]);
    b.reset(sv[1]);
  }
};
}  // namespace

TEST_CASE("a message carries its fds by name, close-on-exec") {
  Pair p;
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  base::UniqueFd r(pipe_fds[0]), w(pipe_fds[1]);
  int fds[2] = {r.get(), w.get()};
  REQUIRE(holder::send(p.a.get(), {{"op", "hold"}, {"key", "s/p"}, {"fds", {"out0", "pidfd"}}}, fds));
  auto m = holder::receive(p.b.get(), true);
  REQUIRE(m);
  CHECK(m->body["key"] == "s/p");
  base::UniqueFd got_w = m->take("pidfd");
  base::UniqueFd got_r = m->take("out0");
  CHECK(!m->take("status"));
  REQUIRE(got_r);
  REQUIRE(got_w);
  CHECK((::fcntl(got_r.get(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(::write(got_w.get(), "x", 1) == 1);
  char c = 0;
  CHECK(::read(r.get(), &c, 1) == 1);
  CHECK(c == 'x');
}

TEST_CASE("a body past one datagram travels in a memfd, with the fds still named") {
  Pair p;
  std::string big(3 * holder::kInlineBytes, 'a');
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  base::UniqueFd r(pipe_fds[0]), w(pipe_fds[1]);
  int fd = w.get();
  REQUIRE(holder::send(p.a.get(), {{"op", "meta"}, {"argv", {big}}, {"fds", {"out0"}}}, {&fd, 1}));
  auto m = holder::receive(p.b.get(), true);
  REQUIRE(m);
  CHECK(m->body["argv"][0].get<std::string>().size() == big.size());
  CHECK(m->fds.size() == 1);
  CHECK(m->take("out0"));
}

TEST_CASE("no message waiting, the peer's end, and a message that is not ours") {
  Pair p;
  auto none = holder::receive(p.b.get(), false);
  REQUIRE(!none);
  CHECK(none.error().code == base::Errc::kLimit);
  REQUIRE(::send(p.a.get(), "not json", 8, 0) == 8);
  auto bad = holder::receive(p.b.get(), true);
  REQUIRE(!bad);
  CHECK(bad.error().code == base::Errc::kInvalidArgument);
  p.a.reset();
  auto closed = holder::receive(p.b.get(), true);
  REQUIRE(!closed);
  CHECK(closed.error().code == base::Errc::kClosed);
}

TEST_CASE("a session's facts round-trip, and a wrong type reads as the default") {
  session::Handover h;
  h.tty = true;
  h.size = {40, 120};
  h.argv = {"bash", "-c", "echo hi"};
  h.cwd = "/tmp";
  h.name = "dev";
  h.sandboxed = true;
  h.sandbox_kind = "linux-landlock";
  h.started_wall_ms = 1234567;
  h.late_deny = {"/w/*.key"};
  auto view = std::make_shared<pty::FileView>();
  view->writable = {"/w"};
  view->judges_reads = true;
  h.fds.files = view;
  json facts = holder::facts_json(h);
  session::Handover back;
  holder::read_facts(facts, back);
  CHECK(back.tty);
  CHECK(back.size == h.size);
  CHECK(back.argv == h.argv);
  CHECK(back.name == "dev");
  CHECK(back.sandbox_kind == "linux-landlock");
  CHECK(back.started_wall_ms == 1234567);
  CHECK(back.late_deny == h.late_deny);
  REQUIRE(back.fds.files);
  CHECK(back.fds.files->writable == view->writable);
  CHECK(back.fds.files->judges_reads);
  facts["argv"] = 7;
  facts["rows"] = "many";
  session::Handover odd;
  holder::read_facts(facts, odd);
  CHECK(odd.argv.empty());
  CHECK(odd.size.rows == 24);
}
