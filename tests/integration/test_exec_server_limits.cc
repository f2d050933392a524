// docs/protocol.md §7 on an ExecServer with a scripted Peer: above the high watermark the
// connection's requests are not read and, after stallTimeoutMs there, it is closed; the
// caps on subscribers per process and pending waits per connection answer limitReached at
// once. The peer's queue is a number the test moves, so nothing here depends on timing; the
// stall clock is the loop's manual clock. Last, the ProcessManager's malloc_trim policy
// (memory back to the kernel once the server goes quiet), counted rather than measured.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "helpers/loop_fixture.h"
#include "integration/protocol_peer.h"
#include "integration/session_helpers.h"
#include "rpc/exec_server.h"
#include "rpc/line_channel.h"
#include "session/process_manager.h"

using namespace uexec;
using namespace uexec::test;
using namespace std::chrono_literals;
using nlohmann::json;

TEST_CASE("above the high watermark a connection's requests are not read; below the low one they are") {
  rpc::ExecServerOptions opts;
  opts.daemon = true;
  opts.high_watermark = 4096;
  opts.low_watermark = 1024;
  ServerFixture f(opts);
  FakePeer p;
  f.connect(p);
  p.handshake();
  p.drain_to(0);
  REQUIRE(p.reading);
  // Replies pile up unread: the one that crosses the high watermark pauses reading, once.
  long id = 10;
  while (p.queued < opts.high_watermark) p.call(id++, "environment/info");
  CHECK_FALSE(p.reading);
  CHECK(p.pauses == 1);
  p.call(id++, "environment/info");  // already read (a transport's buffered line): answered
  CHECK(p.pauses == 1);
  // Down to the low watermark, not yet below it... then below: reading resumes.
  p.drain_to(opts.low_watermark + 1);
  CHECK_FALSE(p.reading);
  p.drain_to(opts.low_watermark);
  CHECK(p.reading);
  CHECK(p.closes == 0);
}

TEST_CASE("a connection above the high watermark for stallTimeoutMs is closed; its session detaches") {
  rpc::ExecServerOptions opts;
  opts.daemon = true;
  opts.high_watermark = 4096;
  opts.low_watermark = 1024;
  opts.stall_timeout = 60000ms;
  ServerFixture f(opts, true);
  auto& clock = *f.loop.manual_clock();
  FakePeer p;
  f.connect(p);
  p.handshake();
  p.drain_to(0);
  std::string sid = p.reply(1)["result"]["sessionId"];
  long id = 10;
  while (p.queued < opts.high_watermark) p.call(id++, "environment/info");
  REQUIRE_FALSE(p.reading);
  // Falling below the low watermark in time stops the clock; going above again restarts it.
  clock.advance(59000ms);
  p.drain_to(0);
  CHECK(p.reading);
  while (p.queued < opts.high_watermark) p.call(id++, "environment/info");
  clock.advance(59000ms);
  CHECK(p.closes == 0);
  REQUIRE(p.conn);
  // Above for the whole timeout: closed.
  clock.advance(1000ms);
  CHECK(p.closes == 1);
  CHECK_FALSE(p.conn);
  // The session was detached, not dropped: a new connection resumes it.
  FakePeer q;
  f.connect(q);
  q.call(1, "initialize", {{"clientName", "again"}, {"resumeSessionId", sid}});
  CHECK(q.reply(1)["result"]["resumed"] == true);
}

TEST_CASE("without Peer::close (stdio) a stalled connection is paused but never closed") {
  rpc::ExecServerOptions opts;
  opts.high_watermark = 4096;
  opts.low_watermark = 1024;
  ServerFixture f(opts, true);
  FakePeer p;
  f.connect(p, false);
  p.handshake();
  long id = 10;
  while (p.queued < opts.high_watermark) p.call(id++, "environment/info");
  CHECK_FALSE(p.reading);
  f.loop.manual_clock()->advance(3600000ms);
  CHECK(p.conn);
  p.drain_to(0);
  CHECK(p.reading);
}

TEST_CASE("subscribers per process and pending waits per connection are capped: limitReached at once") {
  rpc::ExecServerOptions opts;
  opts.daemon = true;
  opts.max_subscribers = 2;
  opts.max_waits = 3;
  ServerFixture f(opts);
  FakePeer owner, a, b;
  for (auto* p : {&owner, &a, &b}) {
    f.connect(*p);
    p->handshake();
  }
  std::string sid = owner.reply(1)["result"]["sessionId"];
  owner.call(2, "process/start", {{"processId", "p"}, {"argv", {"/bin/sleep", "30"}}});
  REQUIRE(owner.reply(2).contains("result"));

  SUBCASE("subscribers") {
    // The owner is the first subscriber; one more fits, the next is refused.
    a.call(2, "process/subscribe", {{"processId", "p"}, {"sessionId", sid}});
    CHECK(a.reply(2)["result"]["subscribed"] == true);
    b.call(2, "process/subscribe", {{"processId", "p"}, {"sessionId", sid}});
    json r = b.reply(2);
    CHECK(kind_of(r) == "limitReached");
    CHECK(r["error"]["code"] == -32603);
    CHECK(r["error"]["data"]["limit"] == "subscribers");
    CHECK(r["error"]["data"]["max"] == 2);
    // Subscribing again is not a new subscriber; leaving makes room.
    a.call(3, "process/subscribe", {{"processId", "p"}, {"sessionId", sid}, {"afterSeq", 0}});
    CHECK(a.reply(3)["result"]["subscribed"] == true);
    a.call(4, "process/unsubscribe", {{"processId", "p"}, {"sessionId", sid}});
    b.call(3, "process/subscribe", {{"processId", "p"}, {"sessionId", sid}});
    CHECK(b.reply(3)["result"]["subscribed"] == true);
  }

  SUBCASE("waits") {
    owner.call(10, "process/wait", {{"processId", "p"}, {"timeoutMs", 600000}});
    owner.call(11, "process/read", {{"processId", "p"}, {"afterSeq", 0}, {"waitMs", 600000}});
    owner.call(12, "process/wait", {{"processId", "p"}, {"until", {{"idleMs", 600000}}}, {"timeoutMs", 600000}});
    for (long i : {10, 11, 12}) CHECK(owner.reply(i).is_null());  // pending
    owner.call(13, "process/wait", {{"processId", "p"}, {"timeoutMs", 600000}});
    owner.call(14, "process/read", {{"processId", "p"}, {"afterSeq", 0}, {"waitMs", 600000}});
    for (long i : {13, 14}) {
      json r = owner.reply(i);
      CHECK(kind_of(r) == "limitReached");
      CHECK(r["error"]["data"]["limit"] == "waits");
      CHECK(r["error"]["data"]["max"] == 3);
    }
    // A read that needs no wait is no long poll; another connection has its own count.
    owner.call(15, "process/read", {{"processId", "p"}, {"afterSeq", 0}});
    CHECK(owner.reply(15).contains("result"));
    a.call(2, "process/wait", {{"processId", "p"}, {"sessionId", sid}, {"timeoutMs", 1}});
    CHECK(kind_of(a.reply(2)) != "limitReached");
    // When the process ends, the pending waits are answered and the slots are free again.
    owner.call(16, "process/terminate", {{"processId", "p"}, {"graceMs", 0}});
    REQUIRE(f.run_until([&] { return !owner.reply(10).is_null() && !owner.reply(11).is_null() && !owner.reply(12).is_null(); }));
    for (long i : {10, 11, 12}) CHECK(owner.reply(i).contains("result"));
  }
  for (auto* p : {&owner, &a, &b}) p->conn.reset();
}

TEST_CASE("a paused LineChannel hands out no line until resumed, then the rest in order") {
  LoopFixture f;
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  auto h = loop::make_handle<uv_pipe_t>([&](uv_pipe_t* p) { return uv_pipe_init(f.loop.get(), p, 0); }, "uv_pipe_init");
  REQUIRE(h.has_value());
  REQUIRE(uv_pipe_open(h->get(), fds[0]) == 0);
  rpc::LineChannel ch(f.loop, std::move(h).value());
  std::vector<std::string> lines;
  ch.on_line = [&](std::string_view l) {
    lines.emplace_back(l);
    if (l == "2") ch.pause_reading();  // as the ExecServer does when a reply crosses the watermark
  };
  REQUIRE(ch.start().has_value());
  std::string input = "1\n2\n3\n4\n";
  REQUIRE(::write(fds[1], input.data(), input.size()) == static_cast<ssize_t>(input.size()));
  REQUIRE(f.run_until([&] { return lines.size() >= 2; }));
  f.run_for(50ms);  // a hang guard's worth of turns: nothing more may come
  CHECK(lines == std::vector<std::string>{"1", "2"});
  CHECK(ch.reading_paused());
  ch.resume_reading();
  CHECK(lines.size() == 2);  // never from inside resume_reading
  std::string more = "5\n";
  REQUIRE(::write(fds[1], more.data(), more.size()) == 2);
  REQUIRE(f.run_until([&] { return lines.size() == 5; }));
  CHECK(lines == std::vector<std::string>{"1", "2", "3", "4", "5"});
  ::close(fds[1]);
}

TEST_CASE("freed memory goes back at once when no session is left, after trim_delay while sessions run") {
  base::Config cfg;
  cfg.trim_idle_bytes = 1000;
  cfg.trim_busy_bytes = 64u << 20;
  cfg.trim_delay = 2000ms;
  ManagerFixture f(cfg);
  auto& clock = f.loop.use_manual_clock();
  f.pm->freed(999);
  clock.advance(0ms);
  CHECK(f.pm->trims() == 0);
  f.pm->freed(1);
  CHECK(f.pm->trims() == 0);  // never inside the caller: on the sweep's own turn
  clock.advance(0ms);
  CHECK(f.pm->trims() == 1);
  CHECK(f.pm->freed_since_trim() == 0);
  // While a session runs: only past trim_busy_bytes, and trim_delay after that.
  auto& s = f.start(request({"/bin/sleep", "30"}, false));
  f.pm->freed(1u << 20);
  clock.advance(5000ms);
  CHECK(f.pm->trims() == 1);
  f.pm->freed(64u << 20);
  clock.advance(1999ms);
  CHECK(f.pm->trims() == 1);
  f.pm->freed(64u << 20);  // more while the trim is pending: still one trim
  clock.advance(1ms);
  CHECK(f.pm->trims() == 2);
  clock.advance(10000ms);
  CHECK(f.pm->trims() == 2);
  // The last session goes: what it held counts, and the trim follows at once.
  std::string id = s.id();
  f.pm->remove(id);
  clock.advance(0ms);
  CHECK(f.pm->trims() == 3);
}

TEST_CASE("retention: at the process limit the process that closed first goes (pruned), never a refusal; "
          "process/list's ended says when and why") {
  rpc::ExecServerOptions opts;
  opts.daemon = true;
  opts.max_processes = 2;
  opts.exited_retention.reset();  // kept until the daemon ends: only the limit removes them
  ServerFixture f(opts);
  FakePeer p;
  f.connect(p);
  p.handshake();
  auto closed = [&](long call, const char* pid) {
    p.call(call, "process/wait", {{"processId", pid}, {"timeoutMs", 10000}});
    return f.run_until([&] { return !p.reply(call).is_null(); });
  };
  p.call(2, "process/start", {{"processId", "first"}, {"argv", {"/bin/true"}}});
  REQUIRE(p.reply(2).contains("result"));
  REQUIRE(closed(3, "first"));
  p.call(4, "process/start", {{"processId", "second"}, {"argv", {"/bin/true"}}});
  REQUIRE(p.reply(4).contains("result"));
  REQUIRE(closed(5, "second"));
  // Both closed and retained; a third start makes room by forgetting "first".
  long next = 100;
  REQUIRE(f.run_until([&] {
    long call = next++;
    p.call(call, "process/list", json::object());
    json l = p.reply(call);
    return l.contains("result") && l["result"]["processes"].size() == 2 &&
           l["result"]["processes"][0]["state"] == "closed" && l["result"]["processes"][1]["state"] == "closed";
  }));
  p.call(7, "process/start", {{"processId", "third"}, {"argv", {"/bin/sleep", "30"}}});
  REQUIRE(p.reply(7).contains("result"));
  p.call(8, "process/list", {{"includeEnded", true}});
  json l = p.reply(8)["result"];
  std::vector<std::string> ids;
  for (const auto& e : l["processes"]) ids.push_back(e["processId"]);
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::string>{"second", "third"});
  REQUIRE(l["ended"].size() == 1);
  CHECK(l["ended"][0]["processId"] == "first");
  CHECK(l["ended"][0]["reason"] == "pruned");
  CHECK(l["ended"][0]["atMs"].get<long long>() > 0);
  // "second" is the only closed one left: it goes next. Then two run, none has closed, and
  // the limit refuses as before.
  p.call(9, "process/start", {{"processId", "fourth"}, {"argv", {"/bin/sleep", "30"}}});
  REQUIRE(p.reply(9).contains("result"));
  p.call(10, "process/start", {{"processId", "fifth"}, {"argv", {"/bin/sleep", "30"}}});
  CHECK(kind_of(p.reply(10)) == "limitReached");
  p.call(11, "process/list", {{"includeEnded", true}});
  CHECK(p.reply(11)["result"]["ended"].size() == 2);
  p.call(12, "process/list", json::object());
  CHECK_FALSE(p.reply(12)["result"].contains("ended"));  // only when asked
  for (const char* pid : {"third", "fourth"}) p.call(next++, "process/terminate", {{"processId", pid}, {"graceMs", 0}});
  p.conn.reset();
}
