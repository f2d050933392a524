// process/wait (docs/protocol.md §4.5) on real processes, through an ExecServer driven line by
// line: each `until` condition, the exit, the timeout, and where the scan starts (just after
// afterSeq). process/wait runs on the one wait engine, agent::UntilWait; these cases pin the
// wire's view of it. No timing is asserted: conditions that need time (idle, timeout) are set
// short and only the outcome is checked.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "integration/protocol_peer.h"
#include "rpc/base64.h"

using namespace uexec;
using namespace uexec::test;

namespace {

struct WaitFixture {
  ServerFixture f{rpc::ExecServerOptions{}};
  FakePeer p;
  long next_id = 10;

  WaitFixture() {
    f.connect(p);
    p.handshake();
  }
  // Starts `script` under sh as process "p" (pipes, so nothing is echoed).
  void start(const std::string& script) {
    long id = next_id++;
    p.call(id, "process/start", {{"processId", "p"}, {"argv", {"/bin/sh", "-c", script}}, {"tty", false}});
    REQUIRE(p.reply(id).contains("result"));
  }
  // Sends process/wait with `params` (processId added) and runs the loop until it is answered.
  json wait(json params) {
    long id = next_id++;
    params["processId"] = "p";
    p.call(id, "process/wait", std::move(params));
    REQUIRE(f.run_until([&] { return !p.reply(id).is_null(); }));
    return p.reply(id);
  }
  // Runs the loop until the process has written `n` bytes.
  void await_output(std::size_t n) {
    REQUIRE(f.run_until([&] {
      long id = next_id++;
      p.call(id, "process/read", {{"processId", "p"}, {"afterSeq", 0}});
      json r = p.reply(id);
      std::size_t got = 0;
      if (r.contains("result"))
        for (const auto& c : r["result"]["chunks"]) got += rpc::base64_decode(c["chunk"].get<std::string>())->size();
      return got >= n;
    }));
  }
};

}  // namespace

TEST_CASE("process/wait: bytes fires once that much output came after afterSeq") {
  WaitFixture w;
  w.start("printf 0123456789; exec sleep 30");
  json r = w.wait({{"until", {{"bytes", 5}}}, {"afterSeq", 0}, {"timeoutMs", 20000}});
  REQUIRE(r.contains("result"));
  CHECK(r["result"]["fired"] == "bytes");
  CHECK(r["result"]["exited"] == false);
  CHECK(r["result"]["match"].is_null());
}

TEST_CASE("process/wait: a regex finds output written before the request, after afterSeq, escapes stripped") {
  WaitFixture w;
  w.start("printf '\\033[31mred\\033[0m alert\\nnext\\n'; exec sleep 30");
  w.await_output(10);
  json r = w.wait({{"until", {{"regex", "red alert"}}}, {"afterSeq", 0}, {"timeoutMs", 20000}});
  REQUIRE(r.contains("result"));
  CHECK(r["result"]["fired"] == "regex");
  CHECK(r["result"]["match"]["text"] == "red alert");
  CHECK(r["result"]["match"]["seq"].is_number());
}

TEST_CASE("process/wait: without afterSeq the scan starts at the current end") {
  WaitFixture w;
  w.start("echo early; exec sleep 30");
  w.await_output(6);
  json r = w.wait({{"until", {{"regex", "early"}}}, {"timeoutMs", 100}});
  REQUIRE(r.contains("result"));
  CHECK(r["result"]["fired"] == "timeout");
  CHECK(r["result"]["exited"] == false);
}

TEST_CASE("process/wait: the output that came with the exit still counts for a regex") {
  WaitFixture w;
  w.start("echo finished-marker");
  json r = w.wait({{"until", {{"regex", "finished-marker"}}}, {"afterSeq", 0}, {"timeoutMs", 20000}});
  REQUIRE(r.contains("result"));
  CHECK(r["result"]["fired"] == "regex");
  CHECK(r["result"]["match"]["text"] == "finished-marker");
}

TEST_CASE("process/wait: the exit ends any wait, with its status") {
  WaitFixture w;
  w.start("exit 3");
  json r = w.wait({{"until", {{"regex", "never"}, {"idleMs", 600000}}}, {"timeoutMs", 20000}});
  REQUIRE(r.contains("result"));
  CHECK(r["result"]["fired"] == "exit");
  CHECK(r["result"]["exited"] == true);
  CHECK(r["result"]["exitCode"] == 3);
}

TEST_CASE("process/wait: idle fires on a quiet process; the timeout ends a wait nothing answers") {
  WaitFixture w;
  w.start("exec sleep 30");
  json idle = w.wait({{"until", {{"idleMs", 30}}}, {"timeoutMs", 20000}});
  REQUIRE(idle.contains("result"));
  CHECK(idle["result"]["fired"] == "idle");
  json timeout = w.wait({{"until", {{"portOpen", 1}}}, {"timeoutMs", 30}});
  REQUIRE(timeout.contains("result"));
  CHECK(timeout["result"]["fired"] == "timeout");
  CHECK(timeout["result"]["exited"] == false);
}

TEST_CASE("process/wait: an invalid regex, idleMs or portOpen is an invalid-params error") {
  WaitFixture w;
  w.start("exec sleep 30");
  for (json until : {json{{"regex", "("}}, json{{"idleMs", -1}}, json{{"idleMs", 9000000000000000000LL}},
                     json{{"portOpen", 0}}, json{{"portOpen", 65616}}}) {
    long id = w.next_id++;
    w.p.call(id, "process/wait", {{"processId", "p"}, {"until", until}});
    json r = w.p.reply(id);
    REQUIRE(r.contains("error"));
    CHECK(r["error"]["code"] == -32602);
  }
}
