// Unit tests for holder::write_carry / read_carry (holder/carry_file.h): what an upgrading
// daemon carries round-trips, and a file of another version or cut short is refused whole.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "holder/carry_file.h"

using namespace uexec;

namespace {
session::Carried sample(uint64_t seq0) {
  session::OutputRing ring(32);
  uint64_t seq = seq0;
  for (int i = 0; i < 20; ++i) {
    std::string s = "chunk " + std::to_string(i) + "\n";
    ring.append(seq++, session::Stream::kStdout, std::as_bytes(std::span(s.data(), s.size())), 5u * i);
  }
  session::Carried c;
  c.ring = ring.image();
  c.screen = std::string("\x1b[H\x1b[2Jhello");
  c.screen_seq = seq - 1;
  c.screen_exact = false;
  c.pending_input = std::string("typed\0ahead", 11);
  c.next_seq = seq;
  c.size = base::PtySize{33, 101};
  return c;
}
}  // namespace

TEST_CASE("carried sessions round-trip: rings, screens, input, and a finished one's facts and end") {
  holder::CarriedSession live{sample(1), -1, ""};
  holder::CarriedSession done{sample(100), 4242, R"({"argv":["true"],"owner":{"x":1}})"};
  done.state.exit = pty::ExitStatus{0, 9, true};
  done.state.screen.reset();
  auto fd = holder::write_carry({{"live", live}, {"done", done}});
  REQUIRE(fd);
  auto back = holder::read_carry(fd->get());
  REQUIRE(back);
  REQUIRE(back->size() == 2);
  const auto& l = back->at("live");
  CHECK(l.facts.empty());
  CHECK(l.state.screen == live.state.screen);
  CHECK(l.state.screen_seq == live.state.screen_seq);
  CHECK_FALSE(l.state.screen_exact);
  CHECK(l.state.pending_input == live.state.pending_input);
  CHECK_FALSE(l.state.exit);
  CHECK(l.state.next_seq == live.state.next_seq);
  CHECK(l.state.size == base::PtySize{33, 101});
  session::OutputRing a(1), b(1);
  REQUIRE(a.restore(live.state.ring));
  REQUIRE(b.restore(l.state.ring));
  CHECK(a.render() == b.render());
  CHECK(a.offset_after_seq(10) == b.offset_after_seq(10));
  const auto& d = back->at("done");
  CHECK(d.pid == 4242);
  CHECK(d.facts == done.facts);
  REQUIRE(d.state.exit);
  CHECK(d.state.exit->signal == 9);
  CHECK(d.state.exit->core_dumped);
  CHECK_FALSE(d.state.screen);
}

TEST_CASE("a carry file cut short, of another version, or not ours is refused whole") {
  auto fd = holder::write_carry({{"k", holder::CarriedSession{sample(1), -1, ""}}});
  REQUIRE(fd);
  std::string bytes(static_cast<std::size_t>(::lseek(fd->get(), 0, SEEK_END)), '\0');
  REQUIRE(::pread(fd->get(), bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  auto file_of = [](const std::string& text) {
    base::UniqueFd f(::memfd_create("t", MFD_CLOEXEC));
    REQUIRE(::write(f.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    return f;
  };
  for (std::size_t cut : {bytes.size() - 1, bytes.size() / 2, std::size_t{20}}) {
    auto r = holder::read_carry(file_of(bytes.substr(0, cut)).get());
    CHECK_FALSE(r);
  }
  std::string other = bytes;
  other[12] = static_cast<char>(other[12] + 1);  // the version, just past the magic line
  CHECK_FALSE(holder::read_carry(file_of(other).get()));
  CHECK_FALSE(holder::read_carry(file_of(std::string(64, 'x')).get()));
  // A count that claims more than the file holds is refused, not allocated.
  std::string huge = bytes;
  huge[16] = '\xff';
  huge[17] = '\xff';
  huge[18] = '\xff';
  huge[19] = '\x7f';
  CHECK_FALSE(holder::read_carry(file_of(huge).get()));
}
