#include "rpc/verdict_json.h"

#include "pty/exit_status.h"

namespace uexec::rpc {

json denial_json(const policy::SandboxDenied& denial) {
  return {{"source", policy::denial_source_name(denial.source)}, {"mechanism", denial.mechanism}, {"detail", denial.detail}};
}

void put_exit_status(json& out, const session::Session& s) {
  const auto& v = s.verdict();
  out["exitCode"] = v ? json(v->status.shell_code()) : json();
  out["signal"] = v && v->status.signal ? json(pty::signal_name(v->status.signal)) : json();
}

void put_denial(json& out, const session::Session& s) {
  const auto& v = s.verdict();
  out["sandboxDenied"] = v && v->sandbox_denied();
  out["denial"] = v && v->denial ? denial_json(*v->denial) : json();
  json records = json::array();
  if (const auto* log = s.denial_log())
    for (const auto& r : log->records) records.push_back({{"source", r.source}, {"kind", r.kind}, {"detail", r.detail}});
  out["sandboxDenials"] = v ? std::move(records) : json();
}

void put_ended_by(json& out, const session::Session& s) {
  if (const auto& by = s.ended_by()) out["endedBy"] = {{"limit", by->limit}, {"message", by->message}};
}

json limit_events_json(const session::Session& s) {
  auto e = s.limit_events();
  return {{"oomKills", e.oom_kills},
          {"pidsMaxHits", e.pids_max_hits},
          {"cpuThrottledMs", e.throttled_us / 1000},
          {"throttledMs", s.output_throttled().count()}};
}

}  // namespace uexec::rpc
