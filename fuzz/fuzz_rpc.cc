// fuzz_rpc.cc: the JSON-RPC front doors, from raw bytes on a socket to the replies:
// rpc::LineChannel's framing, then rpc::ExecServer (the native protocol: envelope, gate,
// method table, every method's params decoding, the sandbox member, exec/*) or
// rpc::McpServer (MCP: envelope, initialize, tools/list, tools/call).
//
// Input: byte 0 is flags, byte 1 a parameter, the rest the byte stream a client sends.
//   flags & 1   MCP instead of the native protocol
//   flags & 2   daemon mode (a closed connection detaches its session; resume works)
//   flags & 4   a small max_line (32 + 8 * byte 1) instead of docs/protocol.md §1's 16 MiB
//   flags & 8   detached TTL 0 ms (detached sessions are dropped on the next loop turn)
//   flags & 16  the stream is written in small pieces (sizes from byte 1), not at once
// The stream is written into one end of a socketpair and the LineChannel reads the other on
// the shared loop (world.h), which runs non-blocking turns between writes. Two conveniences
// reach state a fuzzer cannot guess: in a line, "@SID" becomes the sessionId of the latest
// initialize reply, and a line "#reconnect" (native protocol) closes the connection and
// opens a new one on the same server (to exercise detach and resumeSessionId).
//
// Checked:
//   framing     the lines delivered equal a model of docs/protocol.md §1 over the whole stream
//               (split on '\n', one trailing '\r' stripped, blank lines ignored, a line over
//               max_line reported once through on_oversize and dropped, an unterminated last
//               line delivered at EOF), and EOF is seen
//   replies     every message sent is one line of valid UTF-8 and valid JSON, an object with
//               "jsonrpc":"2.0"; a response has an id and exactly one of result/error; error
//               codes are the JSON-RPC ones the protocol uses
//   accounting  each input line gets what docs/protocol.md §1/§6 says: one error (id -1 native,
//               null MCP) for unparsable or non-object input (a message nested deeper than
//               rpc::kMaxJsonDepth counts as unparsable: json_depth.h) or a bad envelope, nothing for a
//               notification or a stray response (a result or an error), one error for a message with
//               neither a method nor a result or error, exactly one response echoing the id for a
//               request (nothing here waits: no process can exist)
//   results     exec/* and tools/call answer with a CallToolResult
//   no spawn    the process manager is empty afterwards
// UEXEC_FUZZ_TRACE=1 prints every line and reply (for replaying one input by hand).
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_common.h"
#include "fuzz/world.h"
#include "rpc/exec_server.h"
#include "rpc/json_depth.h"
#include "rpc/line_channel.h"
#include "rpc/mcp_server.h"

namespace {

using nlohmann::json;
using uexec::fuzz::excerpt;

constexpr std::size_t kDefaultMaxLine = 16u << 20;

struct Framing {
  std::vector<std::string> lines;
  std::size_t oversize = 0;
};

// docs/protocol.md §1 framing over the whole stream (see the essay above).
Framing model_framing(std::string_view s, std::size_t max_line) {
  Framing f;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t nl = s.find('\n', pos);
    std::string_view seg = s.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (seg.size() > max_line) {
      ++f.oversize;
    } else {  // a last line without its newline is delivered at EOF too
      std::string line(seg);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) f.lines.push_back(std::move(line));
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return f;
}

struct Expect {
  int responses = 0;  // 0 or 1
  json id;            // the id the response must carry (when responses == 1)
  bool envelope_error = false;
};

// What docs/protocol.md §1 (native) or §6 (MCP) says one input line gets.
Expect expect_for(const json& msg, bool mcp) {
  Expect e;
  json none = mcp ? json() : json(-1);
  auto envelope_error = [&](json id) {
    e.responses = 1;
    e.id = std::move(id);
    e.envelope_error = true;
    return e;
  };
  if (msg.is_discarded() || !msg.is_object()) return envelope_error(none);
  // No copies of client values here: a deeply nested one would overflow the harness's stack.
  static const json kNull;
  const json& raw_id = msg.contains("id") ? msg["id"] : kNull;
  bool valid_id = raw_id.is_string() || raw_id.is_number_integer() || (mcp && raw_id.is_null());
  json id = valid_id ? raw_id : json();
  // Without a method, only a result or an error makes it a (stray) response; anything else is answered.
  bool stray_response = msg.contains("result") || msg.contains("error");
  if (mcp) {
    if (!msg.contains("jsonrpc") || msg["jsonrpc"] != "2.0") return envelope_error(valid_id ? id : json());
    if (!valid_id) return envelope_error(json());
    if (!msg.contains("method")) return stray_response ? e : envelope_error(id);
    if (!msg["method"].is_string()) return envelope_error(id);
    if (msg.contains("params") && !msg["params"].is_object() && !msg["params"].is_array()) return envelope_error(id);
    if (!msg.contains("id")) return e;
  } else {
    if (msg.contains("jsonrpc") && msg["jsonrpc"] != "2.0") return envelope_error(valid_id ? id : json(-1));
    if (!msg.contains("method")) return stray_response ? e : envelope_error(valid_id ? id : json(-1));
    if (!msg["method"].is_string()) return envelope_error(valid_id ? id : json(-1));
    if (!msg.contains("id")) return e;
    if (!valid_id) return envelope_error(json(-1));
  }
  e.responses = 1;
  e.id = id;
  return e;
}

bool is_call_tool_result(const json& r) {
  return r.is_object() && r.contains("content") && r["content"].is_array() && !r["content"].empty() &&
         r["content"][0].is_object() && r["content"][0].value("type", json()) == "text" &&
         r["content"][0].contains("text") && r["content"][0]["text"].is_string() && r.contains("isError") &&
         r["isError"].is_boolean();
}

struct Harness {
  bool mcp = false;
  bool trace = std::getenv("UEXEC_FUZZ_TRACE") != nullptr;  // replaying one input: print the exchange
  std::vector<std::string> sent;
  std::string last_sid;
  std::unique_ptr<uexec::rpc::ExecServer> server;
  std::unique_ptr<uexec::rpc::ExecServer::Connection> conn;
  std::unique_ptr<uexec::rpc::McpServer> mcp_server;
  std::vector<std::string> delivered;
  std::size_t oversize = 0;
  bool eof = false;

  uexec::rpc::Peer peer() {
    uexec::rpc::Peer p;
    p.send = [this](std::string m) { sent.push_back(std::move(m)); };
    p.queued = [] { return std::size_t{0}; };
    return p;
  }

  // Checks one message the server sent; returns it parsed.
  json check_message(const std::string& m) {
    FUZZ_CHECK("reply-line", m.find('\n') == std::string::npos && m.find('\r') == std::string::npos,
               "a message contains a raw line break: {}", excerpt(m));
    FUZZ_CHECK("reply-utf8", uexec::fuzz::valid_utf8(m), "a message is not valid UTF-8: {}", excerpt(m));
    json j = json::parse(m, nullptr, false);
    FUZZ_CHECK("reply-json", !j.is_discarded() && j.is_object(), "a message is not a JSON object: {}", excerpt(m));
    FUZZ_CHECK("reply-jsonrpc", j.contains("jsonrpc") && j["jsonrpc"] == "2.0", "no \"jsonrpc\":\"2.0\": {}", excerpt(m));
    if (j.contains("method")) return j;  // a notification
    bool has_result = j.contains("result"), has_error = j.contains("error");
    FUZZ_CHECK("reply-shape", j.contains("id") && has_result != has_error, "neither a response nor a notification: {}",
               excerpt(m));
    if (has_error) {
      const json& err = j["error"];
      bool code_ok = err.is_object() && err.contains("code") && err["code"].is_number_integer() &&
                     err.contains("message") && err["message"].is_string();
      FUZZ_CHECK("reply-error", code_ok, "a malformed error object: {}", excerpt(m));
      int code = err["code"].get<int>();
      bool known = mcp ? (code == -32700 || code == -32600 || code == -32601 || code == -32602 || code == -32603)
                       : (code == -32600 || code == -32601 || code == -32602 || code == -32603);
      FUZZ_CHECK("reply-error-code", known, "an unexpected error code {}: {}", code, excerpt(m));
    } else if (j["result"].is_object() && j["result"].contains("sessionId") && j["result"]["sessionId"].is_string()) {
      last_sid = j["result"]["sessionId"].get<std::string>();
    }
    return j;
  }

  void on_line(std::string_view raw) {
    delivered.emplace_back(raw);
    if (!mcp && raw == "#reconnect") {
      conn.reset();
      conn = server->connect(peer());
      return;
    }
    std::string line(raw);
    for (std::size_t at; !last_sid.empty() && (at = line.find("@SID")) != std::string::npos;)
      line.replace(at, 4, last_sid);
    std::size_t before = sent.size();
    if (mcp)
      mcp_server->handle_line(line);
    else
      conn->handle_line(line);
    json req = json::parse(line, nullptr, false);
    Expect e = expect_for(req, mcp);
    // The front doors refuse deep nesting before they parse (their stacks; json_depth.h), as
    // unparsable input (regressions/fuzz_rpc/deep-nesting-*).
    if (uexec::rpc::json_nested_deeper_than(line, uexec::rpc::kMaxJsonDepth)) e = Expect{1, mcp ? json() : json(-1), true};
    std::size_t got = sent.size() - before;
    if (trace) {
      std::fprintf(stderr, "-> %s\n", excerpt(line, 400).c_str());
      for (std::size_t i = before; i < sent.size(); ++i) std::fprintf(stderr, "<- %s\n", excerpt(sent[i], 400).c_str());
    }
    FUZZ_CHECK("reply-count", got == static_cast<std::size_t>(e.responses),
               "{} messages for one line (expected {}): {}", got, e.responses, excerpt(line, 300));
    for (std::size_t i = before; i < sent.size(); ++i) {
      json j = check_message(sent[i]);
      if (e.responses != 1) continue;
      FUZZ_CHECK("reply-id", j.contains("id") && j["id"] == e.id, "reply id {} for request id {}: {}",
                 j.value("id", json()).dump(), e.id.dump(), excerpt(line, 300));
      if (e.envelope_error) {
        FUZZ_CHECK("reply-envelope-error", j.contains("error"), "a bad envelope got a result: {}", excerpt(line, 300));
        continue;
      }
      // exec/* (native) and tools/call (MCP) answer with a CallToolResult when they answer.
      std::string method = req.value("method", "");
      bool tool = mcp ? method == "tools/call" : method.rfind("exec/", 0) == 0;
      if (tool && j.contains("result"))
        FUZZ_CHECK("reply-tool-result", is_call_tool_result(j["result"]), "not a CallToolResult: {}", excerpt(sent[i]));
    }
  }

  void on_oversize(std::size_t limit) {
    ++oversize;
    std::size_t before = sent.size();
    if (mcp)
      mcp_server->handle_oversize(limit);
    else
      conn->handle_oversize(limit);
    FUZZ_CHECK("reply-oversize", sent.size() == before + 1, "{} messages for an oversize line", sent.size() - before);
    json j = check_message(sent.back());
    FUZZ_CHECK("reply-oversize", j.contains("error") && j["id"] == (mcp ? json() : json(-1)),
               "an oversize line got {}", excerpt(sent.back()));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace uexec;
  if (size < 2) return 0;
  auto& w = fuzz::world();
  std::uint8_t flags = data[0], param = data[1];
  std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  std::size_t max_line = flags & 4 ? 32 + 8 * std::size_t{param} : kDefaultMaxLine;

  Harness h;
  h.mcp = flags & 1;
  if (h.mcp) {
    h.mcp_server = std::make_unique<rpc::McpServer>(w.exec, h.peer().send);
  } else {
    rpc::ExecServerOptions opts;
    opts.daemon = flags & 2;
    opts.max_processes = 0;  // process/start decodes everything, then stops at the limit
    if (flags & 8) opts.detached_ttl = std::chrono::milliseconds{0};
    h.server = std::make_unique<rpc::ExecServer>(w.pm, &w.exec, w.env, w.cwd, opts);
    h.conn = h.server->connect(h.peer());
  }

  int sv[2];
  FUZZ_CHECK("harness", ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair: {}",
             std::strerror(errno));
  ::fcntl(sv[1], F_SETFL, O_NONBLOCK);
  auto ch = std::make_unique<rpc::LineChannel>(w.loop, sv[0], w.devnull, max_line);
  ch->on_line = [&h](std::string_view l) { h.on_line(l); };
  ch->on_oversize = [&h](std::size_t limit) { h.on_oversize(limit); };
  ch->on_eof = [&h] { h.eof = true; };
  auto started = ch->start();
  FUZZ_CHECK("harness", started.has_value(), "LineChannel::start failed");

  auto drain = [&] {
    for (int i = 0; i < 64; ++i) {
      int pending = 0;
      if (::ioctl(sv[0], FIONREAD, &pending) == 0 && pending == 0) break;
      w.loop.run_once(false);
    }
  };
  std::uint32_t rng = 0x9E3779B9u ^ param;
  std::size_t off = 0;
  while (off < stream.size()) {
    std::size_t n = stream.size() - off;
    if (flags & 16) {
      rng = rng * 1664525u + 1013904223u;
      n = std::min<std::size_t>(n, 1 + (rng >> 24) % 48);
    }
    ssize_t k = ::write(sv[1], stream.data() + off, n);
    if (k > 0) off += static_cast<std::size_t>(k);
    drain();
  }
  ::shutdown(sv[1], SHUT_WR);
  for (int i = 0; i < 64 && !h.eof; ++i) w.loop.run_once(false);
  ::close(sv[1]);
  FUZZ_CHECK("frame-eof", h.eof, "no EOF after the peer shut down its side");

  Framing want = model_framing(stream, max_line);
  FUZZ_CHECK("frame-oversize", h.oversize == want.oversize, "{} oversize reports, expected {} (max_line {})",
             h.oversize, want.oversize, max_line);
  FUZZ_CHECK("frame-lines", h.delivered == want.lines, "{} lines delivered, expected {} (max_line {})",
             h.delivered.size(), want.lines.size(), max_line);

  ch.reset();
  h.conn.reset();
  w.settle(1);  // a 0 ms TTL fires here, with the server still alive
  h.server.reset();
  h.mcp_server.reset();
  w.settle();
  FUZZ_CHECK("no-spawn", w.pm.size() == 0, "{} sessions exist after the input", w.pm.size());
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  uexec::fuzz::quiet_logs();
  return 0;
}
