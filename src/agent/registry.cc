#include "agent/registry.h"

#include <fmt/core.h>

#include <algorithm>
#include <random>

#include "agent/tool_args.h"
#include "agent/time_text.h"
#include "session/utf8_cut.h"

namespace uexec::agent {

using base::Errc;
using base::Error;
using base::Result;
using std::chrono::milliseconds;

namespace {

constexpr long kIdMin = 1000, kIdMax = 100000;

// The last `n` bytes `ring` holds.
std::string ring_tail(const session::OutputRing& ring, std::size_t n) {
  return ring.read_from(ring.total() > n ? ring.total() - n : 0, n).text();
}

// Why an id is not live (docs/agent.md §5.3): the parenthesised reason, and for killed,
// pruned and denied the last output after it.
std::string ended_text(long id, const session::Ending& end, const std::optional<std::string_view>& killed_by,
                       const std::optional<std::string_view>& denial, std::string_view tail) {
  std::string at = clock_text(end.wall), ago = age_text(Clock::now() - end.at);
  std::string_view reason = end.reason;
  if (reason == "exited")
    return fmt::format("Unknown process id {} (exited with code {} at {}, {} ago; its output was already returned "
                       "(still readable with read_output while it lingers))",
                       id, end.status ? end.status->shell_code() : 0, at, ago);
  std::string text;
  if (reason == "killed") {
    text = fmt::format("killed by {} with {} at {}, {} ago", killed_by.value_or("a signal not sent by uexec"),
                       end.status && end.status->signal ? pty::signal_name(end.status->signal) : std::string("SIGTERM"),
                       at, ago);
  } else if (reason == "pruned") {
    text = fmt::format("closed at {}, {} ago, to stay within 64 open sessions", at, ago);
  } else {
    text = fmt::format("denied by the sandbox ({}) at {}, {} ago", denial.value_or("unknown"), at, ago);
  }
  std::string_view last = tail.size() > 1000 ? tail.substr(tail.size() - 1000) : tail;  // <= 250 tokens
  return fmt::format("Unknown process id {} ({})\nLast output:\n{}", id, text, session::lossy_decode(last));
}

std::optional<std::string_view> note_or_none(std::string_view note) {
  return note.empty() ? std::nullopt : std::optional(note);
}

}  // namespace

SessionRegistry::SessionRegistry(session::ProcessManager& pm, const base::AgentConfig& cfg)
    : pm_(pm),
      loop_(pm.loop()),
      cfg_(cfg),
      tombstones_(cfg.tombstones_max, kTombstoneNoteBytes),
      issued_(static_cast<std::size_t>(kIdMax), false),
      sweep_(pm.loop()) {}

void SessionRegistry::forget_all() {
  while (!records_.empty()) forget(records_.begin());
}

void SessionRegistry::forget(std::map<long, std::unique_ptr<AgentSession>>::iterator it) {
  long id = it->first;
  if (before_forget) before_forget(id);
  it->second->sub.reset();
  pm_.remove(std::to_string(id));
  records_.erase(it);
}

// ---- ids ---------------------------------------------------------------------------------------

bool SessionRegistry::issued(long id) const {
  return id >= kIdMin && id < kIdMax && issued_[static_cast<std::size_t>(id)];
}

long SessionRegistry::allocate_id() {
  auto usable = [&](long id) { return !records_.count(id) && !tombstones_.contains(key(id)) && !journaled(id); };
  if (cfg_.deterministic_ids) {
    // Round the range (ids held by records, tombstones and the journal are skipped; they never
    // fill it: the journal reserves at most half).
    for (long tries = 0; tries < kIdMax && !usable(next_deterministic_id_); ++tries)
      if (++next_deterministic_id_ >= kIdMax) next_deterministic_id_ = kIdMin;
    long id = next_deterministic_id_;
    if (++next_deterministic_id_ >= kIdMax) next_deterministic_id_ = kIdMin;
    issued_[static_cast<std::size_t>(id)] = true;
    return id;
  }
  static thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<long> dist(kIdMin, kIdMax - 1);
  long id = dist(rng);
  // Prefer ids never issued, so "never started" stays distinguishable from "expired".
  for (int i = 0; i < 64 && (issued(id) || !usable(id)); ++i) id = dist(rng);
  while (!usable(id)) id = dist(rng);
  issued_[static_cast<std::size_t>(id)] = true;
  return id;
}

void SessionRegistry::release_id(long id) { issued_[static_cast<std::size_t>(id)] = false; }

void SessionRegistry::reserve_journaled(const std::vector<long>& ids) {
  if (journaled_.empty()) journaled_.assign(static_cast<std::size_t>(kIdMax), false);
  for (long id : ids)
    if (id >= kIdMin && id < kIdMax) journaled_[static_cast<std::size_t>(id)] = true;
}

bool SessionRegistry::journaled(long id) const {
  return id >= kIdMin && id < kIdMax && !journaled_.empty() && journaled_[static_cast<std::size_t>(id)];
}

// ---- records -----------------------------------------------------------------------------------

AgentSession& SessionRegistry::add(long id, session::Session& session, CallId origin) {
  auto& a = *records_.emplace(id, std::make_unique<AgentSession>(loop_, id, session, origin, Clock::now()))
                 .first->second;
  a.grace.start(cfg_.early_exit_grace, [this, id] {
    if (auto* x = find(id); x && !x->session->verdict() && !x->ended) count(*x);
  });
  return a;
}

AgentSession* SessionRegistry::find(long id) {
  auto it = records_.find(id);
  return it == records_.end() ? nullptr : it->second.get();
}

AgentSession* SessionRegistry::find_named(const std::string& name) {
  for (auto& [id, a] : records_)
    if (!a->ended && a->session->name() == name) return a.get();
  return nullptr;
}

Result<AgentSession*> SessionRegistry::find_target(const std::optional<long>& id,
                                                   const std::optional<std::string>& name, const char* tool,
                                                   bool allow_ended) {
  if (name && !id) {
    if (auto* a = find_named(*name)) return a;
    return tool_error(fmt::format("{} failed: no live session named {}", tool, *name));
  }
  if (!id) return tool_error(fmt::format("{} failed: session_id or name is required", tool));
  auto* a = find(*id);
  if (a && (!a->ended || allow_ended)) return a;
  return Error{Errc::kNotFound, 0, fmt::format("{} failed: {}", tool, unknown_id_text(*id))};
}

std::size_t SessionRegistry::live_count() const noexcept {
  std::size_t n = 0;
  for (const auto& [id, a] : records_)
    if (a->counted && !a->ended) ++n;
  return n;
}

// ---- the lifecycle -----------------------------------------------------------------------------

void SessionRegistry::count(AgentSession& a) {
  std::vector<std::string> warnings;
  if (live_count() >= cfg_.max_sessions) prune_one(warnings);
  a.counted = true;
  std::size_t n = live_count();
  if (n >= cfg_.warn_sessions)
    warnings.push_back(fmt::format(
        "Warning: {} of {} sessions are open for this client. At {} the least recently used one is closed (exited ones "
        "first; the {} most recently used are kept). Reuse sessions or close them with kill_session.",
        n, cfg_.max_sessions, cfg_.max_sessions, cfg_.protected_recent));
  if (on_counted && !warnings.empty()) on_counted(a, std::move(warnings));
}

void SessionRegistry::prune_one(std::vector<std::string>& warnings) {
  std::vector<AgentSession*> live;
  for (auto& [id, a] : records_)
    if (a->counted && !a->ended) live.push_back(a.get());
  std::sort(live.begin(), live.end(), [](auto* x, auto* y) { return x->last_used > y->last_used; });
  if (live.size() <= cfg_.protected_recent) return;
  AgentSession* victim = nullptr;
  for (std::size_t i = live.size(); i-- > cfg_.protected_recent;) {  // least recently used first
    if (live[i]->session->exited()) {
      victim = live[i];
      break;
    }
  }
  if (!victim) victim = live.back();
  warnings.push_back(fmt::format("Warning: session {} (`{}`) was closed to stay within {} open sessions.", victim->id,
                                 victim->cmd(), cfg_.max_sessions));
  victim->killed_by = "pruning";
  mark_ended(*victim, "pruned");
  victim->session->terminate();
}

const char* SessionRegistry::end_reason_of(const AgentSession& a) {
  const auto& v = a.session->verdict();
  return v && v->denial ? "denied" : (a.killed_by ? "killed" : "exited");
}

void SessionRegistry::mark_ended(AgentSession& a, const char* reason) {
  if (a.ended) return;
  a.ended = true;
  a.end_reason = reason;
  a.ended_at = Clock::now();
  a.ended_wall = WallClock::now();
  if (!sweep_.active())
    sweep_.start(std::min(cfg_.ended_linger, milliseconds{30000}), [this] { sweep_ended(); },
                 std::min(cfg_.ended_linger, milliseconds{30000}));
}

void SessionRegistry::sweep_ended() {
  auto now = Clock::now();
  std::vector<long> expired;
  bool any_ended = false;
  for (auto& [id, a] : records_) {
    if (!a->ended) continue;
    any_ended = true;
    if (now - a->ended_at >= cfg_.ended_linger && !(has_calls && has_calls(id))) expired.push_back(id);
  }
  for (long id : expired) to_tombstone(id);
  if (!any_ended) sweep_.stop();
}

// The record goes; the tombstone keeps what the Session held that is still worth saying.
void SessionRegistry::to_tombstone(long id) {
  auto it = records_.find(id);
  if (it == records_.end()) return;
  const AgentSession& a = *it->second;
  const session::Session& s = *a.session;
  session::Ending end{a.end_reason ? a.end_reason : "exited", std::nullopt, a.ended_at, a.ended_wall};
  std::string denial;
  if (const auto& v = s.verdict()) {
    end.status = v->status;
    if (v->denial) denial = v->denial->describe();
  }
  std::string tail = ring_tail(s.output(), 1024);
  tombstones_.add(key(id), end, {s.name(), a.killed_by.value_or(""), denial, tail, a.cmd(), s.cwd()});
  forget(it);
}

std::string SessionRegistry::unknown_id_text(long id) const {
  if (auto it = records_.find(id); it != records_.end() && it->second->ended) {
    const AgentSession& a = *it->second;
    const auto& v = a.session->verdict();
    session::Ending end{a.end_reason, v ? std::optional(v->status) : std::nullopt, a.ended_at, a.ended_wall};
    std::optional<std::string> denial;
    if (v && v->denial) denial = v->denial->describe();
    std::optional<std::string_view> killed_by, denial_view;
    if (a.killed_by) killed_by = *a.killed_by;
    if (denial) denial_view = *denial;
    return ended_text(id, end, killed_by, denial_view, ring_tail(a.session->output(), 1024));
  }
  if (auto t = tombstones_.find(key(id)))
    return ended_text(id, t->ending, note_or_none(t->notes[kKilledBy]), note_or_none(t->notes[kDenial]),
                      t->notes[kLastOutput]);
  if (issued(id)) return fmt::format("Unknown process id {} (the session ended earlier and its record is no longer kept)", id);
  if (journaled(id))
    return fmt::format("Unknown process id {} (an earlier daemon ran it; read_output shows its output while the journal keeps it)",
                       id);
  return fmt::format("Unknown process id {} (no session with this id was started by this manager)", id);
}

}  // namespace uexec::agent
