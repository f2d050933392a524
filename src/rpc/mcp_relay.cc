#include "rpc/mcp_relay.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "base/unique_fd.h"
#include "loop/uv_handle.h"
#include "rpc/agent_tools.h"
#include "rpc/approval_broker.h"
#include "rpc/json_rpc.h"
#include "rpc/mcp_progress.h"
#include "rpc/mcp_server.h"

namespace uexec::rpc {

using base::Error;
using base::Result;

namespace {

// MCP tool → native method (docs/protocol.md §4.6: the same arguments, the same CallToolResult).
const char* native_method(const std::string& tool) {
  if (tool == "exec_command") return "exec/command";
  if (tool == "write_stdin") return "exec/writeStdin";
  if (tool == "list_sessions") return "exec/listSessions";
  if (tool == "kill_session") return "exec/killSession";
  if (tool == "read_output") return "exec/readOutput";
  return nullptr;
}

}  // namespace

McpRelay::McpRelay(loop::Loop& loop, std::string socket_path, std::function<void(std::string)> send)
    : McpEndpoint(std::move(send),
                  "uexec runs shell commands in long-lived sessions, kept by the uexec daemon (they outlive this "
                  "connection). exec_command starts one and returns its output after a yield window (or when it "
                  "exits, or an `until` condition holds); while it runs, poll or type with write_stdin, and use "
                  "list_sessions, read_output and kill_session."),
      loop_(loop),
      socket_path_(std::move(socket_path)),
      retry_(loop) {}

McpRelay::~McpRelay() = default;

Result<void> McpRelay::start(std::function<void(Result<void>)> ready) {
  ready_ = std::move(ready);
  auto r = connect();
  if (!r) ready_ = nullptr;
  return r;
}

// A blocking connect: on a Unix socket it succeeds or fails at once (ENOENT, ECONNREFUSED),
// so the loop never waits on it. The connected fd then goes to libuv as a pipe.
Result<void> McpRelay::connect() {
  base::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Error::sys("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof addr.sun_path) return Error::invalid("socket path too long: " + socket_path_);
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return Error::sys("cannot reach the uexec daemon at " + socket_path_);
  auto pipe = loop::make_handle<uv_pipe_t>([&](uv_pipe_t* p) { return uv_pipe_init(loop_.get(), p, 0); },
                                           "uv_pipe_init daemon");
  if (!pipe) return std::move(pipe).error();
  if (int rc = uv_pipe_open(pipe->get(), fd.get()); rc < 0) return Error::uv(rc, "uv_pipe_open daemon");
  fd.release();  // the pipe handle owns it now
  daemon_ = std::make_unique<LineChannel>(loop_, std::move(pipe).value());
  daemon_->on_line = [this](std::string_view line) { on_daemon_line(line); };
  daemon_->on_oversize = [](std::size_t limit) {
    UEXEC_LOG(kWarn, "the daemon sent a message over {} bytes; dropped", limit);
  };
  daemon_->on_eof = [this] { on_daemon_eof(); };
  if (auto r = daemon_->start(); !r) {
    daemon_.reset();
    return r;
  }
  state_ = State::kConnecting;
  init_id_ = next_id_++;
  resuming_ = !session_id_.empty();
  // "Until killed": what this client starts belongs to the daemon, not to this connection.
  json params = {{"clientName", "uexec-mcp"},
                 {"detachedTtlMs", -1},
                 {"capabilities", {{"extensions", true}, {"approvals", true}}}};
  if (resuming_) params["resumeSessionId"] = session_id_;
  send_daemon(encode_request(init_id_, "initialize", std::move(params)));
  return {};
}

void McpRelay::send_daemon(std::string line) {
  if (daemon_) daemon_->send(std::move(line));
}

void McpRelay::on_initialized(const json& reply) {
  if (reply.contains("error")) {
    std::string msg = reply["error"].value("message", "initialize failed");
    if (ready_) {
      auto ready = std::move(ready_);
      ready_ = nullptr;
      state_ = State::kDown;
      return ready(Error::invalid("the uexec daemon at " + socket_path_ + " refused this client: " + msg));
    }
    // The daemon forgot our session (it restarted, or the TTL ran out): start afresh.
    UEXEC_LOG(kWarn, "the daemon did not resume session {} ({}); starting a new one", session_id_, msg);
    session_id_.clear();
    on_daemon_eof();
    return;
  }
  const json& r = reply.contains("result") ? reply["result"] : json::object();
  session_id_ = r.is_object() ? r.value("sessionId", "") : "";
  send_daemon(encode_notification("initialized", json::object()));
  state_ = State::kReady;
  retry_delay_ = kFirstRetry;
  UEXEC_LOG(kInfo, "relaying to the daemon at {} (session {}{})", socket_path_, session_id_,
            resuming_ ? ", resumed" : "");
  if (ready_) {
    auto ready = std::move(ready_);
    ready_ = nullptr;
    ready({});
  }
}

void McpRelay::on_daemon_line(std::string_view line) {
  json m = json::parse(line.begin(), line.end(), nullptr, false);
  if (m.is_discarded() || !m.is_object()) {
    UEXEC_LOG(kWarn, "ignoring an unparsable line from the daemon");
    return;
  }
  if (m.contains("method")) {
    std::string method = m["method"].is_string() ? m["method"].get<std::string>() : "";
    const json& params = m.contains("params") ? m["params"] : json::object();
    if (m.contains("id")) {
      // A server request: approval/request is relayed; anything else is answered at once, so
      // nothing on the daemon's side waits for us.
      if (method == "approval/request") return on_approval_request(m["id"], params);
      return send_daemon(encode_error(m["id"], kMethodNotFound, "method not found: " + method));
    }
    if (method == "approval/cancelled" && params.is_object() && params.contains("approvalId") &&
        params["approvalId"].is_string()) {
      auto it = approvals_.find(params["approvalId"].get<std::string>());
      if (it == approvals_.end()) return;
      std::string eid = it->second;
      approvals_.erase(it);
      return elicitor_.withdraw(eid);
    }
    if (method != "exec/outputDelta" || !params.is_object() || !params.contains("progressToken")) return;
    const json& token = params["progressToken"];
    if (!token.is_number_integer()) return;
    auto it = pending_.find(token.get<std::int64_t>());
    if (it == pending_.end() || it->second.cancelled || it->second.progress_token.is_null()) return;
    Pending& p = it->second;
    if (!p.progress) p.progress.emplace(p.progress_token);
    const json& delta = params.contains("delta") && params["delta"].is_string() ? params["delta"] : json("");
    if (auto note = p.progress->on_output(delta.get_ref<const std::string&>(), ProgressReporter::Clock::now()))
      send_(encode_notification("notifications/progress", std::move(*note)));
    return;
  }
  if (!m.contains("id") || !m["id"].is_number_integer()) return;
  std::int64_t id = m["id"].get<std::int64_t>();
  if (id == init_id_ && state_ == State::kConnecting) return on_initialized(m);
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (p.cancelled) return;
  by_mcp_.erase(p.mcp_id.dump());
  if (m.contains("error")) {
    // Only the envelope, the gate or non-object params get JSON-RPC errors (docs/protocol.md §4.6); to the
    // agent it is a failed tool call all the same.
    std::string msg = m["error"].is_object() ? m["error"].value("message", "error") : "error";
    return reply(p.mcp_id, AgentTools::error_result(p.tool + " failed: " + msg));
  }
  json result = m.contains("result") ? m["result"] : json::object();
  // The daemon always answers in the 2025-06-18 shape; clients of older revisions get no structuredContent.
  if (!structured() && result.is_object()) result.erase("structuredContent");
  if (!p.note.empty() && result.is_object() && result.contains("content") && result["content"].is_array() &&
      !result["content"].empty() && result["content"][0].is_object() && result["content"][0].contains("text") &&
      result["content"][0]["text"].is_string())
    result["content"][0]["text"] = result["content"][0]["text"].get<std::string>() + "\n" + p.note;
  reply(p.mcp_id, std::move(result));
}

void McpRelay::on_daemon_eof() {
  if (state_ == State::kStopped) return;
  bool first = static_cast<bool>(ready_);
  if (state_ == State::kReady) UEXEC_LOG(kWarn, "lost the connection to the daemon at {}; reconnecting", socket_path_);
  state_ = State::kDown;
  // Freed later: this may run inside the channel's own callback.
  if (daemon_) {
    daemon_->stop_reading();
    dead_ = std::move(daemon_);
  }
  // The daemon's questions died with the connection: withdraw them from the client.
  auto open = std::move(approvals_);
  approvals_.clear();
  for (auto& [aid, eid] : open) elicitor_.withdraw(eid);
  auto pending = std::move(pending_);
  pending_.clear();
  by_mcp_.clear();
  for (auto& [id, p] : pending)
    if (!p.cancelled)
      reply(p.mcp_id, AgentTools::error_result(unavailable(
                          p.tool + " failed: the connection to the daemon closed while it waited; a session it "
                                   "started keeps running if the daemon does (see list_sessions once it is back)")));
  if (first) {
    auto ready = std::move(ready_);
    ready_ = nullptr;
    return ready(Error::invalid("the uexec daemon at " + socket_path_ + " closed the connection during initialize"));
  }
  schedule_reconnect();
}

void McpRelay::schedule_reconnect() {
  retry_.start(retry_delay_, [this] {
    dead_.reset();
    if (state_ != State::kDown) return;
    if (auto r = connect(); !r) {
      UEXEC_LOG(kInfo, "reconnect: {}", r.error().message());
      retry_delay_ = std::min(retry_delay_ * 2, kMaxRetry);
      schedule_reconnect();
    }
  });
}

void McpRelay::stop() {
  state_ = State::kStopped;
  retry_.stop();
  if (daemon_) daemon_->stop_reading();
  ready_ = nullptr;
}

// approval/request from the daemon (docs/protocol.md §4.8): asked of the MCP client as
// elicitation/create, or denied at once (with a note for the call) when it cannot be asked.
void McpRelay::on_approval_request(const json& id, const json& params) {
  ApprovalQuestion q;
  std::string aid;
  if (params.is_object()) {
    std::string kind = params.value("kind", "");
    bool escalation = params.contains("justification") && params["justification"].is_string();
    q.purpose = kind == "retryUnsandboxed" ? "sandbox_retry" : escalation ? "escalation" : "exec";
    q.command = params.value("command", "");
    q.cwd = params.value("cwd", "");
    q.reason = params.value("reason", "");
    if (params.contains("denial") && params["denial"].is_object()) {
      const json& d = params["denial"];
      std::string mech = d.value("mechanism", ""), detail = d.value("detail", "");
      q.denial = mech.empty() ? detail : detail.empty() ? mech : mech + ": " + detail;
    }
    aid = params.value("approvalId", "");
  }
  if (!elicitor_.enabled()) {
    for (auto& [did, p] : pending_)
      if (!p.cmd.empty() && p.cmd == q.command && p.note.empty()) {
        p.note = approval_needed_note(q);
        break;
      }
  }
  auto answer = [this, id, aid](policy::Decision d) {
    if (!aid.empty()) approvals_.erase(aid);
    send_daemon(encode_result(id, {{"decision", native_decision_name(d)}}));
  };
  std::string eid = elicitor_.ask(q, std::move(answer));
  if (!eid.empty() && !aid.empty()) approvals_[aid] = eid;
}

std::string McpRelay::unavailable(const std::string& why) const {
  return "uexec daemon unavailable: " + why + " (daemon socket " + socket_path_ + ")";
}

// ---- the MCP side (the rest is McpEndpoint's, shared with McpServer) ----------------------

// The daemon's wait goes on to its end (no cancel in the native protocol); its reply is
// dropped, as MCP asks.
void McpRelay::cancel(const std::string& request_key) {
  auto it = by_mcp_.find(request_key);
  if (it == by_mcp_.end()) return;
  if (auto p = pending_.find(it->second); p != pending_.end()) p->second.cancelled = true;
  by_mcp_.erase(it);
}

void McpRelay::call_tool(const json& id, const std::string& name, const json& args, const json& progress_token) {
  const char* method = native_method(name);
  if (!method)
    return error(id, kInvalidParams, "Unknown tool: " + name, {{"kind", "invalidParams"}, {"field", "name"}});
  if (state_ != State::kReady)
    return reply(id, AgentTools::error_result(unavailable(
                         name + " failed: not connected to the daemon; reconnecting (is `uexec serve` running?)")));
  std::int64_t did = next_id_++;
  json params = args;
  // The daemon streams exec/outputDelta under our own token, one per call, so two clients'
  // tokens can never collide on the shared connection.
  if (!progress_token.is_null() && params.is_object()) params["_meta"] = {{"progressToken", did}};
  Pending p;
  p.mcp_id = id;
  p.progress_token = progress_token;
  p.tool = name;
  if (name == "exec_command" && args.is_object() && args.contains("cmd") && args["cmd"].is_string()) p.cmd = args["cmd"];
  pending_[did] = std::move(p);
  by_mcp_[id.dump()] = did;
  send_daemon(encode_request(did, method, std::move(params)));
}

}  // namespace uexec::rpc
