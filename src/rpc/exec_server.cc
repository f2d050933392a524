#include "rpc/exec_server.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <regex>
#include <unordered_map>

#include "agent/agent_env.h"
#include "agent/client_regex.h"
#include "agent/probes.h"
#include "policy/linux_sandbox.h"
#include "base/lazy_deque.h"
#include "base/log.h"
#include "pty/pty_pair.h"
#include "pty/tty_state.h"
#include "rpc/agent_tools.h"
#include "rpc/base64.h"
#include "rpc/c_strings.h"
#include "rpc/file_uri.h"
#include "rpc/json_rpc.h"
#include "rpc/sandbox_params.h"
#include "rpc/sha256.h"
#include "session/utf8_cut.h"

namespace uexec::rpc {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

std::string new_uuid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uint64_t a = rng(), b = rng();
  a = (a & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;  // version 4
  b = (b & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // variant 10
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF, a & 0xFFFF, b >> 48,
                     b & 0xFFFFFFFFFFFFull);
}

// The backends this host can run (sandbox --check's answer), for initialize.
json sandbox_backends() {
  const auto& h = policy::host_support();
  json out = json::array();
  if (h.userns && h.init) out.push_back("namespaces");
  if (h.landlock_abi >= 2) out.push_back("landlock");
  if (!h.bwrap.empty()) out.push_back("bwrap");
  return out;
}

// What the sandbox itself recorded denying (sandboxDenials, an extension).
json denial_records(const session::Session& s) {
  json out = json::array();
  if (const auto* log = s.denial_log())
    for (const auto& r : log->records) out.push_back({{"source", r.source}, {"kind", r.kind}, {"detail", r.detail}});
  return out;
}

const std::vector<std::pair<std::string, int>>& signal_names() {
  static const std::vector<std::pair<std::string, int>> names = {
      {"interrupt", SIGINT}, {"terminate", SIGTERM}, {"kill", SIGKILL}, {"hangup", SIGHUP},
      {"quit", SIGQUIT},     {"suspend", SIGTSTP},   {"continue", SIGCONT}};
  return names;
}

// A JSON-RPC failure raised while decoding params.
struct ParamError {
  int code;
  std::string message;
  json data;
};

const json& need(const json& params, const char* field) {
  if (!params.is_object() || !params.contains(field) || params[field].is_null())
    throw ParamError{kInvalidParams, fmt::format("missing field `{}`", field), {{"kind", "invalidParams"}, {"field", field}}};
  return params[field];
}

std::string need_string(const json& params, const char* field) {
  const json& v = need(params, field);
  if (!v.is_string())
    throw ParamError{kInvalidParams, fmt::format("invalid type for `{}`: expected a string", field),
                     {{"kind", "invalidParams"}, {"field", field}}};
  return v.get<std::string>();
}

template <class T>
std::optional<T> opt_number(const json& params, const char* field) {
  if (!params.is_object() || !params.contains(field) || params[field].is_null()) return std::nullopt;
  const json& v = params[field];
  if (!v.is_number_integer() && !v.is_number_unsigned())
    throw ParamError{kInvalidParams, fmt::format("invalid type for `{}`: expected an integer", field),
                     {{"kind", "invalidParams"}, {"field", field}}};
  if (std::is_unsigned_v<T> && v.is_number_integer() && v.get<long long>() < 0)
    throw ParamError{kInvalidParams, fmt::format("invalid value for `{}`: expected a non-negative integer", field),
                     {{"kind", "invalidParams"}, {"field", field}}};
  return v.get<T>();
}

// process/start's `limits` (base::SessionLimits, camelCase); each bound is checked here.
base::SessionLimits parse_limits(const json& j) {
  base::SessionLimits l;
  if (j.is_null()) return l;
  auto bad = [](const std::string& field, const std::string& what) {
    return ParamError{kInvalidParams, fmt::format("invalid value for `limits.{}`: {}", field, what),
                      {{"kind", "invalidParams"}, {"field", "limits." + field}}};
  };
  if (!j.is_object())
    throw ParamError{kInvalidParams, "invalid type for `limits`: expected an object", {{"kind", "invalidParams"}, {"field", "limits"}}};
  static const std::vector<std::string> kKnown = {"outputBytesPerSec", "retainedBytes", "timeoutMs", "idleTimeoutMs",
                                                  "memoryMaxBytes", "pidsMax", "cpuMax"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(kKnown.begin(), kKnown.end(), it.key()) == kKnown.end())
      throw bad(it.key(), "unknown limit (known: outputBytesPerSec, retainedBytes, timeoutMs, idleTimeoutMs, memoryMaxBytes, pidsMax, cpuMax)");
  auto ranged = [&](const char* field, long long lo, long long hi, const char* unit) -> std::optional<long long> {
    auto v = opt_number<long long>(j, field);
    if (v && (*v < lo || *v > hi)) throw bad(field, fmt::format("expected {}-{} {}", lo, hi, unit));
    return v;
  };
  if (auto v = ranged("outputBytesPerSec", 1024, 1LL << 40, "bytes per second")) l.output_bytes_per_sec = *v;
  if (auto v = ranged("retainedBytes", 1024, 1LL << 30, "bytes")) l.retain_bytes = static_cast<std::size_t>(*v);
  if (auto v = ranged("timeoutMs", 1, 7LL * 86400000, "ms")) l.wall_timeout = std::chrono::milliseconds{*v};
  if (auto v = ranged("idleTimeoutMs", 1, 7LL * 86400000, "ms")) l.idle_timeout = std::chrono::milliseconds{*v};
  if (auto v = ranged("memoryMaxBytes", 1LL << 20, 1LL << 50, "bytes")) l.memory_max_bytes = *v;
  if (auto v = ranged("pidsMax", 1, 4194304, "processes")) l.pids_max = static_cast<std::uint32_t>(*v);
  if (j.contains("cpuMax") && !j["cpuMax"].is_null()) {
    if (!j["cpuMax"].is_number()) throw bad("cpuMax", "expected a number of CPUs");
    double cpus = j["cpuMax"].get<double>();
    if (!(cpus >= 0.01 && cpus <= 4096)) throw bad("cpuMax", "expected 0.01-4096 CPUs");
    l.cpu_max = cpus;
  }
  return l;
}

json limits_json(const base::SessionLimits& l) {
  json j = json::object();
  if (l.output_bytes_per_sec) j["outputBytesPerSec"] = *l.output_bytes_per_sec;
  if (l.retain_bytes) j["retainedBytes"] = *l.retain_bytes;
  if (l.wall_timeout) j["timeoutMs"] = l.wall_timeout->count();
  if (l.idle_timeout) j["idleTimeoutMs"] = l.idle_timeout->count();
  if (l.memory_max_bytes) j["memoryMaxBytes"] = *l.memory_max_bytes;
  if (l.pids_max) j["pidsMax"] = *l.pids_max;
  if (l.cpu_max) j["cpuMax"] = *l.cpu_max;
  return j;
}

// What happened under a session's limits (process/closed, process/list).
json limit_events_json(const session::Session& s) {
  auto e = s.limit_events();
  return {{"oomKills", e.oom_kills},
          {"pidsMaxHits", e.pids_max_hits},
          {"cpuThrottledMs", e.throttled_us / 1000},
          {"throttledMs", s.output_throttled().count()}};
}

std::optional<bool> opt_bool(const json& params, const char* field) {
  if (!params.is_object() || !params.contains(field) || params[field].is_null()) return std::nullopt;
  if (!params[field].is_boolean())
    throw ParamError{kInvalidParams, fmt::format("invalid type for `{}`: expected a boolean", field),
                     {{"kind", "invalidParams"}, {"field", field}}};
  return params[field].get<bool>();
}

}  // namespace

// ---- state -------------------------------------------------------------------------------------

struct ExecServer::SubState {
  session::Offset cursor = 0;
  bool sent_exited = false, sent_closed = false;
  session::Seq last_seq = 0;  // the last output chunk sent (0: none yet)
  bool lagging = false;       // pushes paused for a full queue since the last catch-up
};

struct ExecServer::Process {
  Session* owner = nullptr;
  std::string id;
  std::string id_json;  // `id` as a JSON string, for hand-built notifications
  std::string key;  // the ProcessManager's id: "<sessionId>/<processId>"
  session::Session* s = nullptr;
  // Each subscribing session has its own cursor; none takes output from another.
  std::map<Session*, SubState> subs;
  // Sessions that attached as viewers (subscribe role "viewer"): read-only unless the owner
  // granted them input (the value). Other sessions keep the full sharing of docs/protocol.md §8.
  std::map<Session*, bool> viewers;
  std::unique_ptr<session::Subscription> sub;
  base::LazyDeque<std::string> write_order;  // costs nothing until a writeId is used
  std::unordered_map<std::string, std::string> write_status;
  std::unique_ptr<loop::Timer> retention;
  std::vector<std::string> argv;
  std::string cwd;
  std::string sandbox_kind = "none";  // the kind that runs it (policy::sandbox_kind_name)
  std::string name;  // process/start's `name`: unique among live processes; empty: none
  json metadata = nullptr;
  std::int64_t started_ms = 0;
  std::int64_t exited_ms = 0;
  bool closed_seen = false;
  bool reading_paused = false;  // owner flow control
  // An agent session (exec/command) seen as a process of the calling session (docs/protocol.md §4.6): the
  // ExecService owns its Session and its lifetime; this view never removes it.
  bool agent = false;
};

struct ExecServer::Session {
  std::string id;
  std::string id_json;
  std::map<std::string, std::unique_ptr<Process>> procs;
  Connection* conn = nullptr;
  std::string client_name;
  std::unique_ptr<loop::Timer> ttl;
  std::map<std::uint64_t, std::unique_ptr<Waiter>> waiters;
  long ttl_ms = -2;          // -2: the server default
  bool keep_forever = false; // detachedTtlMs -1 under `uexec serve`: until killed
  // Approvals (docs/protocol.md §4.8): the orchestrator of this session's exec/* calls (its approved-for-session
  // cache lives as long as the session), and the approval/requests awaiting an answer.
  std::shared_ptr<policy::ToolOrchestrator> orchestrator;
  struct PendingApproval {
    std::function<void(policy::Decision)> answer;
    std::unique_ptr<loop::Timer> timeout;
  };
  std::map<std::string, PendingApproval> approvals;
  std::uint64_t next_approval = 1;
  // Each pending approval counts as denied (a detach, the session's end).
  void deny_pending() {
    auto pending = std::move(approvals);
    approvals.clear();
    for (auto& [aid, a] : pending) a.answer(policy::Decision::kDenied);
  }
};

// A long-poll (process/read with waitMs, process/wait, a write waiting for room).
struct ExecServer::Waiter {
  std::uint64_t id = 0;
  Process* p = nullptr;
  bool poll = false;  // a long poll (process/read waitMs, process/wait): counts against max_waits
  std::function<bool(bool timed_out)> check;  // true: answered, drop the waiter
  std::unique_ptr<loop::Timer> timer;
};

namespace {
std::int64_t wall_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

ExecServer::ExecServer(session::ProcessManager& pm, agent::ExecService* exec, std::vector<std::string> server_env,
                       std::string cwd, ExecServerOptions options)
    : pm_(pm),
      exec_(exec),
      tools_(exec ? std::make_unique<AgentTools>(*exec) : nullptr),
      env_(std::move(server_env)),
      cwd_(std::move(cwd)),
      opts_(options),
      tombstones_(kTombstones) {
  if (exec_) {
    exec_->on_event = [this](const agent::SessionEvent& e) {
      if (e.kind == agent::SessionEvent::Kind::kStart) adopt_agent_session(e.session, e.call);
    };
    exec_->on_forget = [this](long id) { drop_agent_session(id); };
  }
}

ExecServer::~ExecServer() {
  if (exec_) {
    exec_->on_event = nullptr;
    exec_->on_forget = nullptr;
  }
  for (auto& [sid, s] : sessions_) {
    s->waiters.clear();
    for (auto& [pid, p] : s->procs) {
      p->sub.reset();
      if (!p->agent) pm_.remove(p->key);
    }
  }
}

// An agent session started by an exec/* call of one of our sessions becomes a process of
// that session, named by its decimal id, so process/list, subscribe, read and snapshot (the
// web UI, `uexec ls`) see it. `origin` is the exec_command's call.
void ExecServer::adopt_agent_session(long id, std::uint64_t origin) {
  Session* owner = nullptr;
  for (auto& [sid, s] : sessions_)
    if (s->conn && s->conn->exec_calls_.count(origin)) owner = s.get();
  if (!owner && exec_caller_) owner = exec_caller_;  // the call has not returned its id yet
  std::string pid = std::to_string(id);
  session::Session* ss = pm_.find(pid);
  if (!owner || !ss || owner->procs.count(pid)) return;  // an MCP call, or the id is taken
  auto p = std::make_unique<Process>();
  Process* raw = p.get();
  raw->owner = owner;
  raw->id = pid;
  raw->id_json = json(pid).dump();
  raw->key = pid;
  raw->s = ss;
  raw->argv = ss->argv();
  raw->cwd = cwd_;
  raw->sandbox_kind = ss->sandbox_kind();
  raw->started_ms = wall_ms();
  raw->agent = true;
  raw->sub = ss->output().subscribe([this, raw] {
    if (raw->s->verdict() && raw->exited_ms == 0) raw->exited_ms = wall_ms();
    push(*raw);
    wake_waiters(*raw);
    check_shutdown();
  });
  owner->procs.emplace(pid, std::move(p));
}

void ExecServer::drop_agent_session(long id) {
  std::string pid = std::to_string(id);
  for (auto& [sid, s] : sessions_) {
    auto it = s->procs.find(pid);
    if (it == s->procs.end() || !it->second->agent) continue;
    for (auto w = s->waiters.begin(); w != s->waiters.end();)
      w = w->second->p == it->second.get() ? s->waiters.erase(w) : std::next(w);
    s->procs.erase(it);
    return;
  }
}

std::size_t ExecServer::processes() const {
  std::size_t n = 0;
  for (const auto& [sid, s] : sessions_) n += s->procs.size();
  return n;
}

std::unique_ptr<ExecServer::Connection> ExecServer::connect(Peer peer) {
  return std::unique_ptr<Connection>(new Connection(*this, std::move(peer)));
}

ExecServer::Session* ExecServer::new_session() {
  auto s = std::make_unique<Session>();
  s->id = new_uuid();
  s->id_json = json(s->id).dump();
  Session* raw = s.get();
  sessions_.emplace(raw->id, std::move(s));
  return raw;
}

ExecServer::Session* ExecServer::find_session(const std::string& id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

ExecServer::Process* ExecServer::find_process(Session* s, const std::string& id) {
  if (!s) return nullptr;
  auto it = s->procs.find(id);
  return it == s->procs.end() ? nullptr : it->second.get();
}

std::string ExecServer::tombstone_reason(const std::string& key) const {
  // Newest first: an id used again reports its last end. A lookup is an error path.
  std::size_t h = std::hash<std::string>{}(key);
  for (std::size_t i = 1; i <= kTombstones; ++i) {
    const Tombstone& t = tombstones_[(tombstone_next_ + kTombstones - i) % kTombstones];
    if (!t.reason) break;
    if (t.key_hash == h) return t.reason;
  }
  return "neverExisted";
}

void ExecServer::forget(Process& p, const char* reason) {
  Session* s = p.owner;
  std::string key = p.key;
  for (auto it = s->waiters.begin(); it != s->waiters.end();)
    it = it->second->p == &p ? s->waiters.erase(it) : std::next(it);
  p.sub.reset();
  if (!p.agent) pm_.remove(key);
  add_tombstone(key, reason);
  s->procs.erase(p.id);  // destroys p
  // A detached session kept "until killed" that has nothing left is done.
  if (s->procs.empty() && !s->conn && s->keep_forever) drop_session(s->id);
  check_shutdown();
}

// The last 4096 ended processes answer with why they ended; older ones are forgotten.
void ExecServer::add_tombstone(const std::string& key, const char* reason) {
  tombstones_[tombstone_next_] = {std::hash<std::string>{}(key), reason};
  tombstone_next_ = (tombstone_next_ + 1) % kTombstones;
}

void ExecServer::drop_session(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  Session* s = it->second.get();
  s->waiters.clear();
  for (auto& [osid, other] : sessions_)
    for (auto& [opid, op] : other->procs) {
      op->subs.erase(s);
      op->viewers.erase(s);
    }
  for (auto& [pid, p] : s->procs) {
    p->sub.reset();
    if (p->agent) continue;  // the ExecService's: it ends them by its own rules
    add_tombstone(p->key, "killed");
    pm_.remove(p->key);  // SIGKILLs and reaps what still runs
  }
  sessions_.erase(it);
  pm_.freed(session::ProcessManager::kSessionOverheadBytes);  // toward the next trim (ProcessManager)
}

void ExecServer::after_closed(Process& p) {
  if (p.closed_seen) return;
  p.closed_seen = true;
  if (p.agent) return;  // retained by the ExecService's rules
  p.retention = std::make_unique<loop::Timer>(pm_.loop());
  Process* raw = &p;
  p.retention->start(opts_.exited_retention, [this, raw] { forget(*raw, "exited"); });
}

void ExecServer::push(Process& p) {
  for (auto& [sess, st] : p.subs)
    if (sess->conn) push_to(p, *sess, st);
}

void ExecServer::push_to(Process& p, Session& to, SubState& st) {
  Connection* c = to.conn;
  const auto& ring = p.s->output();
  session::Seq ex = p.s->exited_seq(), cl = p.s->closed_seq();
  // Notifications about another session's process name that session.
  auto params = [&](json j) {
    if (&to != p.owner) j["sessionId"] = p.owner->id;
    return j;
  };
  auto send_exited = [&] {
    const auto& v = p.s->verdict();
    json j = {{"processId", p.id}, {"seq", ex}, {"exitCode", v->status.shell_code()},
              {"sandboxDenied", v->sandbox_denied()}};
    j["signal"] = v->status.signal ? json(pty::signal_name(v->status.signal)) : json();
    j["denial"] = v->denial ? json{{"source", policy::denial_source_name(v->denial->source)},
                                   {"mechanism", v->denial->mechanism},
                                   {"detail", v->denial->detail}}
                            : json();
    j["sandboxDenials"] = denial_records(*p.s);
    if (const auto& by = p.s->ended_by()) j["endedBy"] = {{"limit", by->limit}, {"message", by->message}};
    c->notify("process/exited", params(std::move(j)));
    st.sent_exited = true;
  };
  while (st.cursor < ring.total()) {
    if (!c->writable()) {
      st.lagging = true;
      // Owner flow control (docs/protocol.md §7): a slow owner slows its child, as a slow terminal
      // would, instead of letting the ring evict output. Other subscribers never do.
      if (&to == p.owner && !p.reading_paused) {
        if (auto* proc = p.s->process()) proc->pause_reading();
        p.reading_paused = true;
      }
      return c->resume_when_drained();
    }
    auto r = ring.read_from(st.cursor, SIZE_MAX);
    // Bytes evicted before this subscriber got them: a slow consumer's when its pushes were
    // paused meanwhile, else retention's.
    if (r.gap > 0 && c->extensions_)
      c->notify("process/gap", params({{"processId", p.id},
                                       {"fromSeq", st.last_seq ? json(st.last_seq + 1) : json()},
                                       {"toSeq", r.pieces.empty() ? json() : json(r.pieces.front().seq - 1)},
                                       {"bytes", r.gap},
                                       {"reason", st.lagging ? "slowConsumer" : "evicted"}}));
    std::size_t i = 0;
    while (i < r.pieces.size()) {
      session::Seq seq = r.pieces[i].seq;
      pty::Stream stream = r.pieces[i].stream;
      std::string bytes;
      while (i < r.pieces.size() && r.pieces[i].seq == seq) {
        bytes.append(reinterpret_cast<const char*>(r.pieces[i].bytes.data()), r.pieces[i].bytes.size());
        ++i;
      }
      if (!st.sent_exited && ex && seq > ex) send_exited();  // exited may precede trailing output
      // The hot path: built by hand (base64 needs no JSON escaping), not through json::dump.
      std::string line = R"({"jsonrpc":"2.0","method":"process/output","params":{"processId":)";
      line += p.id_json;
      if (&to != p.owner) line += R"(,"sessionId":)" + p.owner->id_json;
      line += R"(,"seq":)" + std::to_string(seq) + R"(,"stream":")" + pty::stream_name(stream) + R"(","chunk":")";
      base64_append(line, bytes);
      line += "\"}}";
      c->send_raw(std::move(line));
      st.last_seq = seq;
    }
    if (r.next == st.cursor) break;
    st.cursor = r.next;
  }
  st.lagging = false;  // caught up
  if (!st.sent_exited && ex) send_exited();
  if (st.sent_exited && !st.sent_closed && cl) {
    json closed = params({{"processId", p.id}, {"seq", cl}, {"outputEof", p.s->output_eof()}});
    if (!p.s->lingering().empty()) closed["lingering"] = AgentTools::lingering(p.s->lingering());
    if (p.s->limits().any()) closed["limitEvents"] = limit_events_json(*p.s);
    c->notify("process/closed", std::move(closed));
    st.sent_closed = true;
  }
}

void ExecServer::wake_waiters(Process& p) {
  Session* s = p.owner;
  std::vector<std::uint64_t> ids;
  for (auto& [id, w] : s->waiters)
    if (w->p == &p) ids.push_back(id);
  for (auto id : ids) {
    auto it = s->waiters.find(id);
    if (it != s->waiters.end() && it->second->check(false)) s->waiters.erase(id);
  }
}

void ExecServer::shutdown(bool kill_now, std::function<void()> done) {
  for (auto& [sid, s] : sessions_)
    for (auto& [pid, p] : s->procs) {
      if (p->s->finished()) continue;
      if (kill_now) {
        (void)p->s->signal(SIGKILL, pty::SignalTarget::kGroup);
      } else {
        p->s->terminate();
      }
    }
  shutdown_done_ = std::move(done);
  shutdown_deadline_ = Clock::now() + (kill_now ? milliseconds{400} : pm_.config().terminate_grace + milliseconds{500});
  shutdown_timer_ = std::make_unique<loop::Timer>(pm_.loop());
  check_shutdown();
}

void ExecServer::check_shutdown() {
  if (!shutdown_done_) return;
  bool all = true;
  for (auto& [sid, s] : sessions_)
    for (auto& [pid, p] : s->procs)
      if (!p->s->finished()) all = false;
  if (all || Clock::now() >= shutdown_deadline_) {
    auto fn = std::move(shutdown_done_);
    shutdown_done_ = nullptr;
    shutdown_timer_->stop();
    fn();
    return;
  }
  shutdown_timer_->start(milliseconds{10}, [this] { check_shutdown(); });
}

// ---- connection --------------------------------------------------------------------------------

ExecServer::Connection::~Connection() {
  server_.pm_.freed(session::ProcessManager::kSessionOverheadBytes + (peer_.queued ? peer_.queued() : 0));
  auto pending = std::move(exec_calls_);
  for (auto cid : pending) server_.tools_->cancel(cid);
  if (!session_) return;
  Session* s = session_;
  s->conn = nullptr;
  s->deny_pending();
  for (auto it = s->waiters.begin(); it != s->waiters.end();) it = s->waiters.erase(it);
  if (!server_.opts_.daemon) return;  // stdio: the front door kills everything at EOF
  // Detach: processes keep running within the TTL, then are terminated with the session.
  // "Forever" keeps processes; a session without any (a web viewer's) still ends after the
  // TTL, or every closed tab would stay listed as a viewer.
  if (s->keep_forever && !s->procs.empty()) return;
  std::string sid = s->id;
  s->ttl = std::make_unique<loop::Timer>(server_.pm_.loop());
  ExecServer* server = &server_;
  milliseconds ttl = s->ttl_ms >= 0 ? milliseconds{s->ttl_ms} : server_.opts_.detached_ttl;
  s->ttl->start(ttl, [server, sid] { server->drop_session(sid); });
}

bool ExecServer::Connection::writable() const {
  return !peer_.queued || peer_.queued() < server_.opts_.high_watermark;
}

// Above the high watermark (docs/protocol.md §7): stop reading this connection's requests, which
// bounds the replies it can queue, and close it if it stays there for stallTimeoutMs. Below
// the low watermark: read again, and resume the pushes that paused.
void ExecServer::Connection::resume_when_drained() {
  if (waiting_for_drain_ || !peer_.when_below) return;
  waiting_for_drain_ = true;
  if (peer_.set_reading) peer_.set_reading(false);
  if (peer_.close && server_.opts_.stall_timeout.count() > 0) {
    if (!stall_) stall_ = std::make_unique<loop::Timer>(server_.pm_.loop());
    stall_->start(server_.opts_.stall_timeout, [this] {
      UEXEC_LOG(kWarn, "closing a connection ({}) above the high watermark for {} ms (stallTimeoutMs), {} bytes queued",
                client_name_, server_.opts_.stall_timeout.count(), peer_.queued ? peer_.queued() : 0);
      auto close = peer_.close;
      close();  // may destroy this connection
    });
  }
  peer_.when_below(server_.opts_.low_watermark, [this] {
    waiting_for_drain_ = false;
    if (stall_) stall_->stop();
    if (peer_.set_reading) peer_.set_reading(true);
    if (!session_) return;
    for (auto& [pid, p] : session_->procs) {
      if (p->reading_paused) {
        p->reading_paused = false;
        if (auto* proc = p->s->process()) proc->resume_reading();
      }
      server_.push(*p);
    }
    // And what it watches of other sessions (a viewer): without this, a viewer that fell
    // behind at the end of a stream would never get the rest, `exited` or `closed`.
    for (auto& [sid, other] : server_.sessions_) {
      if (other.get() == session_) continue;
      for (auto& [pid, p] : other->procs)
        if (p->subs.count(session_)) server_.push(*p);
    }
  });
}

void ExecServer::Connection::out(std::string line) {
  peer_.send(std::move(line));
  if (!waiting_for_drain_ && !writable()) resume_when_drained();
}

void ExecServer::Connection::reply(const json& id, json result) { out(encode_result(id, std::move(result))); }

void ExecServer::Connection::error(const json& id, int code, const std::string& message, json data) {
  out(encode_error(id, code, message, std::move(data)));
}

void ExecServer::Connection::send_raw(std::string line) { out(std::move(line)); }

void ExecServer::Connection::notify(const std::string& method, json params) {
  out(encode_notification(method, std::move(params)));
}

void ExecServer::Connection::handle_oversize(std::size_t limit) {
  JsonRpcMessage m = oversize_message(limit, kNativeDialect);
  error(m.id, m.code, m.message, std::move(m.data));
}

void ExecServer::Connection::handle_line(std::string_view line) {
  JsonRpcMessage m = decode_json_rpc_line(line, kNativeDialect);
  switch (m.kind) {
    case JsonRpcMessage::kInvalid: return error(m.id, m.code, m.message, std::move(m.data));
    case JsonRpcMessage::kResponse: return on_response(m.response);  // to our approval/request
    case JsonRpcMessage::kNotification:
      if (m.method == "initialized") {
        if (initialize_replied_) initialized_ = true;
      } else {
        UEXEC_LOG(kInfo, "ignoring notification {}", m.method);
      }
      return;
    case JsonRpcMessage::kRequest: break;
  }
  try {
    request(m.id, m.method, m.params);
  } catch (const ParamError& e) {
    error(m.id, e.code, e.message, e.data);
  } catch (const json::exception& e) {
    error(m.id, kInvalidParams, std::string("invalid params: ") + e.what(), {{"kind", "invalidParams"}});
  }
}

void ExecServer::Connection::request(const json& id, const std::string& method, const json& params) {
  static const std::vector<std::string> kMethods = {
      "initialize", "process/start", "process/read", "process/write", "process/signal", "process/terminate",
      "environment/info", "environment/status", "process/resize", "process/closeStdin", "process/list",
      "process/subscribe", "process/unsubscribe", "process/wait", "process/snapshot", "process/grant", "exec/command",
      "exec/writeStdin", "exec/listSessions", "exec/killSession", "exec/readOutput"};
  if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end())
    return error(id, kMethodNotFound, "method not found: " + method, {{"kind", "methodNotFound"}, {"method", method}});
  if (method == "initialize") return m_initialize(id, params);
  if (!initialize_replied_) {
    return error(id, kInvalidRequest,
                 method == "environment/status" ? "client must call initialize before using environment status methods"
                                                : "client must call initialize before using exec methods",
                 {{"kind", "notInitialized"}});
  }
  if (!initialized_)
    return error(id, kInvalidRequest, "client must send initialized before using exec methods", {{"kind", "notInitialized"}});
  if (method == "process/start") return m_start(id, params);
  if (method == "process/read") return m_read(id, params);
  if (method == "process/write") return m_write(id, params);
  if (method == "process/signal") return m_signal(id, params);
  if (method == "process/terminate") return m_terminate(id, params);
  if (method == "environment/info") return reply(id, environment_info());
  if (method == "environment/status")
    return reply(id, {{"status", "ready"},
                      {"sessions", server_.sessions_.size()},
                      {"processes", server_.processes()},
                      {"handles", server_.pm_.loop().open_handles()}});
  if (method == "process/resize") return m_resize(id, params);
  if (method == "process/closeStdin") return m_close_stdin(id, params);
  if (method == "process/list") return m_list(id, params);
  if (method == "process/subscribe") return m_subscribe(id, params, true);
  if (method == "process/unsubscribe") return m_subscribe(id, params, false);
  if (method == "process/wait") return m_wait(id, params);
  if (method == "process/snapshot") return m_snapshot(id, params);
  if (method == "process/grant") return m_grant(id, params);
  static const std::map<std::string, std::string> kTools = {{"exec/command", "exec_command"},
                                                            {"exec/writeStdin", "write_stdin"},
                                                            {"exec/listSessions", "list_sessions"},
                                                            {"exec/killSession", "kill_session"},
                                                            {"exec/readOutput", "read_output"}};
  return m_exec(id, kTools.at(method), params);
}

json ExecServer::Connection::environment_info() const {
  passwd* pw = ::getpwuid(::getuid());
  std::string shell = pw && pw->pw_shell ? pw->pw_shell : "/bin/sh";
  std::string home = pw && pw->pw_dir ? pw->pw_dir : "/";
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const char* tmp = std::getenv("TMPDIR");
  json caps = json::object();
  for (const char* k : {"networkProxyLaunch", "networkProxyReviewDomains", "credentialMasking",
                        "credentialMaskingCustomProviders", "capabilityDiscoverySandbox", "fsWatchMissing",
                        "capabilityDiscoveryV2", "environmentConfigRead", "httpHeaderEnvVars", "sandboxedFileStreaming",
                        "fileWriteStreaming", "shellSnapshotV2", "windowsMxc", "linuxRootWritePreservesDevices",
                        "linuxApprovedRootWritePreservesRestrictions"})
    caps[k] = false;
  return {{"shell", {{"name", shell.substr(shell.rfind('/') + 1)}, {"path", shell}}},
          {"executorVersion", "0.169.0"},
          {"providerId", "sha256:" + sha256_hex(fmt::format("uexec:{}:{}", host, ::getuid()))},
          {"cwd", file_uri(server_.cwd_)},
          {"userHomeDir", file_uri(home)},
          {"platformOs", "linux"},
          {"prependPathDirs", json::array()},
          {"temporaryDirectories", json::array()},
          {"tempDir", file_uri(tmp && *tmp ? tmp : "/tmp")},
          {"capabilities", caps}};
}

void ExecServer::Connection::m_initialize(const json& id, const json& params) {
  if (initialize_replied_)
    return error(id, kInvalidRequest, "initialize may only be sent once per connection", {{"kind", "alreadyInitialized"}});
  client_name_ = need_string(params, "clientName");
  if (params.contains("capabilities") && params["capabilities"].is_object()) {
    const json& caps = params["capabilities"];
    if (caps.contains("extensions") && caps["extensions"].is_boolean()) extensions_ = caps["extensions"].get<bool>();
    if (caps.contains("approvals") && caps["approvals"].is_boolean()) approvals_ = caps["approvals"].get<bool>();
  }
  bool resumed = false;
  if (params.contains("resumeSessionId") && params["resumeSessionId"].is_string()) {
    std::string rid = params["resumeSessionId"];
    Session* s = server_.opts_.daemon ? server_.find_session(rid) : nullptr;
    if (!s) return error(id, kInvalidRequest, "unknown session id " + rid, {{"kind", "unknownSession"}, {"sessionId", rid}});
    if (s->conn)
      return error(id, kInvalidRequest, "session " + rid + " is attached to another connection",
                   {{"kind", "sessionBusy"}, {"sessionId", rid}});
    s->ttl.reset();
    session_ = s;
    resumed = true;
  } else {
    session_ = server_.new_session();
  }
  session_->conn = this;
  session_->client_name = client_name_;
  if (auto ttl = opt_number<long>(params, "detachedTtlMs")) {
    if (*ttl < 0 && server_.opts_.daemon) session_->keep_forever = true;
    else if (*ttl >= 0) session_->ttl_ms = std::min<long>(*ttl, server_.opts_.detached_ttl.count());
  }
  initialize_replied_ = true;
  json methods = json::array();
  for (const char* m : {"process/resize", "process/closeStdin", "process/list", "process/subscribe",
                        "process/unsubscribe", "process/wait", "process/grant", "exec/command", "exec/writeStdin", "exec/listSessions",
                        "exec/killSession", "exec/readOutput"})
    methods.push_back(m);
  if (term::Screen::available()) methods.push_back("process/snapshot");
  json signals = json::array();
  for (const auto& [n, s] : signal_names()) signals.push_back(n);
  reply(id, {{"sessionId", session_->id},
             {"environmentInfo", environment_info()},
             {"serverInfo", {{"name", "uexec"}, {"version", "0.1.0"}}},
             {"capabilities",
              {{"protocol", "uexec/1"},
               {"codexCompat", "0.169.0"},
               {"methods", methods},
               {"signals", signals},
               {"sandboxModes", {"read-only", "workspace-write", "danger-full-access"}},
               {"sandboxBackends", sandbox_backends()},
               {"maxMessageBytes", 16u << 20},
               {"retainedBytesPerProcess", server_.pm_.config().retain_bytes},
               {"detachedTtlMs", server_.opts_.daemon ? server_.opts_.detached_ttl.count() : 0}}},
             {"resumed", resumed}});
  if (resumed)
    for (auto& [pid, p] : session_->procs) server_.push(*p);
}

ExecServer::Session* ExecServer::Connection::target_session(const json& params) {
  // Ext: `sessionId` addresses a process of another session on the same server.
  if (params.contains("sessionId") && params["sessionId"].is_string()) {
    Session* s = server_.find_session(params["sessionId"]);
    if (!s) throw ParamError{kInvalidRequest, "unknown session id " + params["sessionId"].get<std::string>(),
                             {{"kind", "unknownSession"}, {"sessionId", params["sessionId"]}}};
    return s;
  }
  return session_;
}

ExecServer::Process* ExecServer::Connection::process_or_error(const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  Session* sess = target_session(params);
  Process* p = server_.find_process(sess, pid);
  if (!p) {
    std::string reason = server_.tombstone_reason(sess->id + "/" + pid);
    error(id, kInvalidRequest, "unknown process id " + pid,
          {{"kind", "unknownProcess"}, {"processId", pid}, {"reason", reason}});
  }
  return p;
}

// A viewer without input may only watch: false (and the error sent) when this session may not
// `what` the process. `input`: granted input allows it (writes, signals), else owner-only.
// While the owner is away (no connection), no one can grant, so viewers may act.
bool ExecServer::Connection::may_control(const json& id, Process& p, const char* what, bool input) {
  auto it = p.viewers.find(session_);
  if (it == p.viewers.end() || (input && it->second) || !p.owner->conn) return true;
  error(id, kInvalidRequest,
        fmt::format("this connection is a viewer of process {}: it may not {} it{}", p.id, what,
                    input ? " unless the owner grants input (process/grant)" : ""),
        {{"kind", "readOnly"}, {"processId", p.id}, {"action", what}});
  return false;
}

void ExecServer::Connection::m_start(const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  if (pid.empty() || pid.size() > 256)
    throw ParamError{kInvalidParams, "processId must be 1-256 bytes", {{"kind", "invalidParams"}, {"field", "processId"}}};
  if (auto f = field_with_nul(params, {"argv", "arg0", "cwd", "env", "envPolicy", "sandbox"}))
    throw ParamError{kInvalidParams, nul_field_message(*f), {{"kind", "invalidParams"}, {"field", *f}}};
  const json& argv_j = need(params, "argv");
  if (!argv_j.is_array())
    throw ParamError{kInvalidParams, "invalid type for `argv`: expected an array of strings", {{"kind", "invalidParams"}, {"field", "argv"}}};
  std::vector<std::string> argv;
  for (const auto& a : argv_j) {
    if (!a.is_string())
      throw ParamError{kInvalidParams, "invalid type for `argv`: expected an array of strings", {{"kind", "invalidParams"}, {"field", "argv"}}};
    argv.push_back(a.get<std::string>());
  }
  if (argv.empty()) throw ParamError{kInvalidParams, "argv must not be empty", {{"kind", "invalidParams"}, {"field", "argv"}}};
  std::string cwd = server_.cwd_;
  if (params.contains("cwd") && !params["cwd"].is_null()) {
    if (!params["cwd"].is_string())
      throw ParamError{kInvalidParams, "invalid type for `cwd`: expected a string", {{"kind", "invalidParams"}, {"field", "cwd"}}};
    auto path = path_from_uri(params["cwd"]);
    if (!path) throw ParamError{kInvalidParams, "invalid URI: relative URL without a base", {{"kind", "invalidParams"}, {"field", "cwd"}}};
    cwd = *path;
  }
  bool tty = opt_bool(params, "tty").value_or(false);
  bool pipe_stdin = opt_bool(params, "pipeStdin").value_or(false);
  if (params.contains("networkProxy") && !params["networkProxy"].is_null())
    throw ParamError{kInvalidParams, "networkProxy is not supported by uexec", {{"kind", "unsupported"}, {"field", "networkProxy"}}};
  // Environment: verbatim, or a policy over the server's environment with `env` on top.
  std::vector<std::string> env;
  if (params.contains("envPolicy") && params["envPolicy"].is_object()) {
    const json& ep = params["envPolicy"];
    agent::EnvPolicy pol;
    std::string inherit = ep.value("inherit", "all");
    pol.inherit = inherit == "core" ? agent::EnvPolicy::Inherit::kCore
                                    : (inherit == "none" ? agent::EnvPolicy::Inherit::kNone : agent::EnvPolicy::Inherit::kAll);
    pol.ignore_default_excludes = ep.value("ignoreDefaultExcludes", false);
    if (ep.contains("exclude")) pol.exclude = ep["exclude"].get<std::vector<std::string>>();
    if (ep.contains("includeOnly")) pol.include_only = ep["includeOnly"].get<std::vector<std::string>>();
    if (ep.contains("set"))
      for (auto it = ep["set"].begin(); it != ep["set"].end(); ++it) pol.set.emplace_back(it.key(), it.value().get<std::string>());
    env = agent::apply_env_policy(server_.env_, pol);
  }
  if (params.contains("env") && !params["env"].is_null()) {
    if (!params["env"].is_object())
      throw ParamError{kInvalidParams, "invalid type for `env`: expected a map of strings", {{"kind", "invalidParams"}, {"field", "env"}}};
    for (auto it = params["env"].begin(); it != params["env"].end(); ++it) {
      if (!it.value().is_string())
        throw ParamError{kInvalidParams, "invalid type for `env`: expected a map of strings", {{"kind", "invalidParams"}, {"field", "env"}}};
      agent::env_put(env, it.key(), it.value().get<std::string>());
    }
  }
  policy::ExecRequest req;
  req.argv = argv;
  req.env = env;
  req.cwd = cwd;
  req.tty = tty;
  req.stdin_pipe = pipe_stdin && !tty;
  if (params.contains("arg0") && params["arg0"].is_string()) req.arg0 = params["arg0"].get<std::string>();
  if (params.contains("limits")) req.limits = parse_limits(params["limits"]);
  if (params.contains("size") && !params["size"].is_null()) {
    if (!tty) throw ParamError{kInvalidParams, "size needs a tty process", {{"kind", "invalidParams"}, {"field", "size"}}};
    auto rows = opt_number<long>(params["size"], "rows"), cols = opt_number<long>(params["size"], "cols");
    if (!rows || !cols || *rows < 1 || *rows > 1000 || *cols < 1 || *cols > 1000)
      throw ParamError{kInvalidParams, "size needs rows and cols in 1-1000", {{"kind", "invalidParams"}, {"field", "size"}}};
    req.size = {static_cast<unsigned short>(*rows), static_cast<unsigned short>(*cols)};
  }
  // The sandbox: Codex's shape or uexec's short form; never weakened (sandboxUnavailable).
  policy::SandboxAttempt attempt = policy::SandboxAttempt::none();
  auto unavailable = [&](const base::Error& e) {
    std::string reason = e.context.substr(0, e.context.find(':'));
    return error(id, kInternalError, "sandbox unavailable: " + e.context,
                 {{"kind", "sandboxUnavailable"}, {"backend", "auto"}, {"reason", reason}});
  };
  if (params.contains("sandbox")) {
    auto sb = parse_sandbox_param(params["sandbox"], cwd);
    if (!sb) {
      if (sb.error().code == base::Errc::kPolicy) return unavailable(sb.error());
      throw ParamError{kInvalidParams, sb.error().context, {{"kind", "invalidParams"}, {"field", "sandbox"}}};
    }
    if (*sb) {
      auto a = policy::SandboxAttempt::select((*sb)->profile, (*sb)->backend);
      if (!a) return unavailable(a.error());
      attempt = std::move(*a);
      req.sandbox_policy_cwd = (*sb)->policy_cwd;
    }
  }
  // A named session is idempotent: the same name, argv, cwd and tty is the live one.
  std::string name;
  if (params.contains("name") && !params["name"].is_null()) {
    static const std::regex kName("^[A-Za-z0-9._-]{1,64}$");
    if (!params["name"].is_string() || !std::regex_match(params["name"].get<std::string>(), kName))
      throw ParamError{kInvalidParams, "name must be 1-64 of [A-Za-z0-9._-]", {{"kind", "invalidParams"}, {"field", "name"}}};
    name = params["name"].get<std::string>();
    bool replace = opt_bool(params, "replace").value_or(false);
    for (auto& [sid, sess] : server_.sessions_) {
      for (auto& [ppid, other] : sess->procs) {
        if (other->name != name || other->s->finished()) continue;
        if (other->argv == argv && other->cwd == cwd && other->s->tty() == tty && !replace) {
          Process& e = *other;
          if (opt_bool(params, "subscribe").value_or(true) && !e.subs.count(session_)) {
            if (e.subs.size() >= server_.opts_.max_subscribers)
              return error(id, kInternalError,
                           fmt::format("process {} has {} subscribers, the most it may have", e.id,
                                       server_.opts_.max_subscribers),
                           {{"kind", "limitReached"}, {"limit", "subscribers"}, {"max", server_.opts_.max_subscribers}});
            SubState st;
            st.cursor = e.s->output().total();
            st.sent_exited = e.s->exited_seq() != 0;
            st.sent_closed = e.s->closed_seq() != 0;
            e.subs[session_] = st;
          }
          reply(id, {{"processId", e.id},
                     {"sessionId", e.owner->id},
                     {"existing", true},
                     {"pid", e.s->pid()},
                     {"sandboxType", e.sandbox_kind == "none" ? "none" : "linuxSeccomp"},
                     {"uexecSandbox", e.sandbox_kind},
                     {"nextSeq", e.s->next_seq()}});
          return server_.push(e);
        }
        if (!replace)
          return error(id, kInvalidRequest,
                       fmt::format("name {} is used by process {} of session {} running `{}`; pass replace:true to "
                                   "restart it, or choose another name",
                                   name, other->id, other->owner->id, fmt::join(other->argv, " ")),
                       {{"kind", "nameInUse"}, {"name", name}, {"processId", other->id}, {"sessionId", other->owner->id}});
        other->name.clear();  // replace: the old one ends, the name moves to the new one
        other->s->terminate();
      }
    }
  }
  if (server_.find_process(session_, pid)) {
    auto* p = server_.find_process(session_, pid);
    return error(id, kInvalidRequest, "process " + pid + " already exists",
                 {{"kind", "processExists"}, {"processId", pid}, {"state", p->s->finished() ? "closed" : "running"}});
  }
  if (server_.processes() >= server_.opts_.max_processes)
    return error(id, kInternalError, "process limit reached",
                 {{"kind", "limitReached"}, {"limit", "processes"}, {"max", server_.opts_.max_processes}});
  req.id = session_->id + "/" + pid;
  auto started = server_.pm_.start(req, attempt);
  if (!started) {
    const auto& e = started.error();
    if (e.code == base::Errc::kPolicy) return unavailable(e);
    if (e.code == base::Errc::kExecFailed || e.sys_errno) {
      const char* errno_name = strerrorname_np(e.sys_errno);
      return error(id, kInternalError, fmt::format("{} (os error {})", std::strerror(e.sys_errno), e.sys_errno),
                   {{"kind", "spawnFailed"},
                    {"errno", errno_name ? errno_name : ""},
                    {"syscall", e.context.substr(0, e.context.find(' '))},
                    {"path", e.context.find(' ') == std::string::npos ? "" : e.context.substr(e.context.find(' ') + 1)}});
    }
    if (e.code == base::Errc::kUnsupported)  // limits this machine cannot enforce
      return error(id, kInternalError, e.context, {{"kind", "limitUnavailable"}});
    return error(id, kInvalidParams, e.message(), {{"kind", "invalidParams"}});
  }
  auto p = std::make_unique<Process>();
  Process* raw = p.get();
  raw->owner = session_;
  raw->id = pid;
  raw->id_json = json(pid).dump(-1, ' ', false, json::error_handler_t::replace);
  raw->key = *started;
  raw->s = server_.pm_.find(*started);
  raw->argv = argv;
  raw->cwd = cwd;
  raw->sandbox_kind = policy::sandbox_kind_name(attempt.kind());
  raw->name = name;
  raw->started_ms = wall_ms();
  if (opt_bool(params, "subscribe").value_or(true)) raw->subs[session_] = {};
  if (params.contains("metadata")) raw->metadata = params["metadata"];
  ExecServer* server = &server_;
  raw->sub = raw->s->output().subscribe([server, raw] {
    if (raw->s->verdict() && raw->exited_ms == 0) raw->exited_ms = wall_ms();
    server->push(*raw);
    server->wake_waiters(*raw);
    if (raw->s->finished()) server->after_closed(*raw);
    server->check_shutdown();
  });
  session_->procs.emplace(pid, std::move(p));
  // The reply goes out before any notification for this process: those come from the loop.
  // Codex's names: any Linux kind is "linuxSeccomp"; uexecSandbox says which.
  reply(id, {{"processId", pid},
             {"sandboxType", attempt.sandboxed() ? "linuxSeccomp" : "none"},
             {"uexecSandbox", raw->sandbox_kind},
             {"pid", raw->s->pid()},
             {"sessionId", session_->id},
             {"existing", false}});
}

json ExecServer::Connection::read_result(Process& p, std::uint64_t after_seq, std::size_t max_bytes) const {
  const auto& ring = p.s->output();
  json chunks = json::array();
  std::size_t bytes = 0;
  bool truncated = false;
  session::Seq last = 0;
  // The evicted middle, when this read spans it: after the head's chunks, before the tail's.
  std::uint64_t gap = 0;
  std::optional<session::Seq> gap_from;
  json gap_to;
  // A read of the ring stops at the evicted middle; the tail is a second one.
  for (session::Offset cursor = ring.offset_after_seq(after_seq); cursor < ring.total() && !truncated;) {
    auto r = ring.read_from(cursor, SIZE_MAX);
    if (r.gap > 0) {
      gap += r.gap;
      gap_from = last ? last + 1 : after_seq + 1;
    }
    std::size_t i = 0;
    while (i < r.pieces.size()) {
      session::Seq seq = r.pieces[i].seq;
      if (seq <= after_seq) {  // a merged index entry can start below after_seq
        ++i;
        continue;
      }
      if (!chunks.empty() && bytes >= max_bytes) {
        truncated = true;
        break;
      }
      pty::Stream stream = r.pieces[i].stream;
      std::string data;
      while (i < r.pieces.size() && r.pieces[i].seq == seq) {
        data.append(reinterpret_cast<const char*>(r.pieces[i].bytes.data()), r.pieces[i].bytes.size());
        ++i;
      }
      if (gap_from && gap_to.is_null()) gap_to = seq - 1;
      bytes += data.size();
      last = seq;
      chunks.push_back({{"seq", seq}, {"stream", pty::stream_name(stream)}, {"chunk", base64_encode(data)}});
    }
    if (r.next <= cursor) break;
    cursor = r.next;
  }
  const auto& v = p.s->verdict();
  json out = {{"chunks", chunks},
              {"nextSeq", truncated ? last + 1 : p.s->next_seq()},
              {"exited", v.has_value()},
              {"exitCode", v ? json(v->status.shell_code()) : json()},
              {"closed", p.s->finished()},
              {"failure", nullptr},
              {"sandboxDenied", v && v->sandbox_denied()}};
  out["signal"] = v && v->status.signal ? json(pty::signal_name(v->status.signal)) : json();
  out["denial"] = v && v->denial ? json{{"source", policy::denial_source_name(v->denial->source)},
                                        {"mechanism", v->denial->mechanism},
                                        {"detail", v->denial->detail}}
                                 : json();
  out["sandboxDenials"] = v ? denial_records(*p.s) : json();
  // Cut by maxBytes right at the evicted middle: the next read (from nextSeq) reports it.
  if (truncated && gap > 0 && gap_to.is_null()) gap = 0;
  out["omitted"] = gap > 0 ? json{{"fromSeq", *gap_from}, {"toSeq", gap_to}, {"bytes", gap}} : json();
  return out;
}

void ExecServer::Connection::m_read(const json& id, const json& params) {
  Process* p = process_or_error(id, params);
  if (!p) return;
  std::uint64_t after = opt_number<std::uint64_t>(params, "afterSeq").value_or(0);
  std::size_t max_bytes = opt_number<std::size_t>(params, "maxBytes").value_or(server_.opts_.read_max_bytes);
  std::uint64_t wait_ms = std::min<std::uint64_t>(opt_number<std::uint64_t>(params, "waitMs").value_or(0), 3600000);
  auto ready = [p, after] {
    const auto& ring = p->s->output();
    return ring.offset_after_seq(after) < ring.total() || p->s->finished() || p->s->exited_seq() > after;
  };
  if (ready() || wait_ms == 0) return reply(id, read_result(*p, after, max_bytes));
  if (waits_full(id)) return;
  // A long poll: a waiter, woken by the ring; it never blocks other requests.
  auto w = std::make_unique<Waiter>();
  w->id = server_.next_waiter_++;
  w->p = p;
  w->poll = true;
  w->check = [this, id, p, after, max_bytes, ready](bool timed_out) {
    if (!ready() && !timed_out) return false;
    reply(id, read_result(*p, after, max_bytes));
    return true;
  };
  w->timer = std::make_unique<loop::Timer>(server_.pm_.loop());
  std::uint64_t wid = w->id;
  Session* s = session_;
  w->timer->start(milliseconds{static_cast<long>(wait_ms)}, [s, wid] {
    auto it = s->waiters.find(wid);
    if (it != s->waiters.end() && it->second->check(true)) s->waiters.erase(wid);
  });
  session_->waiters.emplace(wid, std::move(w));
}

bool ExecServer::Connection::waits_full(const json& id) {
  std::size_t n = 0;
  for (const auto& [wid, w] : session_->waiters) n += w->poll ? 1 : 0;
  if (n < server_.opts_.max_waits) return false;
  error(id, kInternalError, fmt::format("too many pending waits on this connection (max {})", server_.opts_.max_waits),
        {{"kind", "limitReached"}, {"limit", "waits"}, {"max", server_.opts_.max_waits}});
  return true;
}

void ExecServer::Connection::m_write(const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  std::string chunk_b64 = params.contains("chunk") && params["chunk"].is_string() ? params["chunk"].get<std::string>() : "";
  auto data = base64_decode(chunk_b64);
  if (!data) throw ParamError{kInvalidParams, "invalid base64 in `chunk`", {{"kind", "invalidParams"}, {"field", "chunk"}}};
  std::optional<std::string> write_id;
  if (params.contains("writeId") && params["writeId"].is_string()) write_id = params["writeId"].get<std::string>();
  Session* sess = target_session(params);
  Process* p = server_.find_process(sess, pid);
  if (!p) return reply(id, {{"status", "unknownProcess"}, {"reason", server_.tombstone_reason(sess->id + "/" + pid)}});
  if (!may_control(id, *p, "write to", true)) return;
  if (write_id) {
    auto it = p->write_status.find(*write_id);
    if (it != p->write_status.end()) return reply(id, {{"status", it->second}});
  }
  auto remember = [p, write_id](const std::string& status) {
    if (!write_id) return;
    p->write_status[*write_id] = status;
    p->write_order.push_back(*write_id);
    if (p->write_order.size() > 4096) {
      p->write_status.erase(p->write_order.front());
      p->write_order.pop_front();
    }
  };
  auto* proc = p->s->process();
  bool closed = p->s->verdict().has_value() || p->s->finished() || !proc ||
                (!p->s->tty() && proc->stdin_pipe_fd() < 0);
  if (closed) {
    remember("stdinClosed");
    return reply(id, {{"status", "stdinClosed"}});
  }
  auto r = p->s->write(std::string_view(*data));
  if (r || r.error().code != base::Errc::kLimit) {
    std::string status = r ? "accepted" : "stdinClosed";
    remember(status);
    return reply(id, {{"status", status}});
  }
  // The child is not reading and its queue is full: this reply waits for room.
  auto w = std::make_unique<Waiter>();
  w->id = server_.next_waiter_++;
  w->p = p;
  std::string bytes = *data;
  w->check = [this, id, p, bytes, remember](bool) {
    auto* pr = p->s->process();
    if (p->s->verdict() || !pr) {
      remember("stdinClosed");
      reply(id, {{"status", "stdinClosed"}});
      return true;
    }
    auto again = p->s->write(std::string_view(bytes));
    if (!again && again.error().code == base::Errc::kLimit) return false;
    std::string status = again ? "accepted" : "stdinClosed";
    remember(status);
    reply(id, {{"status", status}});
    return true;
  };
  w->timer = std::make_unique<loop::Timer>(server_.pm_.loop());
  std::uint64_t wid = w->id;
  Session* s = session_;
  w->timer->start(
      milliseconds{10},
      [s, wid] {
        auto it = s->waiters.find(wid);
        if (it != s->waiters.end() && it->second->check(false)) s->waiters.erase(wid);
      },
      milliseconds{10});
  session_->waiters.emplace(wid, std::move(w));
}

void ExecServer::Connection::m_signal(const json& id, const json& params) {
  std::string name = need_string(params, "signal");
  auto it = std::find_if(signal_names().begin(), signal_names().end(), [&](auto& kv) { return kv.first == name; });
  if (it == signal_names().end()) {
    std::string all;
    for (const auto& [n, s] : signal_names()) all += (all.empty() ? "`" : ", `") + n + "`";
    throw ParamError{kInvalidParams, fmt::format("unknown variant `{}`, expected one of {}", name, all),
                     {{"kind", "invalidParams"}, {"field", "signal"}}};
  }
  Process* p = process_or_error(id, params);
  if (!p) return;
  if (!may_control(id, *p, "signal", true)) return;
  pty::SignalTarget target = p->s->tty() ? pty::SignalTarget::kForeground : pty::SignalTarget::kGroup;
  if (params.contains("target") && params["target"].is_string()) {
    std::string t = params["target"];
    if (t == "foreground" && !p->s->tty())
      throw ParamError{kInvalidParams, "target `foreground` needs a tty process", {{"kind", "invalidParams"}, {"field", "target"}}};
    if (t == "group") target = pty::SignalTarget::kGroup;
    else if (t == "process") target = pty::SignalTarget::kLeader;
    else if (t != "foreground")
      throw ParamError{kInvalidParams, "unknown target `" + t + "`", {{"kind", "invalidParams"}, {"field", "target"}}};
  }
  bool delivered = !p->s->verdict() && p->s->signal(it->second, target).has_value();
  reply(id, {{"delivered", delivered}});
}

void ExecServer::Connection::m_terminate(const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  long grace = opt_number<long>(params, "graceMs").value_or(1000);
  Process* p = server_.find_process(target_session(params), pid);
  if (!p || p->s->verdict()) return reply(id, {{"running", false}});
  if (!may_control(id, *p, "terminate", false)) return;
  if (grace <= 0) {
    (void)p->s->signal(SIGKILL, pty::SignalTarget::kGroup);
    if (p->s->tty()) (void)p->s->signal(SIGKILL, pty::SignalTarget::kForeground);
  } else {
    p->s->terminate(milliseconds{grace});
  }
  reply(id, {{"running", true}});
}

void ExecServer::Connection::m_resize(const json& id, const json& params) {
  Process* p = process_or_error(id, params);
  if (!p) return;
  auto rows = opt_number<long>(params, "rows"), cols = opt_number<long>(params, "cols");
  if (!rows || !cols || *rows < 1 || *rows > 1000 || *cols < 1 || *cols > 1000)
    throw ParamError{kInvalidParams, "rows and cols must be 1-1000", {{"kind", "invalidParams"}, {"field", "rows"}}};
  if (!p->s->tty()) return error(id, kInvalidRequest, "process " + p->id + " is not a tty", {{"kind", "notTty"}, {"processId", p->id}});
  if (!may_control(id, *p, "resize", false)) return;
  auto r = p->s->resize({static_cast<unsigned short>(*rows), static_cast<unsigned short>(*cols)});
  if (!r) return error(id, kInvalidRequest, r.error().message(), {{"kind", "invalidRequest"}});
  reply(id, json::object());
}

void ExecServer::Connection::m_close_stdin(const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  Session* sess = target_session(params);
  Process* p = server_.find_process(sess, pid);
  if (!p) return reply(id, {{"status", "unknownProcess"}, {"reason", server_.tombstone_reason(sess->id + "/" + pid)}});
  if (!may_control(id, *p, "close the input of", true)) return;
  if (p->s->verdict()) return reply(id, {{"status", "stdinClosed"}});
  if (p->s->tty()) {
    // A terminal has no separate stdin: queue its VEOF character (normally ^D).
    return reply(id, {{"status", p->s->write(std::string_view("\x04")) ? "accepted" : "stdinClosed"}});
  }
  reply(id, {{"status", p->s->close_stdin() ? "accepted" : "stdinClosed"}});
}

void ExecServer::Connection::m_list(const json& id, const json& params) {
  bool all = opt_bool(params, "all").value_or(false);
  bool include_closed = opt_bool(params, "includeClosed").value_or(true);
  json out = json::array();
  for (auto& [sid, s] : server_.sessions_) {
    if (!all && s.get() != session_) continue;
    for (auto& [pid, p] : s->procs) {
      if (!include_closed && p->s->finished()) continue;
      const auto& v = p->s->verdict();
      const auto& ring = p->s->output();
      std::string state = p->s->finished() ? "closed" : (v ? "exited" : "running");
      bool awaiting = false;
      if (!v && p->s->tty() && p->s->process() && p->s->process()->master_fd() >= 0) {
        int m = p->s->process()->master_fd();
        awaiting = pty::group_reading_tty(::tcgetpgrp(m), pty::slave_rdev(m));
      }
      json e = {{"sessionId", sid},         {"processId", pid},
                {"name", p->name.empty() ? json() : json(p->name)},
                {"clientName", s->client_name}, {"agentSessionId", p->agent ? json(std::stol(p->id)) : json()}, {"pid", p->s->pid()},
                {"argv", p->argv},           {"cwd", file_uri(p->cwd)},   {"tty", p->s->tty()},
                {"state", state},            {"awaitingInput", awaiting}, {"startedAtMs", p->started_ms},
                {"nextSeq", p->s->next_seq()}, {"retainedBytes", ring.retained()},
                {"omitted", ring.evicted() > 0 ? json{{"bytes", ring.evicted()}} : json()},
                {"subscribers", p->subs.size()},
                {"outputBytes", ring.total()},
                {"sandbox", {{"type", p->sandbox_kind == "none" ? "none" : "linuxSeccomp"},
                             {"backend", p->sandbox_kind == "none" ? json() : json(p->sandbox_kind)}}},
                {"metadata", p->metadata}};
      e["exitedAtMs"] = p->exited_ms ? json(p->exited_ms) : json();
      e["exitCode"] = v ? json(v->status.shell_code()) : json();
      e["signal"] = v && v->status.signal ? json(pty::signal_name(v->status.signal)) : json();
      if (p->s->tty() && p->s->process() && p->s->process()->master_fd() >= 0)
        if (auto sz = pty::get_size(p->s->process()->master_fd())) e["size"] = json{{"rows", sz->rows}, {"cols", sz->cols}};
      json viewers = json::array();
      for (const auto& [vs, input] : p->viewers)
        viewers.push_back({{"sessionId", vs->id}, {"clientName", vs->client_name}, {"input", input},
                           {"connected", vs->conn != nullptr}});
      e["viewers"] = std::move(viewers);
      auto me = p->viewers.find(session_);
      e["role"] = s.get() == session_ ? "owner" : (me != p->viewers.end() ? "viewer" : "participant");
      e["ownerConnected"] = s->conn != nullptr;
      e["containment"] = session::tier_name(p->s->containment_tier());
      if (!p->s->lingering().empty()) e["lingering"] = AgentTools::lingering(p->s->lingering());
      if (p->s->limits().any()) {
        e["limits"] = limits_json(p->s->limits());
        e["limitEvents"] = limit_events_json(*p->s);
      }
      if (const auto& by = p->s->ended_by()) e["endedBy"] = {{"limit", by->limit}, {"message", by->message}};
      e["canInput"] = me == p->viewers.end() || me->second || !s->conn;
      out.push_back(std::move(e));
    }
  }
  reply(id, {{"processes", out}});
}

// process/snapshot: the screen model's state; `seq` is the last output applied, so a
// subscribe with afterSeq = seq continues without a gap or a duplicate.
void ExecServer::Connection::m_snapshot(const json& id, const json& params) {
  Process* p = process_or_error(id, params);
  if (!p) return;
  std::string format = "text";
  if (params.contains("format") && !params["format"].is_null()) {
    if (!params["format"].is_string() || (params["format"] != "text" && params["format"] != "ansi"))
      throw ParamError{kInvalidParams, "format must be \"text\" or \"ansi\"", {{"kind", "invalidParams"}, {"field", "format"}}};
    format = params["format"];
  }
  if (!p->s->tty()) return error(id, kInvalidRequest, "process " + p->id + " is not a tty", {{"kind", "notTty"}, {"processId", p->id}});
  auto st = p->s->screen();
  if (!st) return error(id, kInternalError, st.error().message(), {{"kind", "unsupported"}, {"feature", "screen"}});
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
  reply(id, std::move(out));  // invalid UTF-8 in terminal text is replaced, never thrown
}

// process/grant: the owner lets a viewer type (input: true) or takes it back.
void ExecServer::Connection::m_grant(const json& id, const json& params) {
  Process* p = process_or_error(id, params);
  if (!p) return;
  std::string grantee = need_string(params, "grantee");
  auto input = opt_bool(params, "input");
  if (!input) throw ParamError{kInvalidParams, "input (a boolean) is required", {{"kind", "invalidParams"}, {"field", "input"}}};
  if (p->owner != session_)
    return error(id, kInvalidRequest, "only the owner of process " + p->id + " can grant input",
                 {{"kind", "readOnly"}, {"processId", p->id}, {"action", "grant"}});
  for (auto& [vs, granted] : p->viewers)
    if (vs->id == grantee) {
      granted = *input;
      return reply(id, json::object());
    }
  error(id, kInvalidRequest, "session " + grantee + " is not a viewer of process " + p->id,
        {{"kind", "notViewer"}, {"processId", p->id}, {"sessionId", grantee}});
}

void ExecServer::Connection::m_subscribe(const json& id, const json& params, bool on) {
  Process* p = process_or_error(id, params);
  if (!p) return;
  if (!on) {
    p->subs.erase(session_);
    return reply(id, {{"subscribed", false}});
  }
  if (!p->subs.count(session_) && p->subs.size() >= server_.opts_.max_subscribers)
    return error(id, kInternalError,
                 fmt::format("process {} has {} subscribers, the most it may have", p->id, server_.opts_.max_subscribers),
                 {{"kind", "limitReached"}, {"limit", "subscribers"}, {"max", server_.opts_.max_subscribers}});
  if (params.contains("role") && !params["role"].is_null()) {
    if (!params["role"].is_string() || (params["role"] != "viewer" && params["role"] != "owner"))
      throw ParamError{kInvalidParams, "role must be \"owner\" or \"viewer\"", {{"kind", "invalidParams"}, {"field", "role"}}};
    bool owner = p->owner == session_;
    if (params["role"] == "owner" && !owner)
      return error(id, kInvalidRequest, "only the session that started process " + p->id + " is its owner",
                   {{"kind", "readOnly"}, {"processId", p->id}, {"action", "own"}});
    if (params["role"] == "viewer" && !owner) p->viewers.emplace(session_, false);
  }
  const auto& ring = p->s->output();
  SubState st;
  if (params.contains("afterSeq") && !params["afterSeq"].is_null()) {
    std::uint64_t after = opt_number<std::uint64_t>(params, "afterSeq").value_or(0);
    st.cursor = ring.offset_after_seq(after);
    st.sent_exited = p->s->exited_seq() != 0 && p->s->exited_seq() <= after;
    st.sent_closed = p->s->closed_seq() != 0 && p->s->closed_seq() <= after;
  } else {
    st.cursor = ring.total();
    st.sent_exited = p->s->exited_seq() != 0;
    st.sent_closed = p->s->closed_seq() != 0;
  }
  p->subs[session_] = st;
  reply(id, {{"subscribed", true}, {"nextSeq", p->s->next_seq()}});
  server_.push(*p);
}

void ExecServer::Connection::m_wait(const json& id, const json& params) {
  Process* p = process_or_error(id, params);
  if (!p) return;
  const json until = params.contains("until") && params["until"].is_object() ? params["until"] : json::object();
  std::shared_ptr<const std::regex> re;
  if (until.contains("regex")) {
    auto compiled = agent::compile_client_regex(until["regex"].get<std::string>());
    if (!compiled)
      throw ParamError{kInvalidParams, "invalid regex: " + compiled.error().context, {{"kind", "invalidParams"}, {"field", "until.regex"}}};
    re = std::move(*compiled);
  }
  auto idle = opt_number<long>(until, "idleMs");
  auto bytes = opt_number<std::uint64_t>(until, "bytes");
  auto port = opt_number<long>(until, "portOpen");
  long timeout = std::min<long>(opt_number<long>(params, "timeoutMs").value_or(30000), 86400000);
  std::uint64_t after = params.contains("afterSeq") && !params["afterSeq"].is_null()
                            ? opt_number<std::uint64_t>(params, "afterSeq").value_or(0)
                            : p->s->next_seq() - 1;
  auto start = Clock::now();
  session::Offset from = p->s->output().offset_after_seq(after);
  auto last_total = std::make_shared<std::uint64_t>(p->s->output().total());
  auto last_output = std::make_shared<Clock::time_point>(start);
  auto answer = [this, id, p](const std::string& fired, json match) {
    const auto& v = p->s->verdict();
    json r = {{"fired", fired},       {"nextSeq", p->s->next_seq()}, {"exited", v.has_value()},
              {"closed", p->s->finished()}, {"match", std::move(match)}};
    r["exitCode"] = v ? json(v->status.shell_code()) : json();
    r["signal"] = v && v->status.signal ? json(pty::signal_name(v->status.signal)) : json();
    reply(id, r);
  };
  auto check = [=](bool timed_out) {
    const auto& ring = p->s->output();
    auto now = Clock::now();
    if (ring.total() != *last_total) {
      *last_total = ring.total();
      *last_output = now;
    }
    if (re) {
      std::string text = ring.read_from(from, SIZE_MAX).text();
      std::string clean = session::lossy_decode(agent::strip_ansi(text));
      std::size_t pos = 0;
      while (pos <= clean.size()) {
        std::size_t nl = clean.find('\n', pos);
        std::string line = clean.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        if (line.size() > 65536) line = line.substr(line.size() - 65536);
        std::smatch m;
        if (std::regex_search(line, m, *re)) {
          answer("regex", {{"text", m.str(0)}, {"seq", p->s->next_seq() - 1}});
          return true;
        }
        if (nl == std::string::npos) break;
        pos = nl + 1;
      }
    }
    if (bytes && ring.total() - from >= *bytes) {
      answer("bytes", nullptr);
      return true;
    }
    if (port && agent::find_listener(p->s->pid(), static_cast<int>(*port))) {
      answer("portOpen", nullptr);
      return true;
    }
    if (p->s->verdict()) {
      // Let trailing output arrive (up to 50 ms) before reporting the exit.
      if (p->s->finished() || now - p->s->exited_at() >= milliseconds{50}) {
        answer("exit", nullptr);
        return true;
      }
      return false;
    }
    if (idle && now - std::max(start, *last_output) >= milliseconds{*idle}) {
      answer("idle", nullptr);
      return true;
    }
    if (timed_out || now - start >= milliseconds{timeout}) {
      answer("timeout", nullptr);
      return true;
    }
    return false;
  };
  if (check(false)) return;
  if (waits_full(id)) return;
  auto w = std::make_unique<Waiter>();
  w->id = server_.next_waiter_++;
  w->p = p;
  w->poll = true;
  w->check = check;
  w->timer = std::make_unique<loop::Timer>(server_.pm_.loop());
  std::uint64_t wid = w->id;
  Session* s = session_;
  // A tick for idle, ports, the post-exit wait and the timeout.
  w->timer->start(
      milliseconds{25},
      [s, wid] {
        auto it = s->waiters.find(wid);
        if (it != s->waiters.end() && it->second->check(false)) s->waiters.erase(wid);
      },
      milliseconds{25});
  session_->waiters.emplace(wid, std::move(w));
}

void ExecServer::Connection::m_exec(const json& id, const std::string& tool, const json& params) {
  if (!server_.tools_)
    return error(id, kInvalidParams, "exec/* methods need the agent service", {{"kind", "unsupported"}});
  // `_meta.progressToken` (as in MCP) streams the output as exec/outputDelta while the call waits.
  json args = params;
  std::function<void(std::string_view)> on_delta;
  if (args.is_object() && args.contains("_meta")) {
    json meta = args["_meta"];
    args.erase("_meta");
    if (meta.is_object() && meta.contains("progressToken") &&
        (meta["progressToken"].is_string() || meta["progressToken"].is_number_integer())) {
      json token = meta["progressToken"];
      on_delta = [this, token, n = 0L](std::string_view text) mutable {
        notify("exec/outputDelta", {{"progressToken", token}, {"index", n++}, {"delta", text}});
      };
    }
  }
  if (auto f = AgentTools::field_with_nul(tool, args))
    throw ParamError{kInvalidParams, nul_field_message(*f), {{"kind", "invalidParams"}, {"field", *f}}};
  struct Pending {
    agent::CallId id = 0;
    bool done = false;
  };
  auto pending = std::make_shared<Pending>();
  agent::CallId cid = 0;
  // A client that declared `approvals` is asked; one that did not is treated as policy never.
  std::shared_ptr<policy::ToolOrchestrator> approvals;
  if (approvals_ && server_.exec_->approval_policy() != policy::ApprovalPolicy::kNever) {
    if (!session_->orchestrator) session_->orchestrator = std::make_shared<policy::ToolOrchestrator>(server_.approver(session_->id));
    approvals = session_->orchestrator;
  }
  server_.exec_caller_ = session_;  // for a session that starts before the call returns
  server_.tools_->call(
      tool, args, true,
      [this, id, pending](json result) {
        pending->done = true;
        exec_calls_.erase(pending->id);
        reply(id, std::move(result));
      },
      &cid, std::move(on_delta), std::move(approvals));
  server_.exec_caller_ = nullptr;
  if (cid != 0 && !pending->done) {
    pending->id = cid;
    exec_calls_.insert(cid);
  }
}

// approval/request (docs/protocol.md §4.8): asks the session's client; the answer comes back as a response
// to our request (on_response), or counts as denied after approvalTimeoutMs or a detach.
policy::Approver ExecServer::approver(const std::string& session_id) {
  return [this, session_id](const policy::ApprovalRequest& req, std::function<void(policy::Decision)> answer) {
    Session* s = find_session(session_id);
    if (!s || !s->conn) return answer(policy::Decision::kDenied);
    std::string aid = fmt::format("approval-{}", s->next_approval++);
    std::string command = req.command.size() == 3 && req.command[1] == "-lc" ? req.command[2] : fmt::format("{}", fmt::join(req.command, " "));
    json params = {{"approvalId", aid},
                   {"sessionId", session_id},
                   {"kind", req.purpose == "sandbox_retry" ? "retryUnsandboxed" : "exec"},
                   {"argv", req.command},
                   {"command", command},
                   {"cwd", req.cwd},
                   {"sandbox", req.proposed_sandbox},
                   {"reason", req.reason},
                   {"justification", req.purpose == "escalation" ? json(req.reason) : json()}};
    if (req.denial) params["denial"] = {{"source", policy::denial_source_name(req.denial->source)},
                                        {"mechanism", req.denial->mechanism},
                                        {"detail", req.denial->detail}};
    auto& pa = s->approvals[aid];
    pa.answer = std::move(answer);
    pa.timeout = std::make_unique<loop::Timer>(pm_.loop());
    pa.timeout->start(opts_.approval_timeout, [this, session_id, aid] {
      Session* x = find_session(session_id);
      if (!x) return;
      auto it = x->approvals.find(aid);
      if (it == x->approvals.end()) return;
      auto done = std::move(it->second.answer);
      x->approvals.erase(it);
      UEXEC_LOG(kInfo, "approval {} of session {}: no answer in time, denied", aid, session_id);
      done(policy::Decision::kDenied);
    });
    s->conn->out(encode_request(aid, "approval/request", std::move(params)));
  };
}

// A response from the client: the answer to one of our approval/requests. Anything else
// (an unknown id, a second answer) is ignored; a malformed answer counts as denied.
void ExecServer::Connection::on_response(const json& msg) {
  if (!session_ || !msg.contains("id") || !msg["id"].is_string()) return;
  auto it = session_->approvals.find(msg["id"].get<std::string>());
  if (it == session_->approvals.end()) return;
  auto answer = std::move(it->second.answer);
  session_->approvals.erase(it);
  policy::Decision d = policy::Decision::kDenied;
  if (msg.contains("result") && msg["result"].is_object() && msg["result"].contains("decision") &&
      msg["result"]["decision"].is_string()) {
    std::string v = msg["result"]["decision"];
    if (v == "approved") d = policy::Decision::kApproved;
    else if (v == "approvedForSession") d = policy::Decision::kApprovedForSession;
    else if (v == "abort") d = policy::Decision::kAbort;
  }
  answer(d);
}

}  // namespace uexec::rpc
