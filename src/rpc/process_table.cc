#include "rpc/process_table.h"

#include <fmt/core.h>

#include <random>

#include "rpc/connection.h"

namespace uexec::rpc {

namespace {

std::string new_uuid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uint64_t a = rng(), b = rng();
  a = (a & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;  // version 4
  b = (b & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // variant 10
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF, a & 0xFFFF, b >> 48,
                     b & 0xFFFFFFFFFFFFull);
}

}  // namespace

ProcessTable::ProcessTable(session::ProcessManager& pm, const ExecServerOptions& options)
    : pm_(pm), opts_(options) {}

ProcessTable::~ProcessTable() {
  for (auto& [sid, s] : sessions_) {
    s->polls.clear();
    for (auto& [pid, p] : s->processes) {
      p->ring_subscription.reset();
      if (!p->agent) pm_.remove(p->key);
    }
  }
}

ProtocolSession& ProcessTable::new_session() {
  auto s = std::make_unique<ProtocolSession>(pm_.loop(), new_uuid());
  ProtocolSession& raw = *s;
  sessions_.emplace(raw.id, std::move(s));
  return raw;
}

ProtocolSession& ProcessTable::new_session(const std::string& id) {
  auto s = std::make_unique<ProtocolSession>(pm_.loop(), id);
  ProtocolSession& raw = *s;
  sessions_.emplace(raw.id, std::move(s));
  return raw;
}

ProtocolSession* ProcessTable::find_session(const std::string& id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

ProtocolProcess* ProcessTable::find_process(ProtocolSession* session, const std::string& id) {
  if (!session) return nullptr;
  auto it = session->processes.find(id);
  return it == session->processes.end() ? nullptr : it->second.get();
}

// Names are process/start's: an agent session's name is the AgentService's to keep unique.
ProtocolProcess* ProcessTable::find_named(const std::string& name) {
  for (auto& [sid, s] : sessions_)
    for (auto& [pid, p] : s->processes)
      if (!p->agent && !p->session.finished() && p->session.name() == name) return p.get();
  return nullptr;
}

std::size_t ProcessTable::processes() const {
  std::size_t n = 0;
  for (const auto& [sid, s] : sessions_) n += s->processes.size();
  return n;
}

ProtocolProcess& ProcessTable::add(ProtocolSession& owner, std::string id, std::string key, session::Session& of,
                                   bool agent) {
  auto p = std::make_unique<ProtocolProcess>(owner, id, std::move(key), of, agent);
  ProtocolProcess& raw = *p;
  raw.ring_subscription = of.output().subscribe([this, &raw] {
    if (on_change) on_change(raw);
  });
  owner.processes.emplace(std::move(id), std::move(p));
  return raw;
}

void ProcessTable::after_closed(ProtocolProcess& p) {
  if (p.closed_seen) return;
  p.closed_seen = true;
  p.closed_at = std::chrono::steady_clock::now();
  if (p.agent) return;  // retained by the AgentService's rules
  if (!opts_.exited_retention) return;  // kept until the daemon ends
  p.retention = std::make_unique<loop::Timer>(pm_.loop());
  ProtocolProcess* raw = &p;
  p.retention->start(*opts_.exited_retention, [this, raw] { forget(*raw, "exited"); });
}

void ProcessTable::forget(ProtocolProcess& p, const char* reason) {
  ProtocolSession* s = p.owner;
  std::string key = p.key;
  bool agent = p.agent;
  drop_polls(p);
  p.ring_subscription.reset();
  std::string id = p.id;
  s->processes.erase(id);  // destroys p, which never outlives its Session
  if (!agent) {
    pm_.remove(key);
    note_end(s->id, id, reason);
  }
  add_tombstone(key, reason);
  // A detached session kept "until killed" that has nothing left is done.
  if (s->processes.empty() && !s->connection && s->keep_forever) drop_session(s->id);
  if (on_forgotten) on_forgotten();
}

void ProcessTable::note_end(const std::string& session_id, const std::string& process_id, const char* reason) {
  recent_ends_.push_back({session_id, process_id, reason, std::chrono::system_clock::now()});
  if (recent_ends_.size() > kRecentEnds) recent_ends_.pop_front();
}

bool ProcessTable::forget_oldest_closed() {
  ProtocolProcess* oldest = nullptr;
  for (auto& [sid, s] : sessions_)
    for (auto& [pid, p] : s->processes)
      if (!p->agent && p->closed_seen && (!oldest || p->closed_at < oldest->closed_at)) oldest = p.get();
  if (!oldest) return false;
  forget(*oldest, "pruned");
  return true;
}

void ProcessTable::drop_agent_view(long agent_id) {
  std::string pid = std::to_string(agent_id);
  for (auto& [sid, s] : sessions_) {
    auto it = s->processes.find(pid);
    if (it == s->processes.end() || !it->second->agent) continue;
    drop_polls(*it->second);
    s->processes.erase(it);
    return;
  }
}

// Any session may long-poll any process it can address, so every session's polls are looked
// at (a process goes rarely; the polls must not outlive it).
void ProcessTable::drop_polls(const ProtocolProcess& p) {
  for (auto& [sid, s] : sessions_) s->polls.drop(&p);
}

void ProcessTable::detach(ProtocolSession& s) {
  s.connection = nullptr;
  s.approvals.deny_all();
  s.polls.clear();
  if (!opts_.daemon) return;  // stdio: the front door kills everything at EOF
  // Detach: processes keep running within the TTL, then are terminated with the session.
  // "Forever" keeps processes; a session without any (a web viewer's) still ends after the
  // TTL, or every closed tab would stay listed as a viewer.
  if (s.keep_forever && !s.processes.empty()) return;
  std::string sid = s.id;
  s.ttl = std::make_unique<loop::Timer>(pm_.loop());
  std::chrono::milliseconds ttl = s.ttl_ms >= 0 ? std::chrono::milliseconds{s.ttl_ms} : opts_.detached_ttl;
  s.ttl->start(ttl, [this, sid] { drop_session(sid); });
}

void ProcessTable::drop_session(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  ProtocolSession* s = it->second.get();
  s->polls.clear();
  for (auto& [osid, other] : sessions_)
    for (auto& [opid, op] : other->processes) {
      op->subscribers.erase(s);
      op->viewers.erase(s);
    }
  std::vector<std::string> removed;
  for (auto& [pid, p] : s->processes) {
    p->ring_subscription.reset();
    if (p->agent) continue;  // the AgentService's: it ends them by its own rules
    add_tombstone(p->key, "killed");
    note_end(s->id, pid, "killed");
    removed.push_back(p->key);
  }
  sessions_.erase(it);  // the views go before their Sessions
  for (const auto& key : removed) pm_.remove(key);  // SIGKILLs and reaps what still runs
  pm_.freed(session::ProcessManager::kSessionOverheadBytes);  // toward the next trim (ProcessManager)
}

std::string ProcessTable::tombstone_reason(const std::string& key) const {
  // Newest first: an id used again reports its last end. A lookup is an error path.
  auto t = tombstones_.find(session::Tombstones::key_of(key));
  return t ? t->ending.reason : "neverExisted";
}

// The last 4096 ended processes answer with why they ended; older ones are forgotten.
void ProcessTable::add_tombstone(const std::string& key, const char* reason) {
  tombstones_.add(session::Tombstones::key_of(key), session::Ending{reason, std::nullopt, {}, {}});
}

}  // namespace uexec::rpc
