#include "rpc/agent_tools.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <set>

#include "agent/client_regex.h"
#include "agent/keys.h"
#include "rpc/c_strings.h"
#include "rpc/verdict_json.h"

namespace uexec::rpc {

namespace {

// Argument access with the rules of the tool schemas. Errors are collected as text.
class Args {
 public:
  Args(const json& j, std::set<std::string> allowed) : j_(j) {
    if (!j.is_object()) {
      err_ = "arguments must be an object";
      return;
    }
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!allowed.count(it.key())) {
        err_ = fmt::format("unknown parameter `{}`", it.key());
        return;
      }
  }
  const std::string& error() const { return err_; }
  bool has(const char* k) const { return err_.empty() && j_.contains(k) && !j_.at(k).is_null(); }

  std::optional<long> integer(const char* k) {
    if (!has(k)) return std::nullopt;
    const json& v = j_.at(k);
    if (v.is_number_integer()) return v.get<long>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      // Only doubles a long can hold may be cast (1e300 would be undefined behaviour).
      if (std::isfinite(d) && d >= -9.2e18 && d <= 9.2e18 && d == static_cast<double>(static_cast<long>(d)))
        return static_cast<long>(d);
    }
    if (v.is_string()) {  // integers sent as decimal strings are accepted
      const std::string& s = v.get_ref<const std::string&>();
      char* end = nullptr;
      long n = std::strtol(s.c_str(), &end, 10);
      if (!s.empty() && end && *end == '\0') return n;
    }
    fail(k, "an integer");
    return std::nullopt;
  }
  std::optional<bool> boolean(const char* k) {
    if (!has(k)) return std::nullopt;
    if (j_.at(k).is_boolean()) return j_.at(k).get<bool>();
    fail(k, "a boolean");
    return std::nullopt;
  }
  std::optional<std::string> string(const char* k) {
    if (!has(k)) return std::nullopt;
    if (j_.at(k).is_string()) return j_.at(k).get<std::string>();
    fail(k, "a string");
    return std::nullopt;
  }
  // "raw" (the default) or "screen".
  agent::View view() {
    auto v = string("view");
    if (!v || *v == "raw") return agent::View::kRaw;
    if (*v == "screen") return agent::View::kScreen;
    err_ = "`view` must be \"raw\" or \"screen\"";
    return agent::View::kRaw;
  }
  std::vector<std::string> strings(const char* k) {
    std::vector<std::string> out;
    if (!has(k)) return out;
    if (!j_.at(k).is_array()) {
      fail(k, "an array of strings");
      return out;
    }
    for (const auto& v : j_.at(k)) {
      if (!v.is_string()) {
        fail(k, "an array of strings");
        return {};
      }
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  std::optional<agent::Until> until(const char* k) {
    if (!has(k)) return std::nullopt;
    Args u(j_.at(k), {"exit", "regex", "idle_ms", "port", "awaiting_input"});
    if (!u.error().empty()) {
      err_ = fmt::format("`{}`: {}", k, u.error());
      return std::nullopt;
    }
    agent::Until out;
    (void)u.boolean("exit");  // exit always ends a wait
    if (auto r = u.string("regex")) {
      if (r->size() > 1024) {
        err_ = "`until.regex` is longer than 1024 characters";
        return std::nullopt;
      }
      auto compiled = agent::compile_client_regex(*r);
      if (!compiled) {
        err_ = fmt::format("`until.regex` is not a valid pattern: {}", compiled.error().context);
        return std::nullopt;
      }
      out.regex = std::move(*compiled);
      out.regex_src = *r;
    }
    if (auto i = u.integer("idle_ms")) {
      if (*i < 1) u.err_ = "`until.idle_ms` must be >= 1";
      out.idle = std::chrono::milliseconds{std::max(50L, *i)};
    }
    if (auto p = u.integer("port")) {
      if (*p < 0 || *p > 65535) u.err_ = "`until.port` must be 0..65535";
      out.port = static_cast<int>(*p);
    }
    out.awaiting_input = u.boolean("awaiting_input").value_or(false);
    if (!u.error().empty()) err_ = u.error();
    return out;
  }

 private:
  void fail(const char* k, const char* what) {
    if (err_.empty()) err_ = fmt::format("`{}` must be {}", k, what);
  }
  const json& j_;
  std::string err_;
};

json until_schema() {
  return {{"type", "object"},
          {"additionalProperties", false},
          {"description", "Return early when any of these holds (exit always ends the wait)."},
          {"properties",
           {{"exit", {{"type", "boolean"}, {"description", "Return when the process exits (always on)."}}},
            {"regex", {{"type", "string"}, {"description", "ECMAScript pattern matched per line of new output."}}},
            {"idle_ms", {{"type", "integer"}, {"minimum", 1}, {"description", "Return after this long without output."}}},
            {"port",
             {{"type", "integer"},
              {"minimum", 0},
              {"maximum", 65535},
              {"description", "Return when a process of the session listens on this TCP port (0: any)."}}},
            {"awaiting_input",
             {{"type", "boolean"}, {"description", "Return when the process waits for input (tty read, prompt)."}}}}}};
}

json prop(const char* type, const char* desc) { return {{"type", type}, {"description", desc}}; }

}  // namespace

json AgentTools::error_result(const std::string& text) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", true}};
}

json AgentTools::lingering(const std::vector<session::LingeringProcess>& l) {
  json out = json::array();
  for (const auto& p : l)
    out.push_back({{"pid", p.pid}, {"comm", p.comm}, {"command", p.command}, {"killed", p.killed}});
  return out;
}

json AgentTools::tool_result(const agent::Response& r, bool structured) {
  json out = {{"content", json::array({{{"type", "text"}, {"text", r.text}}})}, {"isError", false}};
  if (!structured) return out;
  json s = {{"chunk_id", r.chunk_id},
            {"wall_time_seconds", r.wall_time_seconds},
            {"output", r.output},
            {"original_token_count", r.original_token_count},
            {"session", r.session},
            {"state", r.state},
            {"output_closed", r.output_closed},
            {"input_delivered", r.input_delivered},
            {"stdin_pending_bytes", r.stdin_pending_bytes},
            {"range", {{"offset", r.range_offset}, {"length", r.range_length}}}};
  s["exit_code"] = r.exit_code ? json(*r.exit_code) : json();
  s["session_id"] = r.session_id ? json(*r.session_id) : json();
  if (r.name) s["name"] = *r.name;
  if (r.signal) s["signal"] = *r.signal;
  if (r.killed_by) s["killed_by"] = *r.killed_by;
  if (r.core_dumped) s["core_dumped"] = true;
  if (r.journal) s["journal"] = *r.journal;
  if (!r.lingering.empty()) s["lingering"] = lingering(r.lingering);
  if (r.fired) s["fired"] = *r.fired;
  if (r.match_text) s["match"] = {{"offset", r.match_offset.value_or(0)}, {"text", *r.match_text}};
  if (r.match_port) s["match"] = {{"port", r.match_port->port}, {"pid", r.match_port->pid}, {"comm", r.match_port->comm}};
  s["awaiting_input"] = r.awaiting_input ? json{{"kind", r.awaiting_input->kind},
                                                {"evidence", r.awaiting_input->evidence},
                                                {"prompt", r.awaiting_input->prompt}}
                                         : json();
  if (!r.omitted.empty()) {
    json om = json::array();
    for (const auto& o : r.omitted) om.push_back({{"offset", o.offset}, {"length", o.length}, {"kind", o.kind}});
    s["omitted"] = om;
  }
  if (r.sandbox_denied)
    s["sandbox_denied"] = denial_json(*r.sandbox_denied);
  if (!r.warnings.empty()) s["warnings"] = r.warnings;
  if (r.screen)
    s["screen"] = {{"rows", r.screen->rows},
                   {"cols", r.screen->cols},
                   {"cursor", {{"row", r.screen->cursor_row}, {"col", r.screen->cursor_col}}},
                   {"alt_screen", r.screen->alt_screen},
                   {"title", r.screen->title},
                   {"exact", r.screen->exact}};
  out["structuredContent"] = std::move(s);
  return out;
}

std::optional<std::string> AgentTools::field_with_nul(const std::string& name, const json& args) {
  if (name == "exec_command") return rpc::field_with_nul(args, {"cmd", "workdir", "shell", "prefix_rule", "additional_permissions"});
  return std::nullopt;
}

bool AgentTools::call(const std::string& name, const json& args_json, bool structured, Done finish,
                      agent::CallId* call_id, std::function<void(std::string_view)> on_delta,
                      std::shared_ptr<policy::ToolOrchestrator> approvals) {
  *call_id = 0;
  auto tool_error = [&](const std::string& text) { finish(error_result(text)); };
  auto done = [finish, structured](base::Result<agent::Response> r) {
    if (!r) return finish(error_result(r.error().context));
    finish(tool_result(*r, structured));
  };
  auto track = [&](agent::CallId cid) { *call_id = cid; };
  if (auto f = field_with_nul(name, args_json))
    return tool_error(fmt::format("{} failed: {}", name, nul_field_message(*f))), true;
  if (name == "exec_command") {
    Args a(args_json, {"cmd", "workdir", "shell", "login", "tty", "pipe_stdin", "yield_time_ms", "max_output_tokens",
                       "rows", "cols", "name", "replace", "until", "timeout_ms", "idle_timeout_ms", "view",
                       "sandbox_permissions", "justification", "prefix_rule", "additional_permissions"});
    agent::ExecParams p;
    auto cmd = a.string("cmd");
    p.workdir = a.string("workdir");
    p.shell = a.string("shell");
    p.login = a.boolean("login");
    p.tty = a.boolean("tty").value_or(false);
    p.pipe_stdin = a.boolean("pipe_stdin").value_or(false);
    p.yield_time_ms = a.integer("yield_time_ms");
    p.max_output_tokens = a.integer("max_output_tokens");
    p.rows = a.integer("rows");
    p.cols = a.integer("cols");
    p.name = a.string("name");
    p.replace = a.boolean("replace").value_or(false);
    p.until = a.until("until");
    p.timeout_ms = a.integer("timeout_ms");
    p.idle_timeout_ms = a.integer("idle_timeout_ms");
    p.view = a.view();
    if (auto sp = a.string("sandbox_permissions")) {
      if (*sp != "use_default" && *sp != "require_escalated")
        return tool_error(fmt::format("exec_command failed for `{}`: invalid arguments: sandbox_permissions must be "
                                      "use_default or require_escalated", cmd.value_or(""))), true;
      p.require_escalated = *sp == "require_escalated";
    }
    p.justification = a.string("justification").value_or("");
    p.approvals = approvals;
    if (a.error().empty() && !cmd) return tool_error("exec_command failed: missing command line"), true;
    if (!a.error().empty())
      return tool_error(fmt::format("exec_command failed for `{}`: invalid arguments: {}", cmd.value_or(""), a.error())), true;
    p.cmd = *cmd;
    p.on_delta = std::move(on_delta);
    return track(exec_.exec_command(std::move(p), done)), true;
  }
  if (name == "write_stdin") {
    Args a(args_json, {"session_id", "name", "chars", "keys", "yield_time_ms", "max_output_tokens", "close_stdin",
                       "until", "secret", "view"});
    agent::WriteParams p;
    p.session_id = a.integer("session_id");
    p.name = a.string("name");
    p.chars = a.string("chars").value_or("");
    p.keys = a.strings("keys");
    p.yield_time_ms = a.integer("yield_time_ms");
    p.max_output_tokens = a.integer("max_output_tokens");
    p.close_stdin = a.boolean("close_stdin").value_or(false);
    p.until = a.until("until");
    p.secret = a.boolean("secret").value_or(false);
    p.view = a.view();
    if (a.error().empty() && !p.session_id && !p.name)
      return tool_error("write_stdin failed: session_id or name is required"), true;
    if (!a.error().empty()) return tool_error("write_stdin failed: invalid arguments: " + a.error()), true;
    p.on_delta = std::move(on_delta);
    return track(exec_.write_stdin(std::move(p), done)), true;
  }
  if (name == "kill_session") {
    Args a(args_json, {"session_id", "name", "signal", "grace_ms", "max_output_tokens"});
    agent::KillParams p;
    p.session_id = a.integer("session_id");
    p.name = a.string("name");
    p.signal = a.string("signal").value_or("terminate");
    p.grace_ms = a.integer("grace_ms").value_or(1000);
    p.max_output_tokens = a.integer("max_output_tokens");
    if (a.error().empty() && !p.session_id && !p.name)
      return tool_error("kill_session failed: session_id or name is required"), true;
    if (!a.error().empty()) return tool_error("kill_session failed: invalid arguments: " + a.error()), true;
    return track(exec_.kill_session(std::move(p), done)), true;
  }
  if (name == "read_output") {
    Args a(args_json, {"session_id", "name", "offset", "length", "tail_lines", "grep", "ignore_case", "context",
                       "max_matches", "max_output_tokens", "view"});
    agent::ReadParams p;
    p.session_id = a.integer("session_id");
    p.name = a.string("name");
    if (auto o = a.integer("offset")) p.offset = static_cast<std::uint64_t>(std::max(0L, *o));
    if (auto l = a.integer("length")) p.length = static_cast<std::uint64_t>(std::max(1L, *l));
    p.tail_lines = a.integer("tail_lines");
    p.grep = a.string("grep");
    p.ignore_case = a.boolean("ignore_case").value_or(false);
    p.context = a.integer("context").value_or(0);
    p.max_matches = a.integer("max_matches").value_or(50);
    p.max_output_tokens = a.integer("max_output_tokens");
    p.view = a.view();
    if (a.error().empty() && !p.session_id && !p.name)
      return tool_error("read_output failed: session_id or name is required"), true;
    if (!a.error().empty()) return tool_error("read_output failed: invalid arguments: " + a.error()), true;
    done(exec_.read_output(p));
    return true;
  }
  if (name == "list_sessions") {
    Args a(args_json, {"all", "include_exited"});
    agent::ListParams p;
    p.all = a.boolean("all").value_or(false);
    p.include_exited = a.boolean("include_exited").value_or(true);
    if (!a.error().empty()) return tool_error("list_sessions failed: invalid arguments: " + a.error()), true;
    auto l = exec_.list_sessions(p);
    json out = {{"content", json::array({{{"type", "text"}, {"text", l.text}}})}, {"isError", false}};
    if (structured) {
      json rows = json::array();
      for (const auto& r : l.rows) {
        json row = {{"session_id", r.id},    {"state", r.state},         {"command", r.command},
                    {"cwd", r.cwd},          {"tty", r.tty},             {"age_seconds", r.age_s},
                    {"idle_seconds", r.idle_s}, {"unread_bytes", r.unread_bytes}, {"last_line", r.last_line},
                    {"retained_bytes", r.retained_bytes}, {"omitted_bytes", r.omitted_bytes},
                    {"containment", r.containment}};
        row["name"] = r.name ? json(*r.name) : json();
        row["exit_code"] = r.exit_code ? json(*r.exit_code) : json();
        if (r.signal) row["signal"] = *r.signal;
        if (r.killed_by) row["killed_by"] = *r.killed_by;
        rows.push_back(std::move(row));
      }
      out["structuredContent"] = {{"sessions", rows}};
    }
    finish(std::move(out));
    return true;
  }
  return false;
}

json AgentTools::tools_list(const std::string& version, bool structured, long default_output_tokens) {
  const long kDefaultTokens = default_output_tokens;  // what a call without it gets
  bool v2025_06 = version >= "2025-06-18";  // revisions are dates
  bool annotations = version != "2024-11-05";
  json keys_enum = json::array();
  for (const auto& k : agent::key_names()) keys_enum.push_back(k);
  auto tool = [&](const char* name, const char* title, const char* desc, json props, json required,
                  const char* hint) {
    json t = {{"name", name},
              {"description", desc},
              {"inputSchema",
               {{"type", "object"}, {"additionalProperties", false}, {"properties", std::move(props)}}}};
    if (!required.empty()) t["inputSchema"]["required"] = std::move(required);
    if (v2025_06) {
      t["title"] = title;
      if (structured && std::string(name) == "list_sessions")
        t["outputSchema"] = {{"type", "object"},
                             {"required", {"sessions"}},
                             {"properties",
                              {{"sessions",
                                {{"type", "array"},
                                 {"items",
                                  {{"type", "object"},
                                   {"properties",
                                    {{"session_id", {{"type", "integer"}}},
                                     {"name", {{"type", {"string", "null"}}}},
                                     {"state", {{"type", "string"}}},
                                     {"command", {{"type", "string"}}},
                                     {"exit_code", {{"type", {"integer", "null"}}}}}}}}}}}}};
      else if (structured)
        t["outputSchema"] = {{"type", "object"},
                             {"required", {"chunk_id", "wall_time_seconds", "output"}},
                             {"properties",
                              {{"chunk_id", {{"type", "string"}}},
                               {"wall_time_seconds", {{"type", "number"}}},
                               {"output", {{"type", "string"}}},
                               {"exit_code", {{"type", {"integer", "null"}}}},
                               {"session_id",
                                {{"type", {"integer", "null"}},
                                 {"description", "Codex's field: the session's id while it runs, null once its exit "
                                                 "is reported."}}},
                               {"session",
                                {{"type", "integer"},
                                 {"description", "The session's id, also after it exited (read_output takes it)."}}},
                               {"name", {{"type", "string"}, {"description", "The session's name, when it has one."}}},
                               {"original_token_count", {{"type", "integer"}}},
                               {"state", {{"type", "string"}}}}}};
    }
    if (annotations && hint) t["annotations"] = {{hint, true}};
    return t;
  };
  json tools = json::array();
  tools.push_back(tool(
      "exec_command", "Run a command",
      "Runs a shell command in a new session (a PTY with tty=true, else pipes) and returns its output once it exits, "
      "the yield window ends, or an `until` condition holds. A running command keeps its session: poll or type into it "
      "with write_stdin.",
      {{"cmd", prop("string", "The shell command line to run.")},
       {"workdir", prop("string", "Working directory; relative paths resolve against the server's directory.")},
       {"shell", prop("string", "Shell to run the command with (name or absolute path); default: the user's shell.")},
       {"login", {{"type", "boolean"}, {"default", true}, {"description", "Run the shell as a login shell (-lc)."}}},
       {"tty", {{"type", "boolean"}, {"default", false}, {"description", "Give the command a terminal (PTY)."}}},
       {"pipe_stdin",
        {{"type", "boolean"}, {"default", false}, {"description", "Without tty: keep a writable stdin pipe open."}}},
       {"yield_time_ms",
        {{"type", "number"}, {"default", 10000}, {"description", "How long to wait for output (250-30000 ms)."}}},
       {"max_output_tokens",
        {{"type", "number"}, {"default", kDefaultTokens}, {"description", "Output budget in tokens (4 bytes each)."}}},
       {"rows", prop("integer", "Terminal rows with tty (default 24).")},
       {"cols", prop("integer", "Terminal columns with tty (default 80).")},
       {"name", prop("string", "A name for the session; the same name and command again returns the running one.")},
       {"replace", prop("boolean", "With name: restart a session that holds the name with another command.")},
       {"until", until_schema()},
       {"timeout_ms", prop("integer", "End the session after this long (>= 1000 ms).")},
       {"idle_timeout_ms", prop("integer", "End the session after this long without output or input (>= 1000 ms).")},
       {"view",
        {{"type", "string"},
         {"enum", {"raw", "screen"}},
         {"default", "raw"},
         {"description", "With tty: \"screen\" returns the terminal screen after the output as text (for TUIs such as top, "
                           "less or vim) instead of the raw output."}}},
       {"sandbox_permissions",
        {{"type", "string"},
         {"enum", {"use_default", "require_escalated"}},
         {"default", "use_default"},
         {"description", "Sandbox permissions to request (Codex-compatible)."}}},
       {"justification", prop("string", "Why the command needs escalated permissions.")}},
      {"cmd"}, nullptr));
  tools.push_back(tool(
      "write_stdin", "Write to a session",
      "Writes characters and named keys to a running session and returns its new output. With empty input it polls "
      "(waiting at least 5 s unless the process exits or an `until` condition holds).",
      {{"session_id", prop("number", "The session ID from \"Process running with session ID N\".")},
       {"name", prop("string", "A named session, instead of session_id (give one of the two).")},
       {"chars", {{"type", "string"}, {"default", ""}, {"description", "Text to write (\\u0003 is Ctrl-C)."}}},
       {"keys",
        {{"type", "array"},
         {"items", {{"type", "string"}, {"enum", keys_enum}}},
         {"description", "Named keys written after chars, e.g. [\"enter\"], [\"ctrl-c\"], [\"up\"]."}}},
       {"close_stdin", {{"type", "boolean"}, {"default", false}, {"description", "Send EOF after the input."}}},
       {"yield_time_ms",
        {{"type", "number"}, {"default", 250}, {"description", "How long to wait for output (250-30000 ms; polls 5000-300000)."}}},
       {"max_output_tokens", {{"type", "number"}, {"default", kDefaultTokens}, {"description", "Output budget in tokens."}}},
       {"until", until_schema()},
       {"secret", prop("boolean", "The input is a secret: it is written to the process only, never logged.")},
       {"view",
        {{"type", "string"},
         {"enum", {"raw", "screen"}},
         {"default", "raw"},
         {"description", "With a tty session: \"screen\" returns the screen after the input as text."}}}},
      json::array(), nullptr));
  tools.push_back(tool(
      "list_sessions", "List sessions", "Lists this client's sessions: running, exited and recently ended ones.",
      {{"all", {{"type", "boolean"}, {"default", false}, {"description", "Include other clients' sessions."}}},
       {"include_exited", {{"type", "boolean"}, {"default", true}, {"description", "Include ended sessions."}}}},
      json::array(), "readOnlyHint"));
  tools.push_back(tool(
      "kill_session", "Stop a session",
      "Stops a session: terminate (SIGHUP/SIGTERM, then SIGKILL after grace_ms) or one signal. Returns its last output "
      "and exit status.",
      {{"session_id", prop("number", "The session to stop.")},
       {"name", prop("string", "A named session, instead of session_id (give one of the two).")},
       {"signal",
        {{"type", "string"},
         {"enum", {"interrupt", "terminate", "kill", "hangup", "quit"}},
         {"default", "terminate"},
         {"description", "What to send."}}},
       {"grace_ms",
        {{"type", "integer"}, {"minimum", 0}, {"default", 1000}, {"description", "Grace before SIGKILL (terminate)."}}},
       {"max_output_tokens", {{"type", "number"}, {"default", kDefaultTokens}, {"description", "Output budget in tokens."}}}},
      json::array(), "destructiveHint"));
  tools.push_back(tool(
      "read_output", "Read retained output",
      "Reads a session's retained output by byte range, last lines or grep, without consuming it; also after exit, and "
      "after a daemon restart when the daemon keeps a journal. A "
      "truncation marker names the range to fetch here.",
      {{"session_id", prop("number", "The session to read.")},
       {"name", prop("string", "A named session, instead of session_id (give one of the two).")},
       {"offset", {{"type", "integer"}, {"minimum", 0}, {"description", "Absolute byte offset (default: oldest retained)."}}},
       {"length", {{"type", "integer"}, {"minimum", 1}, {"description", "Bytes to read."}}},
       {"tail_lines", {{"type", "integer"}, {"minimum", 1}, {"description", "Read the last N lines instead."}}},
       {"grep", prop("string", "A regex: return matching lines with their line numbers and offsets.")},
       {"ignore_case", {{"type", "boolean"}, {"default", false}, {"description", "grep ignoring case."}}},
       {"context", {{"type", "integer"}, {"minimum", 0}, {"default", 0}, {"description", "Lines of context around hits."}}},
       {"max_matches", {{"type", "integer"}, {"minimum", 1}, {"default", 50}, {"description", "Most grep hits."}}},
       {"max_output_tokens", {{"type", "number"}, {"default", kDefaultTokens}, {"description", "Output budget in tokens."}}},
       {"view",
        {{"type", "string"},
         {"enum", {"raw", "screen"}},
         {"default", "raw"},
         {"description", "With a tty session: \"screen\" returns the current screen as text (not with grep, offset, length "
                           "or tail_lines)."}}}},
      json::array(), "readOnlyHint"));
  return tools;
}

}  // namespace uexec::rpc
