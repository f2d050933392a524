// protocol_peer.h: an ExecServer driven line by line from a test. FakePeer is a transport
// whose queue drains only when the test says so (the replies land in `sent`); ServerFixture
// is a loop, a ProcessManager and an ExecServer with the given options.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helpers/loop_fixture.h"
#include "rpc/exec_server.h"
#include "session/process_manager.h"

namespace uexec::test {

using nlohmann::json;
using namespace std::chrono_literals;

// A transport whose queue only drains when the test says so.
struct FakePeer {
  std::vector<json> sent;
  std::size_t queued = 0;
  std::size_t below = 0;
  std::function<void()> below_fn;
  bool reading = true;
  int pauses = 0, closes = 0;
  std::unique_ptr<rpc::ExecServer::Connection> conn;

  rpc::Peer peer(bool with_close = true) {
    rpc::Peer p{[this](std::string m) {
                  queued += m.size() + 1;
                  sent.push_back(json::parse(m));
                },
                [this] { return queued; },
                [this](std::size_t n, std::function<void()> fn) {
                  below = n;
                  below_fn = std::move(fn);
                  check_below();
                }};
    p.set_reading = [this](bool on) {
      if (!on) ++pauses;
      reading = on;
    };
    if (with_close) p.close = [this] {
      ++closes;
      conn.reset();  // as UnixServer does: the connection goes at once
    };
    return p;
  }
  void drain_to(std::size_t n) {
    queued = n;
    check_below();
  }
  void check_below() {
    if (below_fn && queued <= below) {
      auto fn = std::move(below_fn);
      below_fn = nullptr;
      fn();
    }
  }
  void call(long id, const std::string& method, json params = json::object()) {
    conn->handle_line(json{{"id", id}, {"method", method}, {"params", std::move(params)}}.dump());
  }
  // The reply to `id`, or null.
  json reply(long id) const {
    for (const auto& m : sent)
      if (m.contains("id") && m["id"] == id) return m;
    return nullptr;
  }
  void handshake(const std::string& name = "test") {
    call(1, "initialize", {{"clientName", name}});
    conn->handle_line(R"({"method":"initialized"})");
  }
};

struct ServerFixture : LoopFixture {
  std::unique_ptr<session::ProcessManager> pm;
  std::unique_ptr<rpc::ExecServer> server;
  explicit ServerFixture(rpc::ExecServerOptions opts, bool manual_clock = false) {
    if (manual_clock) loop.use_manual_clock();
    base::Config cfg;
    cfg.close_drain = 300ms;
    pm = std::make_unique<session::ProcessManager>(loop, cfg);
    server = std::make_unique<rpc::ExecServer>(*pm, nullptr, std::vector<std::string>{"PATH=/usr/bin:/bin"}, "/", opts);
  }
  ~ServerFixture() {
    server.reset();
    pm.reset();
  }
  void connect(FakePeer& p, bool with_close = true) { p.conn = server->connect(p.peer(with_close)); }
};

inline std::string kind_of(const json& reply) {
  if (reply.is_null() || !reply.contains("error")) return "";
  return reply["error"]["data"].value("kind", "");
}

}  // namespace uexec::test
