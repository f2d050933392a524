#include "rpc/exec_server.h"

#include <signal.h>

namespace uexec::rpc {

using nlohmann::json;

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

ExecServer::ExecServer(session::ProcessManager& pm, agent::AgentService* exec, std::vector<std::string> server_env,
                       std::string cwd, ExecServerOptions options)
    : pm_(pm),
      env_(std::move(server_env)),
      cwd_(std::move(cwd)),
      opts_(options),
      table_(pm, opts_),
      pump_(table_),
      approvals_(table_, pm.loop(), opts_.approval_timeout),
      sharing_(table_, pump_, opts_),
      session_methods_(pm, table_, pump_, opts_, cwd_),
      lifecycle_(pm, table_, pump_, sharing_, opts_, env_, cwd_),
      control_(table_),
      output_(table_, opts_),
      exec_methods_(exec, pm, table_, approvals_),
      fs_(pm, opts_, env_, cwd_),
      methods_(method_table()) {
  session_methods_.set_method_table(methods_);
  table_.on_change = [this](ProtocolProcess& p) { on_process_change(p); };
  table_.on_forgotten = [this] { check_shutdown(); };
}

ExecServer::~ExecServer() {
  table_.on_change = nullptr;
  table_.on_forgotten = nullptr;
}

// The methods in Codex's order, then uexec's (capabilities.methods lists those in this order).
MethodTable ExecServer::method_table() {
  using M = MethodTable::Method;
  using G = MethodTable::Gate;
  using L = MethodTable::Listing;
  auto exec_tool = [this](const char* tool) {
    return [this, tool](Connection& c, const nlohmann::json& id, const nlohmann::json& p) { exec_methods_.call(c, id, tool, p); };
  };
  auto subscribe = [this](bool on) {
    return [this, on](Connection& c, const nlohmann::json& id, const nlohmann::json& p) { sharing_.subscribe(c, id, p, on); };
  };
  // A family's member function as a handler.
  auto bind = [](auto& family, auto fn) {
    return [&family, fn](Connection& c, const nlohmann::json& id, const nlohmann::json& p) { (family.*fn)(c, id, p); };
  };
  auto fs = [this](const char* method) {
    return [this, method](Connection& c, const nlohmann::json& id, const nlohmann::json& p) { fs_.call(c, id, method, p); };
  };
  return MethodTable({
      M{"initialize", G::kNone, L::kCodex, bind(session_methods_, &SessionMethods::initialize)},
      M{"process/start", G::kInitialized, L::kCodex, bind(lifecycle_, &ProcessLifecycleMethods::start)},
      M{"process/read", G::kInitialized, L::kCodex, bind(output_, &ProcessOutputMethods::read)},
      M{"process/write", G::kInitialized, L::kCodex, bind(control_, &ProcessControlMethods::write)},
      M{"process/signal", G::kInitialized, L::kCodex, bind(control_, &ProcessControlMethods::signal)},
      M{"process/terminate", G::kInitialized, L::kCodex, bind(control_, &ProcessControlMethods::terminate)},
      M{"environment/info", G::kInitialized, L::kCodex, bind(session_methods_, &SessionMethods::environment_info)},
      M{"environment/status", G::kInitializedStatus, L::kCodex, bind(session_methods_, &SessionMethods::environment_status)},
      M{"fs/getMetadata", G::kInitialized, L::kCodex, fs("fs/getMetadata")},
      M{"fs/readFile", G::kInitialized, L::kCodex, fs("fs/readFile")},
      M{"fs/writeFile", G::kInitialized, L::kCodex, fs("fs/writeFile")},
      M{"fs/createDirectory", G::kInitialized, L::kCodex, fs("fs/createDirectory")},
      M{"fs/remove", G::kInitialized, L::kCodex, fs("fs/remove")},
      M{"fs/readDirectory", G::kInitialized, L::kCodex, fs("fs/readDirectory")},
      M{"fs/copy", G::kInitialized, L::kCodex, fs("fs/copy")},
      M{"fs/canonicalize", G::kInitialized, L::kCodex, fs("fs/canonicalize")},
      M{"fs/walk", G::kInitialized, L::kCodex, fs("fs/walk")},
      M{"fs/watchMissing", G::kInitialized, L::kCodex, fs("fs/watchMissing")},
      M{"environmentConfig/read", G::kInitialized, L::kCodex, fs("environmentConfig/read")},
      M{"process/resize", G::kInitialized, L::kExtension, bind(control_, &ProcessControlMethods::resize)},
      M{"process/closeStdin", G::kInitialized, L::kExtension, bind(control_, &ProcessControlMethods::close_stdin)},
      M{"process/list", G::kInitialized, L::kExtension, bind(lifecycle_, &ProcessLifecycleMethods::list)},
      M{"process/subscribe", G::kInitialized, L::kExtension, subscribe(true)},
      M{"process/unsubscribe", G::kInitialized, L::kExtension, subscribe(false)},
      M{"process/wait", G::kInitialized, L::kExtension, bind(output_, &ProcessOutputMethods::wait)},
      M{"process/grant", G::kInitialized, L::kExtension, bind(sharing_, &SharingMethods::grant)},
      M{"exec/command", G::kInitialized, L::kExtension, exec_tool("exec_command")},
      M{"exec/writeStdin", G::kInitialized, L::kExtension, exec_tool("write_stdin")},
      M{"exec/listSessions", G::kInitialized, L::kExtension, exec_tool("list_sessions")},
      M{"exec/killSession", G::kInitialized, L::kExtension, exec_tool("kill_session")},
      M{"exec/readOutput", G::kInitialized, L::kExtension, exec_tool("read_output")},
      M{"process/snapshot", G::kInitialized, L::kExtensionWithScreen, bind(output_, &ProcessOutputMethods::snapshot)},
  });
}

std::unique_ptr<Connection> ExecServer::connect(Peer peer) {
  return std::unique_ptr<Connection>(new Connection(*this, std::move(peer)));
}

void ExecServer::on_process_change(ProtocolProcess& p) {
  pump_.push(p);
  p.owner->polls.wake(&p);
  if (p.session.finished()) table_.after_closed(p);
  check_shutdown();
}

void ExecServer::shutdown(bool kill_now, std::function<void()> done) {
  for (auto& [sid, s] : table_.sessions())
    for (auto& [pid, p] : s->processes) {
      if (p->session.finished()) continue;
      if (kill_now) {
        (void)p->session.signal(SIGKILL, pty::SignalTarget::kGroup);
      } else {
        p->session.terminate();
      }
    }
  shutdown_done_ = std::move(done);
  shutdown_deadline_ = Clock::now() + (kill_now ? milliseconds{400} : pm_.config().terminate_grace + milliseconds{500});
  shutdown_timer_ = std::make_unique<loop::Timer>(pm_.loop());
  check_shutdown();
}

void ExecServer::check_shutdown() {
  if (!shutdown_done_) return;
  bool all = fs_.idle();
  for (auto& [sid, s] : table_.sessions())
    for (auto& [pid, p] : s->processes)
      if (!p->session.finished()) all = false;
  if (all || Clock::now() >= shutdown_deadline_) {
    auto fn = std::move(shutdown_done_);
    shutdown_done_ = nullptr;
    shutdown_timer_->stop();
    fn();
    return;
  }
  shutdown_timer_->start(milliseconds{10}, [this] { check_shutdown(); });
}

json ExecServer::owner_of(const session::Session& s) {
  const std::string& key = s.id();
  auto slash = key.find('/');
  if (slash == std::string::npos) {
    // An agent session, and the protocol sessions that see it as a process (docs/protocol.md §4.6).
    json viewers = json::array();
    for (auto& [sid, ps] : table_.sessions())
      if (auto* p = table_.find_process(ps.get(), key); p && p->agent)
        viewers.push_back({{"session", sid}, {"client", ps->client_name}, {"keep", ps->keep_forever}, {"ttlMs", ps->ttl_ms}});
    return {{"agent", true}, {"viewers", viewers}};
  }
  std::string sid = key.substr(0, slash), pid = key.substr(slash + 1);
  json out = {{"session", sid}, {"process", pid}};
  if (ProtocolSession* ps = table_.find_session(sid)) {
    out["client"] = ps->client_name;
    out["keep"] = ps->keep_forever;
    out["ttlMs"] = ps->ttl_ms;
    if (ProtocolProcess* p = table_.find_process(ps, pid); p && !p->metadata.is_null()) out["metadata"] = p->metadata;
  }
  return out;
}

base::Result<void> ExecServer::adopt(session::Session& s, const json& owner) {
  const std::string& key = s.id();
  auto slash = key.find('/');
  if (slash == std::string::npos) {
    if (!exec_methods_.service()) return base::Error::invalid("agent session " + key + ": no agent service");
    char* end = nullptr;
    long id = std::strtol(key.c_str(), &end, 10);
    if (end == key.c_str() || *end != '\0') return base::Error::invalid("agent session id " + key + " is not a number");
    if (auto r = exec_methods_.service()->adopt(id); !r) return r;
    if (owner.is_object() && owner.contains("viewers") && owner["viewers"].is_array())
      for (const auto& v : owner["viewers"]) {
        if (!v.is_object() || !v.contains("session") || !v["session"].is_string()) continue;
        ProtocolSession& ps = session_for(v["session"].get<std::string>(), v);
        if (!table_.find_process(&ps, key)) table_.add(ps, key, key, s, true);
      }
    return {};
  }
  std::string sid = key.substr(0, slash), pid = key.substr(slash + 1);
  ProtocolSession& ps = session_for(sid, owner);
  if (table_.find_process(&ps, pid)) return base::Error::invalid("process " + key + " is already listed");
  ProtocolProcess& p = table_.add(ps, pid, key, s, false);
  p.subscribers[&ps] = {};
  if (owner.is_object() && owner.contains("metadata")) p.metadata = owner["metadata"];
  if (!ps.connection) table_.detach(ps);  // its TTL again, or kept forever, as before
  return {};
}

ProtocolSession& ExecServer::session_for(const std::string& sid, const json& facts) {
  if (ProtocolSession* ps = table_.find_session(sid)) return *ps;
  ProtocolSession& ps = table_.new_session(sid);
  if (facts.is_object()) {
    ps.client_name = facts.value("client", std::string());
    ps.keep_forever = facts.value("keep", false);
    ps.ttl_ms = facts.value("ttlMs", -2L);
  }
  return ps;
}

}  // namespace uexec::rpc
