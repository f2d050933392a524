#include "rpc/process_lifecycle_methods.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <regex>

#include "agent/agent_env.h"
#include "pty/pty_pair.h"
#include "pty/tty_state.h"
#include "rpc/agent_tools.h"
#include "rpc/c_strings.h"
#include "rpc/file_uri.h"
#include "rpc/request_params.h"
#include "rpc/sandbox_params.h"
#include "rpc/verdict_json.h"

namespace uexec::rpc {

using nlohmann::json;

namespace {

// process/start's `limits` (base::SessionLimits, camelCase); each bound is checked here.
base::SessionLimits parse_limits(const json& j) {
  base::SessionLimits l;
  if (j.is_null()) return l;
  auto bad = [](const std::string& field, const std::string& what) {
    return invalid_param("limits." + field, fmt::format("invalid value for `limits.{}`: {}", field, what));
  };
  if (!j.is_object()) throw invalid_param("limits", "invalid type for `limits`: expected an object");
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

// argv: a non-empty array of strings.
std::vector<std::string> decode_argv(const json& params) {
  const json& argv_j = need(params, "argv");
  const char* wrong = "invalid type for `argv`: expected an array of strings";
  if (!argv_j.is_array()) throw invalid_param("argv", wrong);
  std::vector<std::string> argv;
  for (const auto& a : argv_j) {
    if (!a.is_string()) throw invalid_param("argv", wrong);
    argv.push_back(a.get<std::string>());
  }
  if (argv.empty()) throw invalid_param("argv", "argv must not be empty");
  return argv;
}

// The environment: verbatim, or a policy over the server's environment with `env` on top.
std::vector<std::string> decode_env(const json& params, const std::vector<std::string>& server_env) {
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
    env = agent::apply_env_policy(server_env, pol);
  }
  if (params.contains("env") && !params["env"].is_null()) {
    const char* wrong = "invalid type for `env`: expected a map of strings";
    if (!params["env"].is_object()) throw invalid_param("env", wrong);
    for (auto it = params["env"].begin(); it != params["env"].end(); ++it) {
      if (!it.value().is_string()) throw invalid_param("env", wrong);
      agent::env_put(env, it.key(), it.value().get<std::string>());
    }
  }
  return env;
}

// Everything of process/start but the sandbox, the name and the id, as the core takes it.
policy::ExecRequest decode_exec_request(const json& params, const std::vector<std::string>& server_env,
                                        const std::string& server_cwd) {
  if (auto f = field_with_nul(params, {"argv", "arg0", "cwd", "env", "envPolicy", "sandbox"}))
    throw invalid_param(*f, nul_field_message(*f));
  policy::ExecRequest req;
  req.argv = decode_argv(params);
  req.cwd = server_cwd;
  if (params.contains("cwd") && !params["cwd"].is_null()) {
    if (!params["cwd"].is_string()) throw invalid_param("cwd", "invalid type for `cwd`: expected a string");
    auto path = path_from_uri(params["cwd"]);
    if (!path) throw invalid_param("cwd", "invalid URI: relative URL without a base");
    req.cwd = *path;
  }
  req.tty = opt_bool(params, "tty").value_or(false);
  bool pipe_stdin = opt_bool(params, "pipeStdin").value_or(false);
  if (params.contains("networkProxy") && !params["networkProxy"].is_null())
    throw ParamError{kInvalidParams, "networkProxy is not supported by uexec", {{"kind", "unsupported"}, {"field", "networkProxy"}}};
  req.env = decode_env(params, server_env);
  req.stdin_pipe = pipe_stdin && !req.tty;
  if (params.contains("arg0") && params["arg0"].is_string()) req.arg0 = params["arg0"].get<std::string>();
  if (params.contains("limits")) req.limits = parse_limits(params["limits"]);
  if (params.contains("size") && !params["size"].is_null()) {
    if (!req.tty) throw invalid_param("size", "size needs a tty process");
    auto rows = opt_number<long>(params["size"], "rows"), cols = opt_number<long>(params["size"], "cols");
    if (!rows || !cols || *rows < 1 || *rows > 1000 || *cols < 1 || *cols > 1000)
      throw invalid_param("size", "size needs rows and cols in 1-1000");
    req.size = {static_cast<unsigned short>(*rows), static_cast<unsigned short>(*cols)};
  }
  return req;
}

// Codex's names: any Linux kind is "linuxSeccomp"; uexecSandbox says which.
const char* codex_sandbox_type(const session::Session& s) {
  return s.sandboxed() ? "linuxSeccomp" : "none";
}

}  // namespace

void ProcessLifecycleMethods::start(Connection& c, const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  if (pid.empty() || pid.size() > 256) throw invalid_param("processId", "processId must be 1-256 bytes");
  policy::ExecRequest req = decode_exec_request(params, env_, cwd_);
  ProtocolSession& me = *c.session();
  // The sandbox: Codex's shape or uexec's short form; never weakened (sandboxUnavailable).
  policy::SandboxAttempt attempt = policy::SandboxAttempt::none();
  if (auto choice = sandbox_for_request(params, req.cwd)) {
    attempt = std::move(choice->attempt);
    req.sandbox_policy_cwd = choice->policy_cwd;
  }
  // A named process is idempotent: the same name, argv, cwd and tty is the live one.
  std::string name;
  if (params.contains("name") && !params["name"].is_null()) {
    static const std::regex kName("^[A-Za-z0-9._-]{1,64}$");
    if (!params["name"].is_string() || !std::regex_match(params["name"].get<std::string>(), kName))
      throw invalid_param("name", "name must be 1-64 of [A-Za-z0-9._-]");
    name = params["name"].get<std::string>();
    bool replace = opt_bool(params, "replace").value_or(false);
    if (ProtocolProcess* other = table_.find_named(name)) {
      session::Session& os = other->session;
      if (os.argv() == req.argv && os.cwd() == req.cwd && os.tty() == req.tty && !replace) {
        if (opt_bool(params, "subscribe").value_or(true) && !sharing_.subscribe_at_end(c, id, *other)) return;
        c.reply(id, {{"processId", other->id},
                     {"sessionId", other->owner->id},
                     {"existing", true},
                     {"pid", os.pid()},
                     {"sandboxType", codex_sandbox_type(os)},
                     {"uexecSandbox", os.sandbox_kind()},
                     {"nextSeq", os.next_seq()}});
        return pump_.push(*other);
      }
      if (!replace)
        return c.error(id, kInvalidRequest,
                       fmt::format("name {} is used by process {} of session {} running `{}`; pass replace:true to "
                                   "restart it, or choose another name",
                                   name, other->id, other->owner->id, fmt::join(os.argv(), " ")),
                       {{"kind", "nameInUse"}, {"name", name}, {"processId", other->id}, {"sessionId", other->owner->id}});
      os.set_name("");  // replace: the old one ends, the name moves to the new one
      os.terminate();
    }
  }
  if (ProtocolProcess* existing = table_.find_process(&me, pid))
    return c.error(id, kInvalidRequest, "process " + pid + " already exists",
                   {{"kind", "processExists"}, {"processId", pid}, {"state", existing->session.finished() ? "closed" : "running"}});
  if (table_.processes() >= opts_.max_processes && !table_.forget_oldest_closed())
    return c.error(id, kInternalError, "process limit reached",
                   {{"kind", "limitReached"}, {"limit", "processes"}, {"max", opts_.max_processes}});
  req.id = me.id + "/" + pid;
  auto started = pm_.start(req, attempt);
  if (!started) {
    const auto& e = started.error();
    if (e.code == base::Errc::kPolicy) throw sandbox_unavailable(e);
    if (e.code == base::Errc::kExecFailed || e.sys_errno) {
      const char* errno_name = strerrorname_np(e.sys_errno);
      return c.error(id, kInternalError, fmt::format("{} (os error {})", std::strerror(e.sys_errno), e.sys_errno),
                     {{"kind", "spawnFailed"},
                      {"errno", errno_name ? errno_name : ""},
                      {"syscall", e.context.substr(0, e.context.find(' '))},
                      {"path", e.context.find(' ') == std::string::npos ? "" : e.context.substr(e.context.find(' ') + 1)}});
    }
    if (e.code == base::Errc::kUnsupported)  // limits this machine cannot enforce
      return c.error(id, kInternalError, e.context, {{"kind", "limitUnavailable"}});
    return c.error(id, kInvalidParams, e.message(), {{"kind", "invalidParams"}});
  }
  session::Session& s = *pm_.find(*started);
  s.set_name(name);
  ProtocolProcess& p = table_.add(me, pid, *started, s, false);
  if (opt_bool(params, "subscribe").value_or(true)) p.subscribers[&me] = {};
  if (params.contains("metadata")) p.metadata = params["metadata"];
  // The reply goes out before any notification for this process: those come from the loop.
  c.reply(id, {{"processId", pid},
               {"sandboxType", codex_sandbox_type(s)},
               {"uexecSandbox", s.sandbox_kind()},
               {"pid", s.pid()},
               {"sessionId", me.id},
               {"existing", false}});
}

void ProcessLifecycleMethods::list(Connection& c, const json& id, const json& params) {
  bool all = opt_bool(params, "all").value_or(false);
  bool include_closed = opt_bool(params, "includeClosed").value_or(true);
  ProtocolSession* me = c.session();
  auto wall_ms = [](session::WallClock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  };
  json out = json::array();
  for (auto& [sid, owner] : table_.sessions()) {
    if (!all && owner.get() != me) continue;
    for (auto& [pid, p] : owner->processes) {
      session::Session& s = p->session;  // process() is not const
      if (!include_closed && s.finished()) continue;
      const auto& v = s.verdict();
      const auto& ring = s.output();
      std::string state = s.finished() ? "closed" : (v ? "exited" : "running");
      int master = s.tty() && s.process() ? s.process()->master_fd() : -1;
      bool awaiting = !v && master >= 0 && pty::group_reading_tty(::tcgetpgrp(master), pty::slave_rdev(master));
      json e = {{"sessionId", sid},
                {"processId", pid},
                {"name", s.name().empty() ? json() : json(s.name())},
                {"clientName", owner->client_name},
                {"agentSessionId", p->agent ? json(std::stol(p->id)) : json()},
                {"pid", s.pid()},
                {"argv", s.argv()},
                {"cwd", file_uri(s.cwd())},
                {"tty", s.tty()},
                {"state", state},
                {"awaitingInput", awaiting},
                {"startedAtMs", wall_ms(s.started_wall())},
                {"nextSeq", s.next_seq()},
                {"retainedBytes", ring.retained()},
                {"omitted", ring.evicted() > 0 ? json{{"bytes", ring.evicted()}} : json()},
                {"subscribers", p->subscribers.size()},
                {"outputBytes", ring.total()},
                {"sandbox", {{"type", codex_sandbox_type(s)}, {"backend", s.sandboxed() ? json(s.sandbox_kind()) : json()}}},
                {"metadata", p->metadata}};
      e["exitedAtMs"] = v ? json(wall_ms(s.exited_wall())) : json();
      put_exit_status(e, s);
      if (master >= 0)
        if (auto sz = pty::get_size(master)) e["size"] = json{{"rows", sz->rows}, {"cols", sz->cols}};
      json viewers = json::array();
      for (const auto& [vs, input] : p->viewers)
        viewers.push_back({{"sessionId", vs->id}, {"clientName", vs->client_name}, {"input", input},
                           {"connected", vs->connection != nullptr}});
      e["viewers"] = std::move(viewers);
      auto mine = p->viewers.find(me);
      e["role"] = owner.get() == me ? "owner" : (mine != p->viewers.end() ? "viewer" : "participant");
      e["ownerConnected"] = owner->connection != nullptr;
      e["containment"] = session::tier_name(s.containment_tier());
      if (!s.lingering().empty()) e["lingering"] = AgentTools::lingering(s.lingering());
      if (s.limits().any()) {
        e["limits"] = limits_json(s.limits());
        e["limitEvents"] = limit_events_json(s);
      }
      put_ended_by(e, s);
      e["canInput"] = mine == p->viewers.end() || mine->second || !owner->connection;
      out.push_back(std::move(e));
    }
  }
  json reply = {{"processes", std::move(out)}};
  // On request (includeEnded), what went lately (retention, kills, pruning): a client that
  // still shows an id can say when and why it went. Only what this caller could have listed.
  // Not by default: the page polls this list every second, and up to 256 entries would ride
  // along each time.
  if (opt_bool(params, "includeEnded").value_or(false)) {
    json ended = json::array();
    for (const auto& e : table_.recent_ends())
      if (all || (me && e.session_id == me->id))
        ended.push_back({{"sessionId", e.session_id}, {"processId", e.process_id}, {"reason", e.reason},
                         {"atMs", std::chrono::duration_cast<std::chrono::milliseconds>(e.at.time_since_epoch()).count()}});
    reply["ended"] = std::move(ended);
  }
  c.reply(id, std::move(reply));
}

}  // namespace uexec::rpc
