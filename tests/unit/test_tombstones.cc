// Unit tests for session::Tombstones: bounded, newest first, notes packed and cut to fit.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "session/tombstones.h"

using uexec::session::Ending;
using uexec::session::Tombstones;

TEST_CASE("tombstones: a key answers with its reason, exit and notes; an unknown key with nothing") {
  Tombstones t(4, 64);
  CHECK_FALSE(t.find(7).has_value());
  Ending e{"killed", uexec::pty::ExitStatus{0, 15, false}, {}, {}};
  t.add(7, e, {"build", "", "make -j"});
  auto got = t.find(7);
  REQUIRE(got.has_value());
  CHECK(std::string(got->ending.reason) == "killed");
  REQUIRE(got->ending.status.has_value());
  CHECK(got->ending.status->signal == 15);
  CHECK(got->notes[0] == "build");
  CHECK(got->notes[1].empty());
  CHECK(got->notes[2] == "make -j");
  CHECK(got->notes[3].empty());
  CHECK(t.contains(7));
  CHECK_FALSE(t.contains(8));
}

TEST_CASE("tombstones: capacity bounds the store; the oldest entry goes first") {
  Tombstones t(3);
  for (Tombstones::Key k = 1; k <= 5; ++k) t.add(k, {"exited", {}, {}, {}});
  CHECK(t.size() == 3);
  CHECK_FALSE(t.contains(1));
  CHECK_FALSE(t.contains(2));
  CHECK(t.contains(3));
  CHECK(t.contains(5));
  std::vector<Tombstones::Key> order;
  t.newest_first([&](const Tombstones::Entry& e) {
    order.push_back(e.key);
    return true;
  });
  CHECK(order == std::vector<Tombstones::Key>{5, 4, 3});
  order.clear();
  t.newest_first([&](const Tombstones::Entry& e) {
    order.push_back(e.key);
    return order.size() < 2;
  });
  CHECK(order == std::vector<Tombstones::Key>{5, 4});
}

TEST_CASE("tombstones: a key added again answers with its last end") {
  Tombstones t(8);
  t.add(Tombstones::key_of("s1/p"), {"exited", {}, {}, {}});
  t.add(Tombstones::key_of("s1/q"), {"pruned", {}, {}, {}});
  t.add(Tombstones::key_of("s1/p"), {"killed", {}, {}, {}});
  CHECK(std::string(t.find(Tombstones::key_of("s1/p"))->ending.reason) == "killed");
  CHECK(std::string(t.find(Tombstones::key_of("s1/q"))->ending.reason) == "pruned");
  CHECK_FALSE(t.contains(Tombstones::key_of("s1/r")));
}

TEST_CASE("tombstones: notes share the slot's bytes in order, cut at code point boundaries") {
  Tombstones t(2, 10);
  t.add(1, {"exited", {}, {}, {}}, {"abcdefg", "gh\xc3\xa9jk", "lost"});  // é would cross byte 10
  auto e = t.find(1);
  REQUIRE(e.has_value());
  CHECK(e->notes[0] == "abcdefg");
  CHECK(e->notes[1] == "gh");
  CHECK(e->notes[2] == "l");  // what the earlier notes left
  // Slots do not bleed into each other, and a wrapped slot is rewritten whole.
  t.add(2, {"exited", {}, {}, {}}, {"0123456789xyz"});
  t.add(3, {"exited", {}, {}, {}}, {"z"});
  CHECK(t.find(2)->notes[0] == "0123456789");
  CHECK(t.find(3)->notes[0] == "z");
  CHECK(t.find(3)->notes[1].empty());
  CHECK_FALSE(t.contains(1));
}

TEST_CASE("tombstones: capacity 0 remembers nothing; note_bytes 0 keeps reasons only") {
  Tombstones none(0, 16);
  none.add(1, {"exited", {}, {}, {}}, {"x"});
  CHECK(none.size() == 0);
  CHECK_FALSE(none.contains(1));
  Tombstones bare(2);
  bare.add(1, {"denied", {}, {}, {}}, {"dropped"});
  CHECK(std::string(bare.find(1)->ending.reason) == "denied");
  CHECK(bare.find(1)->notes[0].empty());
}
