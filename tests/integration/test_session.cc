// Session lifecycle on real PTYs: the exit/EOF join, the drain race, grandchildren holding
// the slave, large output byte-exact, UTF-8 across reads, job control in bash.
#include <doctest/doctest.h>
#include <signal.h>
#include <termios.h>

#include <cstdint>

#include "integration/session_helpers.h"

using namespace uexec;
using namespace uexec::test;

namespace {

std::uint64_t fnv1a(std::uint64_t h, const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<std::uint64_t>(p[i]);
    h *= 1099511628211ull;
  }
  return h;
}

// The background job (sh forking `sleep 30`, caught anywhere between fork and exec), killed
// when the session closed.
bool has_lingering_sleep(const session::Session& s) {
  return s.lingering().size() == 1 && s.lingering()[0].killed;
}

constexpr std::uint64_t kFnvBasis = 14695981039346656037ull;

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = pattern_byte(i);
  return s;
}

}  // namespace

TEST_CASE("a fast-exiting child's last 64 KiB is never lost (exit-before-data race, 200 runs)") {
  ManagerFixture f;
  const std::string expected = pattern(65536);
  int failures = 0;
  for (int i = 0; i < 200; ++i) {
    bool tty = i % 4 != 3;  // mostly PTYs, some pipes
    auto& s = f.start(request({pty_child(), "exit-fast", "3", "65536"}, tty));
    REQUIRE(f.wait_finished(s));
    std::string got = all_output(s);
    if (got != expected || s.verdict()->status.code != 3) {
      ++failures;
      MESSAGE("run " << i << (tty ? " tty" : " pipes") << ": got " << got.size() << " bytes, exit "
                     << s.verdict()->status.describe() << (s.output_eof() ? ", EOF" : ", hung up"));
    }
    CHECK(s.exited_seq() > 0);
    CHECK(s.closed_seq() > s.exited_seq());
    CHECK(s.output_eof());
    f.pm->remove(s.id());
  }
  CHECK(failures == 0);
}

TEST_CASE("a grandchild holding the slave does not hang the session; output is kept") {
  ManagerFixture f;
  auto& s = f.start(request({pty_child(), "grandchild-holds"}));
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(f.run_until([&] { return s.exited(); }));
  auto t_exit = std::chrono::steady_clock::now();
  REQUIRE(f.wait_finished(s, 5s));
  auto after_exit = std::chrono::steady_clock::now() - t_exit;
  // The bound is the 20 ms exit drain; 2 s of margin tolerates a loaded machine while
  // still failing a session that waits for the grandchild's 30 s.
  CHECK(after_exit < 2s);
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
  std::string out = all_output(s);
  CHECK(out.find("gc ") != std::string::npos);
  CHECK(s.verdict()->status.code == 0);
  CHECK(!s.output_eof());  // closed by the hang-up, not by EOF
  pid_t gc = std::atoi(out.substr(out.find("gc ") + 3).c_str());
  REQUIRE(gc > 0);
  ::kill(gc, SIGKILL);  // not our child (it re-parents to init): nothing to reap here
}

TEST_CASE("64 MiB of output arrives byte-exact with bounded memory") {
  ManagerFixture f;
  constexpr std::size_t kTotal = 64u << 20;
  for (bool tty : {true, false}) {
    CAPTURE(tty);
    auto& s = f.start(request({pty_child(), "burst", std::to_string(kTotal)}, tty));
    std::uint64_t h = kFnvBasis;
    session::Offset cursor = 0;
    std::uint64_t gaps = 0;
    std::size_t peak_memory = 0;
    auto sub = s.output().subscribe([&] {
      auto r = s.output().read_from(cursor, SIZE_MAX);
      gaps += r.gap;
      for (const auto& p : r.pieces) h = fnv1a(h, p.bytes.data(), p.bytes.size());
      cursor = r.next;
      peak_memory = std::max(peak_memory, s.output().memory_bytes());
    });
    REQUIRE(f.wait_finished(s, 120s));
    std::uint64_t want = kFnvBasis;
    std::string block;
    for (std::size_t off = 0; off < kTotal; off += 1 << 20) {
      block = pattern(0);
      block.resize(1 << 20);
      for (std::size_t i = 0; i < block.size(); ++i) block[i] = pattern_byte(off + i);
      want = fnv1a(want, reinterpret_cast<const std::byte*>(block.data()), block.size());
    }
    CHECK(gaps == 0);
    CHECK(cursor == kTotal);
    CHECK(s.output().total() == kTotal);
    CHECK(h == want);
    CHECK(peak_memory <= f.pm->config().retain_bytes + 3 * 4096 + 2 * 8192 * 40);
    CHECK(s.output().evicted() == kTotal - f.pm->config().retain_bytes);
  }
}

TEST_CASE("a UTF-8 character split across two reads is preserved") {
  ManagerFixture f;
  auto& s = f.start(request({pty_child(), "utf8-split"}));
  REQUIRE(f.wait_finished(s));
  auto r = s.output().read_from(0, 100);
  CHECK(r.text() == "\xE2\x82\xAC\r\n");
  CHECK(r.pieces.size() >= 2);  // two reads, two chunks, one character
}

TEST_CASE("SIGINT to the foreground job of bash -i interrupts sleep and leaves bash alive") {
  ManagerFixture f;
  auto req = request({"/bin/bash", "--norc", "--noprofile", "-i"});
  req.env = std::vector<std::string>{"PS1=PROMPT> ", "PATH=/usr/bin:/bin", "TERM=dumb", "HOME=/tmp"};
  auto& s = f.start(req);
  REQUIRE(f.wait_output(s, "PROMPT> "));
  REQUIRE(s.write(std::string_view("sleep 100\n")));
  // Wait until sleep itself (not bash's fork before exec) leads the foreground group.
  int master = s.process()->master_fd();
  REQUIRE(f.run_until([&] {
    pid_t fg = ::tcgetpgrp(master);
    return fg > 0 && fg != s.pid() && comm_of(fg) == "sleep";
  }));
  REQUIRE(s.signal(SIGINT, pty::SignalTarget::kForeground));
  REQUIRE(f.run_until([&] { return ::tcgetpgrp(master) == s.pid(); }));
  REQUIRE(s.write(std::string_view("echo status=$?\n")));
  CHECK(f.wait_output(s, "status=130"));
  CHECK(!s.exited());
  REQUIRE(s.write(std::string_view("exit 5\n")));
  REQUIRE(f.wait_finished(s));
  CHECK(s.verdict()->status.code == 5);
}

TEST_CASE("seq: output chunks, exited and closed share one counter; closed is last") {
  ManagerFixture f;
  auto& s = f.start(request({"/bin/echo", "hi"}));
  REQUIRE(f.wait_finished(s));
  auto r = s.output().read_from(0, 100);
  REQUIRE(!r.pieces.empty());
  CHECK(r.pieces.front().seq == 1);
  CHECK(s.exited_seq() > r.pieces.back().seq);
  CHECK(s.closed_seq() == s.exited_seq() + 1);
  CHECK(s.next_seq() == s.closed_seq() + 1);
}

TEST_CASE("the screen model follows a real flood in batches and ends on the last rows") {
  // A model made before the flood is fed in batches (whole lines it skips); one made after
  // it replays the retained output (inexact: the middle was evicted). Both end showing the
  // flood's last 24 lines.
  ManagerFixture f;
  auto& s = f.start(request({"/bin/sh", "-c", "sleep 0.3; seq 1 200000"}, true));
  auto early = s.screen();
  REQUIRE(early);
  REQUIRE(f.wait_finished(s));
  auto st = s.screen();
  REQUIRE(st);
  auto lines = st->screen->lines();
  REQUIRE(lines.size() == 24);
  CHECK(lines[0] == "199978");
  CHECK(lines[22] == "200000");
  CHECK(lines[23].empty());
  CHECK(st->seq > 0);
  CHECK(st->seq < s.exited_seq());
  CHECK(st->screen->scrollback().back() == "199977");
  CHECK(st->exact);

  auto& late = f.start(request({"/bin/sh", "-c", "seq 1 200000"}, true));
  REQUIRE(f.wait_finished(late));
  auto lt = late.screen();
  REQUIRE(lt);
  CHECK(lt->screen->lines() == lines);
  CHECK_FALSE(lt->exact);  // 1.3 MB of output, 1 MiB retained: the middle was never seen
}

TEST_CASE("fake clock: a sandboxed run's `exited` comes exactly at the 20 ms exit drain, `closed` one close drain later") {
  base::Config cfg;
  cfg.close_drain = std::chrono::milliseconds{1000};
  ManagerFixture f(cfg);
  auto& clock = f.loop.use_manual_clock();
  // The background sleep keeps stdout open: no EOF comes, so only the timers can end it.
  auto req = request({"/bin/sh", "-c", "sleep 30 & echo out; exit 3"}, false);
  auto id = f.pm->start(req, policy::SandboxAttempt::fake(std::make_shared<policy::DenialLog>()));
  REQUIRE(id);
  auto& s = *f.pm->find(*id);
  REQUIRE(f.run_until([&] { return s.process()->exited() && all_output(s) == "out\n"; }));
  CHECK_FALSE(s.verdict());
  clock.advance(std::chrono::milliseconds{19});
  CHECK_FALSE(s.verdict());  // still draining
  clock.advance(std::chrono::milliseconds{1});
  REQUIRE(s.verdict());  // at 20 ms exactly, with the sandbox's verdict
  CHECK(s.verdict()->status.code == 3);
  CHECK_FALSE(s.verdict()->sandbox_denied());
  CHECK(s.exited_seq() > 0);
  clock.advance(std::chrono::milliseconds{999});
  CHECK_FALSE(s.finished());
  clock.advance(std::chrono::milliseconds{1});
  CHECK(s.finished());  // the close drain hung up the output
  CHECK_FALSE(s.output_eof());
  CHECK(s.closed_seq() == s.exited_seq() + 1);
  std::string seen;
  for (const auto& l : s.lingering()) seen += l.command + (l.killed ? " (killed); " : "; ");
  CHECK_MESSAGE(has_lingering_sleep(s), seen);
}
