#include "agent/list_sessions.h"

#include <fmt/core.h>

#include <algorithm>

#include "agent/awaiting_input.h"
#include "agent/time_text.h"
#include "pty/exit_status.h"

namespace uexec::agent {

using session::Offset;

ListResult list_sessions(SessionRegistry& registry, const ListParams& p, const base::AgentConfig& cfg) {
  ListResult out;
  auto now = Clock::now();
  for (const auto& [id, a] : registry.records()) {
    if (a->ended && !p.include_exited) continue;
    const session::Session& s = *a->session;
    SessionRow row;
    row.id = id;
    row.name = a->name();
    row.command = a->cmd().size() > 200 ? a->cmd().substr(0, 200) : a->cmd();
    row.cwd = s.cwd();
    row.tty = s.tty();
    row.age_s = seconds(now - s.started_at());
    row.idle_s = seconds(now - std::max(a->input.last_output(), a->input.last_input()));
    const auto& ring = a->session->output();
    row.unread_bytes = ring.total() - std::min(a->reader, ring.total());
    row.retained_bytes = ring.retained();
    row.omitted_bytes = ring.evicted();
    Offset from = ring.total() > 4096 ? ring.total() - 4096 : 0;
    row.last_line = last_line(ring.read_from(from, 4096).text(), 120);
    if (const auto& v = a->session->verdict()) {
      row.exit_code = v->status.shell_code();
      if (v->status.signal) row.signal = pty::signal_name(v->status.signal);
    }
    row.killed_by = a->killed_by;
    row.containment = session::tier_name(a->session->containment_tier());
    if (a->ended)
      row.state = std::string("ended:") + a->end_reason;
    else if (a->session->verdict())
      row.state = "exited";
    else if (a->input.probe(*a->session, now, cfg.input_quiet))
      row.state = "awaiting_input";
    else
      row.state = "running";
    out.rows.push_back(std::move(row));
  }
  if (p.include_exited) {
    int shown = 0;
    registry.tombstones().newest_first([&](const session::Tombstones::Entry& t) {
      if (shown == 20 || now - t.ending.at > std::chrono::minutes{10}) return false;
      auto note = [&](SessionRegistry::Note n) {
        std::string_view v = t.notes[n];
        return v.empty() ? std::nullopt : std::optional<std::string>(v);
      };
      SessionRow row;
      row.id = static_cast<long>(t.key);
      row.name = note(SessionRegistry::kName);
      row.command = t.notes[SessionRegistry::kCommand];
      row.cwd = t.notes[SessionRegistry::kCwd];
      row.state = std::string("ended:") + t.ending.reason;
      if (t.ending.status) row.exit_code = t.ending.status->shell_code();
      row.killed_by = note(SessionRegistry::kKilledBy);
      row.age_s = seconds(now - t.ending.at);
      out.rows.push_back(std::move(row));
      ++shown;
      return true;
    });
  }
  out.text = "ID NAME STATE AGE IDLE TTY EXIT COMMAND\n";
  for (const auto& r : out.rows)
    out.text += fmt::format("{} {} {} {} {} {} {} {}\n", r.id, r.name.value_or("-"), r.state,
                            age_text(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.age_s))),
                            age_text(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.idle_s))),
                            r.tty ? "yes" : "no", r.exit_code ? std::to_string(*r.exit_code) : "-", r.command);
  return out;
}

}  // namespace uexec::agent
