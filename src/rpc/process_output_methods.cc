#include "rpc/process_output_methods.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "agent/client_regex.h"
#include "rpc/output_pump.h"
#include "rpc/process_address.h"
#include "rpc/process_wait.h"
#include "rpc/request_params.h"
#include "rpc/verdict_json.h"
#include "term/screen.h"

namespace uexec::rpc {

using nlohmann::json;
using std::chrono::milliseconds;

bool ProcessOutputMethods::waits_full(Connection& c, const json& id) {
  if (c.session()->polls.polls() < opts_.max_waits) return false;
  c.error(id, kInternalError, fmt::format("too many pending waits on this connection (max {})", opts_.max_waits),
          {{"kind", "limitReached"}, {"limit", "waits"}, {"max", opts_.max_waits}});
  return true;
}

void ProcessOutputMethods::read(Connection& c, const json& id, const json& params) {
  ProtocolProcess* p = addressed_process(table_, c, id, params);
  if (!p) return;
  std::uint64_t after = opt_number<std::uint64_t>(params, "afterSeq").value_or(0);
  std::size_t max_bytes = opt_number<std::size_t>(params, "maxBytes").value_or(opts_.read_max_bytes);
  std::uint64_t wait_ms = std::min<std::uint64_t>(opt_number<std::uint64_t>(params, "waitMs").value_or(0), 3600000);
  const bool timestamps = params.contains("timestamps") && params["timestamps"].is_boolean() && params["timestamps"].get<bool>();
  const session::Session& s = p->session;
  auto ready = [&s, after] {
    const auto& ring = s.output();
    return ring.offset_after_seq(after) < ring.total() || s.finished() || s.exited_seq() > after;
  };
  if (ready() || wait_ms == 0) return c.reply(id, OutputPump::read(s, after, max_bytes, timestamps));
  if (waits_full(c, id)) return;
  // A long poll: a waiter, woken by the ring; it never blocks other requests.
  Connection* conn = &c;
  c.session()->polls.add_deadline(
      p,
      [conn, id, &s, after, max_bytes, timestamps, ready](bool timed_out) {
        if (!ready() && !timed_out) return false;
        conn->reply(id, OutputPump::read(s, after, max_bytes, timestamps));
        return true;
      },
      milliseconds{static_cast<long>(wait_ms)});
}

void ProcessOutputMethods::wait(Connection& c, const json& id, const json& params) {
  ProtocolProcess* p = addressed_process(table_, c, id, params);
  if (!p) return;
  const json until = params.contains("until") && params["until"].is_object() ? params["until"] : json::object();
  agent::Until u;
  if (until.contains("regex")) {
    auto compiled = agent::compile_client_regex(until["regex"].get<std::string>());
    if (!compiled) throw invalid_param("until.regex", "invalid regex: " + compiled.error().context);
    u.regex = std::move(*compiled);
  }
  if (auto idle = opt_number<long>(until, "idleMs")) {
    if (*idle < 0 || *idle > 86400000) throw invalid_param("until.idleMs", "idleMs must be 0..86400000");
    u.idle = milliseconds{*idle};
  }
  u.bytes = opt_number<std::uint64_t>(until, "bytes");
  if (auto port = opt_number<long>(until, "portOpen")) {
    if (*port < 1 || *port > 65535) throw invalid_param("until.portOpen", "portOpen must be a TCP port, 1..65535");
    u.port = static_cast<int>(*port);
  }
  long timeout = std::clamp<long>(opt_number<long>(params, "timeoutMs").value_or(30000), 0, 86400000);
  session::Session& s = p->session;
  std::uint64_t after = params.contains("afterSeq") && !params["afterSeq"].is_null()
                            ? opt_number<std::uint64_t>(params, "afterSeq").value_or(0)
                            : s.next_seq() - 1;
  auto engine = std::make_shared<ProcessWait>(s, std::move(u), after, milliseconds{timeout});
  Connection* conn = &c;
  auto check = [conn, id, &s, engine](bool) {
    auto fired = engine->check();
    if (!fired) return false;
    json r = {{"fired", fired->fired},
              {"nextSeq", s.next_seq()},
              {"exited", s.verdict().has_value()},
              {"closed", s.finished()},
              {"match", std::move(fired->match)}};
    put_exit_status(r, s);
    conn->reply(id, std::move(r));
    return true;
  };
  if (check(false)) return;
  if (waits_full(c, id)) return;
  c.session()->polls.add_ticking(p, true, std::move(check), ProcessWait::kTick);
}

void ProcessOutputMethods::snapshot(Connection& c, const json& id, const json& params) {
  ProtocolProcess* p = addressed_process(table_, c, id, params);
  if (!p) return;
  std::string format = "text";
  if (params.contains("format") && !params["format"].is_null()) {
    if (!params["format"].is_string() || (params["format"] != "text" && params["format"] != "ansi"))
      throw invalid_param("format", "format must be \"text\" or \"ansi\"");
    format = params["format"];
  }
  if (!p->session.tty())
    return c.error(id, kInvalidRequest, "process " + p->id + " is not a tty", {{"kind", "notTty"}, {"processId", p->id}});
  auto st = p->session.screen();
  if (!st) return c.error(id, kInternalError, st.error().message(), {{"kind", "unsupported"}, {"feature", "screen"}});
  const term::Screen& sc = *st->screen;
  auto cur = sc.cursor();
  json out = {{"rows", sc.size().rows},
              {"cols", sc.size().cols},
              {"lines", sc.lines()},
              {"cursor", {{"row", cur.row}, {"col", cur.col}, {"visible", cur.visible}}},
              {"altScreen", sc.alt_screen()},
              {"title", sc.title()},
              {"seq", st->seq},
              {"exact", st->exact},
              {"scrollbackLines", sc.scrollback().size()}};
  if (format == "ansi") out["ansi"] = sc.ansi();
  c.reply(id, std::move(out));  // invalid UTF-8 in terminal text is replaced, never thrown
}

}  // namespace uexec::rpc
