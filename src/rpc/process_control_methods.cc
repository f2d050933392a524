#include "rpc/process_control_methods.h"

#include <fmt/core.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "pty/pty_process.h"
#include "rpc/base64.h"
#include "rpc/process_address.h"
#include "rpc/request_params.h"
#include "rpc/sharing_methods.h"

namespace uexec::rpc {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {
// How often a write waiting for room in the child's input tries again.
constexpr milliseconds kWriteRetry{10};
}  // namespace

const std::vector<std::pair<std::string, int>>& ProcessControlMethods::signal_names() {
  static const std::vector<std::pair<std::string, int>> names = {
      {"interrupt", SIGINT}, {"terminate", SIGTERM}, {"kill", SIGKILL}, {"hangup", SIGHUP},
      {"quit", SIGQUIT},     {"suspend", SIGTSTP},   {"continue", SIGCONT}};
  return names;
}

void ProcessControlMethods::write(Connection& c, const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  std::string chunk_b64 = params.contains("chunk") && params["chunk"].is_string() ? params["chunk"].get<std::string>() : "";
  auto data = base64_decode(chunk_b64);
  if (!data) throw invalid_param("chunk", "invalid base64 in `chunk`");
  std::optional<std::string> write_id;
  if (params.contains("writeId") && params["writeId"].is_string()) write_id = params["writeId"].get<std::string>();
  ProtocolSession& sess = addressed_session(table_, c, params);
  ProtocolProcess* p = table_.find_process(&sess, pid);
  if (!p) return c.reply(id, {{"status", "unknownProcess"}, {"reason", table_.tombstone_reason(sess.id + "/" + pid)}});
  if (!SharingMethods::may_control(c, id, *p, "write to", true)) return;
  if (write_id)
    if (auto status = p->write_status(*write_id)) return c.reply(id, {{"status", *status}});
  auto remember = [p, write_id](const std::string& status) {
    if (write_id) p->remember_write(*write_id, status);
  };
  session::Session& s = p->session;
  auto* proc = s.process();
  bool closed = s.verdict().has_value() || s.finished() || !proc || (!s.tty() && proc->stdin_pipe_fd() < 0);
  if (closed) {
    remember("stdinClosed");
    return c.reply(id, {{"status", "stdinClosed"}});
  }
  auto r = s.write(std::string_view(*data));
  if (r || r.error().code != base::Errc::kLimit) {
    std::string status = r ? "accepted" : "stdinClosed";
    remember(status);
    return c.reply(id, {{"status", status}});
  }
  // The child is not reading and its queue is full: this reply waits for room.
  Connection* conn = &c;
  c.session()->polls.add_ticking(
      p, false,
      [conn, id, p, bytes = std::move(*data), remember](bool) {
        session::Session& ps = p->session;
        if (ps.verdict() || !ps.process()) {
          remember("stdinClosed");
          conn->reply(id, {{"status", "stdinClosed"}});
          return true;
        }
        auto again = ps.write(std::string_view(bytes));
        if (!again && again.error().code == base::Errc::kLimit) return false;
        std::string status = again ? "accepted" : "stdinClosed";
        remember(status);
        conn->reply(id, {{"status", status}});
        return true;
      },
      kWriteRetry);
}

void ProcessControlMethods::close_stdin(Connection& c, const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  ProtocolSession& sess = addressed_session(table_, c, params);
  ProtocolProcess* p = table_.find_process(&sess, pid);
  if (!p) return c.reply(id, {{"status", "unknownProcess"}, {"reason", table_.tombstone_reason(sess.id + "/" + pid)}});
  if (!SharingMethods::may_control(c, id, *p, "close the input of", true)) return;
  session::Session& s = p->session;
  if (s.verdict()) return c.reply(id, {{"status", "stdinClosed"}});
  if (s.tty()) {
    // A terminal has no separate stdin: queue its VEOF character (normally ^D).
    return c.reply(id, {{"status", s.write(std::string_view("\x04")) ? "accepted" : "stdinClosed"}});
  }
  c.reply(id, {{"status", s.close_stdin() ? "accepted" : "stdinClosed"}});
}

void ProcessControlMethods::signal(Connection& c, const json& id, const json& params) {
  std::string name = need_string(params, "signal");
  auto it = std::find_if(signal_names().begin(), signal_names().end(), [&](auto& kv) { return kv.first == name; });
  if (it == signal_names().end()) {
    std::string all;
    for (const auto& [n, s] : signal_names()) all += (all.empty() ? "`" : ", `") + n + "`";
    throw invalid_param("signal", fmt::format("unknown variant `{}`, expected one of {}", name, all));
  }
  ProtocolProcess* p = addressed_process(table_, c, id, params);
  if (!p) return;
  if (!SharingMethods::may_control(c, id, *p, "signal", true)) return;
  session::Session& s = p->session;
  pty::SignalTarget target = s.tty() ? pty::SignalTarget::kForeground : pty::SignalTarget::kGroup;
  if (params.contains("target") && params["target"].is_string()) {
    std::string t = params["target"];
    if (t == "foreground" && !s.tty()) throw invalid_param("target", "target `foreground` needs a tty process");
    if (t == "group") target = pty::SignalTarget::kGroup;
    else if (t == "process") target = pty::SignalTarget::kLeader;
    else if (t != "foreground") throw invalid_param("target", "unknown target `" + t + "`");
  }
  bool delivered = !s.verdict() && s.signal(it->second, target).has_value();
  c.reply(id, {{"delivered", delivered}});
}

void ProcessControlMethods::terminate(Connection& c, const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  long grace = opt_number<long>(params, "graceMs").value_or(1000);
  ProtocolProcess* p = table_.find_process(&addressed_session(table_, c, params), pid);
  if (!p || p->session.verdict()) return c.reply(id, {{"running", false}});
  if (!SharingMethods::may_control(c, id, *p, "terminate", false)) return;
  session::Session& s = p->session;
  if (grace <= 0) {
    (void)s.signal(SIGKILL, pty::SignalTarget::kGroup);
    if (s.tty()) (void)s.signal(SIGKILL, pty::SignalTarget::kForeground);
  } else {
    s.terminate(milliseconds{grace});
  }
  c.reply(id, {{"running", true}});
}

void ProcessControlMethods::resize(Connection& c, const json& id, const json& params) {
  ProtocolProcess* p = addressed_process(table_, c, id, params);
  if (!p) return;
  auto rows = opt_number<long>(params, "rows"), cols = opt_number<long>(params, "cols");
  if (!rows || !cols || *rows < 1 || *rows > 1000 || *cols < 1 || *cols > 1000)
    throw invalid_param("rows", "rows and cols must be 1-1000");
  if (!p->session.tty())
    return c.error(id, kInvalidRequest, "process " + p->id + " is not a tty", {{"kind", "notTty"}, {"processId", p->id}});
  if (!SharingMethods::may_control(c, id, *p, "resize", false)) return;
  auto r = p->session.resize({static_cast<unsigned short>(*rows), static_cast<unsigned short>(*cols)});
  if (!r) return c.error(id, kInvalidRequest, r.error().message(), {{"kind", "invalidRequest"}});
  c.reply(id, json::object());
}

}  // namespace uexec::rpc
