#include "rpc/fs_methods.h"

#include <fmt/core.h>
#include <unistd.h>
#include <uv.h>

#include <cstring>
#include <functional>
#include <optional>

#include "agent/agent_env.h"
#include "base/home_dir.h"
#include "base/log.h"
#include "rpc/environment_config.h"
#include "rpc/file_uri.h"
#include "rpc/fs_ops.h"
#include "rpc/missing_watch.h"
#include "rpc/json_rpc.h"
#include "rpc/request_params.h"
#include "rpc/sandbox_params.h"

namespace uexec::rpc {

using nlohmann::json;

// One call on its way: who asked, the operation, and (sandboxed) its helper's output so far.
struct FsMethods::Call {
  Connection* conn = nullptr;
  std::shared_ptr<const bool> conn_alive;  // false once the connection is gone
  json id;
  json op;
  bool canonical_path = false;  // fs/canonicalize: the result's path becomes a URI
  std::uint64_t watch_id = 0;   // fs/watchMissing: the result is a plan for start_watch
  bool heavy = false;           // fs/readFile, fs/copy: at most kMaxHeavyAtOnce run
  std::size_t write_bytes = 0;  // fs/writeFile: its dataBase64's size
  std::optional<policy::SandboxAttempt> attempt;  // set: runs in the helper, in `sandbox_cwd`
  std::string sandbox_cwd;
  // Sandboxed only.
  std::string session_id;
  std::unique_ptr<session::Subscription> subscription;
  session::Offset cursor = 0;
  std::string out, err;
  bool overflow = false;  // it printed more than an answer can be
  bool done = false;
};

namespace {

constexpr std::size_t kHelperStderrBytes = 4096;
// What a helper may print: a readFile answer at the limit, in base64, and its envelope.
constexpr std::size_t kHelperOutputBytes = kReadFileMaxBytes / 3 * 4 + (1u << 20);
constexpr std::chrono::minutes kHelperTimeout{10};

std::string native_path(const json& params, const char* field) {
  std::string raw = need_string(params, field);
  if (raw.find('\0') != std::string::npos) throw invalid_param(field, std::string(field) + " must not contain a NUL byte");
  auto path = path_from_uri(raw);
  if (!path || path->empty() || path->front() != '/' || path->find('\0') != std::string::npos)
    throw invalid_param(field, std::string(field) + " must be a file:// URI or an absolute path");
  return *path;
}

void copy_bool(const json& params, json& op, const char* field) {
  if (auto v = opt_bool(params, field)) op[field] = *v;
}

// One key path of environmentConfig/read: a non-empty list of keys.
std::vector<std::vector<std::string>> key_paths(const json& params, const char* field) {
  if (!params.contains(field)) throw invalid_param(field, fmt::format("missing field `{}`", field));
  const json& v = params[field];
  if (!v.is_array()) throw invalid_param(field, std::string(field) + " must be a list of key paths");
  std::vector<std::vector<std::string>> out;
  for (const auto& path : v) {
    if (!path.is_array()) throw invalid_param(field, std::string(field) + " must be a list of key paths");
    if (path.empty()) throw invalid_param(field, "TOML paths must contain at least one key segment");
    std::vector<std::string> keys;
    for (const auto& k : path) {
      if (!k.is_string()) throw invalid_param(field, "a TOML key must be a string");
      keys.push_back(k.get<std::string>());
    }
    out.push_back(std::move(keys));
  }
  return out;
}

// environmentConfig/read as an operation (environment_config.h): the cwd, the key paths, and
// where this server's Codex home, home and host are.
json decode_environment_config(const json& params, const std::vector<std::string>& server_env) {
  EnvironmentConfigQuery q;
  q.cwd = native_path(params, "cwd");
  q.config_paths = key_paths(params, "configPaths");
  q.requirements_paths = key_paths(params, "requirementsPaths");
  if (q.config_paths.empty() && q.requirements_paths.empty())
    throw invalid_param("configPaths", "at least one config or requirements path is required");
  q.home = base::home_dir(agent::env_get(server_env, "HOME").value_or(""));
  q.codex_home = agent::env_get(server_env, "CODEX_HOME").value_or("");
  if (q.codex_home.empty() || q.codex_home.front() != '/') q.codex_home = q.home + "/.codex";
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0) q.hostname = host;
  return environment_config_op(q);
}

constexpr std::size_t kMaxMissingPaths = 1024;

// A file URI (or absolute path) from a list's element.
std::string native_element(const json& v, const char* field) {
  if (!v.is_string()) throw invalid_param(field, std::string(field) + " must be a list of file URIs");
  const std::string& raw = v.get_ref<const std::string&>();
  auto path = raw.find('\0') == std::string::npos ? path_from_uri(raw) : std::nullopt;
  if (!path || path->empty() || path->front() != '/')
    throw invalid_param(field, std::string(field) + " must hold file:// URIs or absolute paths");
  return *path;
}

// The operation for perform_fs_op: the params with native paths (fs_ops.h).
json decode_op(const std::string& method, const json& params, const std::vector<std::string>& server_env) {
  if (method == "environmentConfig/read") return decode_environment_config(params, server_env);
  json op = {{"method", method}};
  if (method == "fs/walk") {
    op["path"] = native_path(params, "path");
    if (!params.contains("options") || !params["options"].is_object()) throw invalid_param("options", "missing field `options`");
    const json& o = params["options"];
    for (const char* k : {"maxDepth", "maxDirectories", "maxEntries"}) {
      auto v = o.contains(k) ? opt_number<std::uint64_t>(o, k) : std::nullopt;
      if (!v) throw invalid_param(k, fmt::format("missing field `{}`", k));
      op[k] = *v;
    }
    auto follow = opt_bool(o, "followDirectorySymlinks");
    if (!follow) throw invalid_param("followDirectorySymlinks", "missing field `followDirectorySymlinks`");
    op["followDirectorySymlinks"] = *follow;
    return op;
  }
  if (method == "fs/watchMissing") {
    auto watch_id = params.contains("watchId") ? opt_number<std::uint64_t>(params, "watchId") : std::nullopt;
    if (!watch_id) throw invalid_param("watchId", "watchId must be a whole number (u64)");
    if (!params.contains("missing") || !params["missing"].is_array())
      throw invalid_param("missing", "missing must be a list of file URIs");
    // Each path is an inotify watch: bounded (Codex's CLI sends one per directory up to /).
    if (params["missing"].size() > kMaxMissingPaths)
      throw invalid_param("missing", fmt::format("at most {} missing paths", kMaxMissingPaths));
    json missing = json::array();
    for (const auto& m : params["missing"]) missing.push_back(native_element(m, "missing"));
    op["watchId"] = *watch_id;
    op["missing"] = std::move(missing);
    op["present"] = params.contains("present") && !params["present"].is_null() ? json(native_path(params, "present")) : json();
    return op;
  }
  if (method == "fs/copy") {
    op["sourcePath"] = native_path(params, "sourcePath");
    op["destinationPath"] = native_path(params, "destinationPath");
    auto recursive = opt_bool(params, "recursive");
    if (!recursive) throw invalid_param("recursive", "missing field `recursive`");
    op["recursive"] = *recursive;
    return op;
  }
  op["path"] = native_path(params, "path");
  if (method == "fs/writeFile") op["dataBase64"] = need_string(params, "dataBase64");
  if (method == "fs/createDirectory" || method == "fs/remove") copy_bool(params, op, "recursive");
  if (method == "fs/remove") copy_bool(params, op, "force");
  if (method != "fs/readDirectory" && method != "fs/canonicalize") copy_bool(params, op, "followSymlinks");
  return op;
}

bool sandbox_refusal(int err) { return err == EACCES || err == EPERM || err == EROFS; }

}  // namespace

FsMethods::FsMethods(session::ProcessManager& pm, const ExecServerOptions& options,
                     const std::vector<std::string>& server_env, const std::string& cwd)
    : pm_(pm), opts_(options), env_(server_env), cwd_(cwd), sweep_(pm.loop(), loop::Timer::kRealTime) {}

FsMethods::~FsMethods() {
  *alive_ = false;
  for (auto& [n, call] : helpers_) {
    call->subscription.reset();
    pm_.remove(call->session_id);
  }
}

void FsMethods::call(Connection& c, const json& id, const std::string& method, const json& params) {
  if (!opts_.file_system)
    return c.error(id, kMethodNotFound, "method not found: " + method + " (this server does not serve files)",
                   {{"kind", "methodNotFound"}, {"method", method}});
  auto call = std::make_unique<Call>();
  call->conn = &c;
  call->conn_alive = c.liveness();
  call->id = id;
  call->op = decode_op(method, params, env_);
  if (method == "fs/watchMissing") {
    // One watch per connection: an older or equal watchId is refused and the watch stays; a
    // newer one ends the old watch whatever it answers.
    const std::uint64_t watch_id = call->op["watchId"];
    if (watch_id <= c.missing_watch_id()) return c.reply(id, {{"watching", false}});
    c.missing_watch_id() = watch_id;
    c.missing_watch().reset();
    call->watch_id = watch_id;
  }
  call->canonical_path = method == "fs/canonicalize";
  call->heavy = method == "fs/readFile" || method == "fs/copy" || method == "fs/walk";
  if (call->op.contains("dataBase64")) call->write_bytes = call->op["dataBase64"].get_ref<const std::string&>().size();
  if (in_flight_ >= kMaxCallsInFlight)
    return c.error(id, kInternalError, fmt::format("{} file operations are running; try again", in_flight_),
                   {{"kind", "limitReached"}, {"limit", "fsCalls"}, {"max", kMaxCallsInFlight}});
  if (write_bytes_ > 0 && write_bytes_ + call->write_bytes > kMaxWriteBytesInFlight)
    return c.error(id, kInternalError, fmt::format("{} bytes of writes are running; try again", write_bytes_),
                   {{"kind", "limitReached"}, {"limit", "fsWriteBytes"}, {"max", kMaxWriteBytesInFlight}});
  if (auto choice = sandbox_for_request(params, cwd_)) {
    if (opts_.fs_helper.empty())
      return c.error(id, kInternalError, "sandboxed file operations need uexec's fs-helper, which this server lacks",
                     {{"kind", "sandboxUnavailable"}, {"reason", "no fs-helper"}});
    call->attempt = std::move(choice->attempt);
    call->sandbox_cwd = choice->policy_cwd.empty() ? cwd_ : choice->policy_cwd;
  }
  ++in_flight_;
  write_bytes_ += call->write_bytes;
  admit(std::move(call));
}

void FsMethods::admit(std::unique_ptr<Call> call) {
  if (call->heavy) {
    if (heavy_running_ >= kMaxHeavyAtOnce) return waiting_.push_back(std::move(call));
    ++heavy_running_;
  }
  if (call->attempt) return run_in_sandbox(std::move(call));
  run_on_thread_pool(std::move(call));
}

void FsMethods::run_on_thread_pool(std::unique_ptr<Call> call) {
  struct Job {
    uv_work_t req{};
    FsMethods* self;
    std::shared_ptr<const bool> self_alive;
    std::unique_ptr<Call> call;
    json outcome;
  };
  auto* job = new Job{{}, this, alive_, std::move(call), nullptr};
  job->req.data = job;
  auto work = [](uv_work_t* r) {
    auto* j = static_cast<Job*>(r->data);
    j->outcome = perform_fs_op(j->call->op);
  };
  auto after = [](uv_work_t* r, int status) {
    std::unique_ptr<Job> j(static_cast<Job*>(r->data));
    if (!*j->self_alive) return;
    if (status != 0) j->outcome = {{"error", {{"code", kInternalError}, {"message", "the file operation was cancelled"}}}};
    j->self->complete(*j->call, std::move(j->outcome));
  };
  if (int rc = uv_queue_work(pm_.loop().get(), &job->req, work, after); rc != 0) {
    std::unique_ptr<Job> j(job);
    complete(*j->call, {{"error", {{"code", kInternalError}, {"message", std::string("uv_queue_work: ") + uv_strerror(rc)}}}});
  }
}

void FsMethods::run_in_sandbox(std::unique_ptr<Call> call) {
  std::uint64_t n = next_helper_++;
  policy::ExecRequest req;
  req.argv = {opts_.fs_helper, "fs-helper"};
  req.env = env_;
  req.cwd = call->sandbox_cwd;
  req.stdin_pipe = true;
  req.id = fmt::format("fs-helper/{}", n);
  req.limits.retain_bytes = kHelperOutputBytes;
  req.limits.wall_timeout = kHelperTimeout;
  std::string input = call->op.dump();
  req.limits.stdin_queue_bytes = input.size();  // the operation goes in whole (a writeFile's data)
  auto started = pm_.start(req, *call->attempt);
  if (!started) {
    const base::Error& e = started.error();
    if (e.code == base::Errc::kPolicy) {  // the backend cannot express the policy: refused, never weakened
      ParamError refusal = sandbox_unavailable(e);
      return complete(*call, {{"error", {{"code", refusal.code}, {"message", refusal.message}, {"data", refusal.data}}}});
    }
    return complete(*call, {{"error", {{"code", kInternalError}, {"message", "the sandboxed file helper did not start: " + e.message()}}}});
  }
  session::Session& s = *pm_.find(*started);
  call->session_id = *started;
  // The operation, then EOF: the helper reads its stdin to the end.
  if (!s.write(input) || !s.close_stdin()) {
    pm_.remove(*started);
    return complete(*call, {{"error", {{"code", kInternalError}, {"message", "the sandboxed file helper took no input"}}}});
  }
  call->op = nullptr;  // a writeFile's data is the helper's now
  call->subscription = s.output().subscribe([this, n] { on_helper_output(n); });
  helpers_.emplace(n, std::move(call));
  on_helper_output(n);  // it may have finished already
}

void FsMethods::on_helper_output(std::uint64_t n) {
  auto it = helpers_.find(n);
  if (it == helpers_.end() || it->second->done) return;
  Call& call = *it->second;
  session::Session* s = pm_.find(call.session_id);
  if (!s) {  // not expected (only sweep() removes a helper), but a call must never hang
    call.done = true;
    call.subscription.reset();
    complete(call, {{"error", {{"code", kInternalError}, {"message", "the sandboxed file helper went away"}}}});
    return sweep_.start(std::chrono::milliseconds{0}, [this] { sweep(); });
  }
  auto read = s->output().read_from(call.cursor, SIZE_MAX);
  call.cursor = read.next;
  bool overflow = call.overflow || read.gap > 0;
  for (const auto& piece : read.pieces) {
    bool to_err = piece.stream == pty::Stream::kStderr;
    std::string& to = to_err ? call.err : call.out;
    std::size_t cap = to_err ? kHelperStderrBytes : kHelperOutputBytes;
    std::size_t room = cap - std::min(cap, to.size());
    if (!to_err && piece.bytes.size() > room) overflow = true;
    to.append(reinterpret_cast<const char*>(piece.bytes.data()), std::min(piece.bytes.size(), room));
  }
  call.overflow = overflow;
  if (!s->finished()) return;
  call.done = true;
  call.subscription.reset();
  json outcome = overflow ? json() : json::parse(call.out, nullptr, false);
  if (!outcome.is_object() || !(outcome.contains("result") || outcome.contains("error"))) {
    std::string why = s->verdict() ? s->verdict()->status.describe() : "no verdict";
    std::string err = call.err.substr(0, call.err.find('\n'));
    outcome = {{"error",
                {{"code", kInternalError},
                 {"message", fmt::format("the sandboxed file helper failed ({}){}{}", why, err.empty() ? "" : ": ", err)}}}};
  }
  complete(call, std::move(outcome));
  sweep_.start(std::chrono::milliseconds{0}, [this] { sweep(); });
}

void FsMethods::sweep() {
  for (auto it = helpers_.begin(); it != helpers_.end();) {
    if (!it->second->done) {
      ++it;
      continue;
    }
    pm_.remove(it->second->session_id);
    it = helpers_.erase(it);
  }
}

void FsMethods::complete(Call& call, json outcome) {
  --in_flight_;
  write_bytes_ -= call.write_bytes;
  if (call.heavy) {
    --heavy_running_;
    if (!waiting_.empty()) {
      auto next = std::move(waiting_.front());
      waiting_.pop_front();
      admit(std::move(next));
    }
  }
  reply(call, std::move(outcome));
}

bool FsMethods::start_watch(Call& call, const json& plan) {
  Connection& c = *call.conn;
  const std::uint64_t watch_id = call.watch_id;
  // A newer watchId came while this one was planned: it owns the connection's watch now.
  if (!plan.value("watching", false) || c.missing_watch_id() != watch_id) return false;
  std::vector<MissingWatch::Target> targets;
  for (const auto& t : plan.value("targets", json::array())) targets.push_back({t["dir"], t["name"]});
  auto alive = c.liveness();
  Connection* conn = &c;
  auto watch = MissingWatch::start(pm_.loop(), targets, [conn, alive, watch_id] {
    if (*alive) conn->notify("fs/missingChanged", {{"watchId", watch_id}});
  });
  if (!watch) {
    UEXEC_LOG(kWarn, "fs/watchMissing: {}", watch.error().message());
    return false;
  }
  c.missing_watch() = std::move(*watch);
  return true;
}

void FsMethods::reply(Call& call, json outcome) {
  if (!*call.conn_alive) return;
  Connection& c = *call.conn;
  if (outcome.contains("error")) {
    const json& e = outcome["error"];
    if (e.contains("data")) return c.error(call.id, e.value("code", kInternalError), e.value("message", ""), e["data"]);
    json data = {{"kind", "fsError"}};
    int err = e.value("errno", 0);
    if (err) {
      const char* name = ::strerrorname_np(err);
      data["errno"] = name ? name : std::to_string(err);
    }
    if (call.attempt && sandbox_refusal(err)) data["kind"] = "sandboxDenied";
    return c.error(call.id, e.value("code", kInternalError), e.value("message", "file operation failed"), std::move(data));
  }
  json result = std::move(outcome["result"]);
  if (call.watch_id) return c.reply(call.id, {{"watching", start_watch(call, result)}});
  if (call.canonical_path && result.contains("path") && result["path"].is_string())
    result["path"] = file_uri(result["path"].get<std::string>());
  // fs/readFile on the thread pool, whose data this process base64-encoded itself (a sandboxed
  // helper's reply is parsed JSON and could hold anything: it goes through the encoder).
  if (!call.attempt && result.size() == 1 && result.contains("dataBase64") && result["dataBase64"].is_string())
    return c.send_raw(encode_clean_string_result(call.id, "dataBase64", result["dataBase64"].get_ref<const std::string&>()));
  c.reply(call.id, std::move(result));
}

}  // namespace uexec::rpc
