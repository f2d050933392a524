#include "agent/agent_service.h"


#include <fmt/core.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "agent/agent_env.h"
#include "agent/keys.h"
#include "agent/list_sessions.h"
#include "agent/read_output.h"
#include "agent/response_builder.h"
#include "agent/stdin_input.h"
#include "agent/tool_args.h"
#include "journal/journal_format.h"
#include "pty/tty_state.h"

namespace uexec::agent {

using base::Errc;
using base::Error;
using base::Result;
using session::Offset;

namespace {

// exec_command's `workdir`: absolute, or relative to the front door's directory (its default).
std::string resolve_workdir(const std::string& base, const std::optional<std::string>& workdir) {
  if (!workdir || workdir->empty()) return base;
  return (*workdir)[0] == '/' ? *workdir : base + "/" + *workdir;
}

}  // namespace

AgentService::AgentService(session::ProcessManager& pm, std::vector<std::string> base_env, std::string default_cwd)
    : pm_(pm),
      loop_(pm.loop()),
      cfg_(pm.config().agent),
      base_env_(std::move(base_env)),
      default_cwd_(std::move(default_cwd)),
      registry_(pm, cfg_),
      calls_(pm.loop()),
      shutdown_timer_(pm.loop()) {
  registry_.has_calls = [this](long id) { return calls_.has_queued(id); };
  registry_.on_counted = [this](AgentSession& a, std::vector<std::string> warnings) {
    if (Call* front = calls_.front(a.id))
      for (auto& w : warnings) front->warnings.push_back(std::move(w));
  };
  registry_.before_forget = [this](long id) {
    calls_.cancel_on(id);  // drop any call still pointing at it
    if (on_forget) on_forget(id);
  };
  calls_.on_turn = [this](Call& c) { begin(c); };
  calls_.on_wake = [this](Call& c) { evaluate(c); };
}

AgentService::~AgentService() {
  calls_.clear();
  registry_.forget_all();  // while on_forget is still whole
}

std::size_t AgentService::live_sessions() const noexcept { return registry_.live_count(); }

// ---- calls -------------------------------------------------------------------------------------

Call& AgentService::new_call(CallKind kind, long sid, Reply done) {
  Call& c = calls_.create(kind, sid, std::move(done));
  c.budget = static_cast<std::size_t>(cfg_.max_output_tokens * cfg_.bytes_per_token);
  return c;
}

// The call's turn on its session: its input is written and its wait starts.
void AgentService::begin(Call& c) {
  auto* a = registry_.find(c.sid);
  if (!a) return fail(c, tool_error("the session is gone"));
  a->last_used = Clock::now();
  if (c.on_begin) {
    auto r = c.on_begin(c, *a);
    if (!r) return fail(c, std::move(r).error());
  }
  if (c.on_delta) {
    c.deltas.emplace(cfg_.delta_max_bytes, cfg_.deltas_per_call);
    c.delta_cursor = a->reader;  // what this call's response will hold
  }
  evaluate(c);
}

// Streams what arrived since the last piece; at `closed`, the held tail too.
void AgentService::stream_deltas(Call& c, const AgentSession& a) {
  if (!c.deltas || c.deltas->exhausted()) return;
  const auto& ring = a.session->output();
  while (c.delta_cursor < ring.total()) {
    auto r = ring.read_from(c.delta_cursor, 64 * 1024);
    for (const auto& piece : r.pieces)
      c.deltas->feed({reinterpret_cast<const char*>(piece.bytes.data()), piece.bytes.size()}, c.on_delta);
    if (r.next == c.delta_cursor) break;
    c.delta_cursor = r.next;
  }
  if (a.session->finished()) c.deltas->close(c.on_delta);
}

void AgentService::fail(Call& c, Error e) {
  Reply reply = std::move(c.reply);
  long sid = calls_.erase(c);
  if (reply) reply(std::move(e));
  calls_.start_next(sid);
}

void AgentService::cancel(CallId id) { calls_.cancel(id); }

void AgentService::log_event(SessionEvent e) {
  if (events_.size() == 1024) events_.pop_front();
  events_.push_back(std::move(e));
  if (on_event) on_event(events_.back());
}

void AgentService::on_activity(AgentSession& a) {
  std::uint64_t before = 0;
  if (a.input.saw_output(a.session->output().total(), Clock::now(), &before) && a.session->tty())
    a.modes.scan(a.session->output(), before);
  if (const auto& v = a.session->verdict()) {
    // The session's own timeouts (timeout_ms, idle_timeout_ms) say who ended it.
    if (!a.killed_by && a.session->ended_by()) a.killed_by = a.session->ended_by()->message;
    if (!a.end_logged) {
      a.end_logged = true;
      SessionEvent e{SessionEvent::Kind::kEnd, a.id, a.origin, a.cmd(), v->status.shell_code(), {}, {}};
      if (v->status.signal) {
        e.signal = pty::signal_name(v->status.signal);
        e.killed_by = a.killed_by.value_or("a signal not sent by uexec");
      }
      log_event(std::move(e));
    }
  }
  // Wake every started call on this session (the queue's front and kill calls).
  for (CallId cid : calls_.started_on(a.id))
    if (Call* c = calls_.find(cid)) evaluate(*c);
}

void AgentService::evaluate(Call& c) {
  if (!c.started) return;
  auto* a = registry_.find(c.sid);
  if (!a) return fail(c, tool_error("the session is gone"));
  auto now = Clock::now();
  stream_deltas(c, *a);
  auto step = c.wait.evaluate(*a->session, a->input, {cfg_.input_quiet, cfg_.port_probe, cfg_.post_exit_close_cap}, now);
  if (step.done) return finish(c);
  calls_.wake_at(c, step.wake_at, now);
}

void AgentService::finish(Call& c) {
  auto* a = registry_.find(c.sid);
  Response r = build_call_response(*a, c, cfg_);
  if (a->session->verdict() && !a->ended) registry_.mark_ended(*a, SessionRegistry::end_reason_of(*a));
  if (c.attempt_done) {
    // Orchestrated: the call leaves the session's queue and waits for the orchestrator,
    // which may start a retry (RunAttempt) or give its result (run_orchestrated).
    policy::AttemptOutcome o;
    if (const auto& v = a->session->verdict()) {
      o.exit_code = v->status.shell_code();
      if (v->denial) {
        o.kind = policy::AttemptOutcome::Kind::kDenied;
        o.denial = v->denial;
      }
    }
    auto report = std::move(c.attempt_done);
    c.attempt_done = nullptr;
    c.held = std::move(r);
    calls_.step_aside(c);
    report(o);
    return;
  }
  Reply reply = std::move(c.reply);
  long sid = calls_.erase(c);
  if (reply) reply(std::move(r));
  calls_.start_next(sid);
}

// ---- sessions ----------------------------------------------------------------------------------

Result<long> AgentService::start_session(const ExecParams& p, Call* c) {
  long id = registry_.allocate_id();
  auto release = [&] { registry_.release_id(id); };
  std::vector<std::string> env = build_agent_env(base_env_, EnvPolicy{}, id, cfg_.env_preset);
  auto shell = resolve_shell(p.shell, env);
  if (!shell) {
    release();
    return tool_error(fmt::format("exec_command failed for `{}`: {}", p.cmd, shell.error().context));
  }
  bool login = p.login.value_or(cfg_.allow_login_shell);
  policy::ExecRequest req;
  req.argv = {*shell, login ? "-lc" : "-c", p.cmd};
  req.env = std::move(env);
  req.tty = p.tty;
  req.stdin_pipe = p.pipe_stdin && !p.tty;
  req.size = {static_cast<unsigned short>(clamp_arg(p.rows.value_or(24), 2, 1000)),
              static_cast<unsigned short>(clamp_arg(p.cols.value_or(80), 2, 1000))};
  std::string cwd = resolve_workdir(default_cwd_, p.workdir);
  req.cwd = cwd;
  req.id = std::to_string(id);
  if (p.timeout_ms) req.limits.wall_timeout = milliseconds{*p.timeout_ms};
  if (p.idle_timeout_ms) req.limits.idle_timeout = milliseconds{*p.idle_timeout_ms};
  policy::SandboxAttempt attempt = policy::SandboxAttempt::none();
  if (p.attempt) {
    attempt = *p.attempt;
  } else if (sandbox_profile_) {
    if (p.require_escalated) {
      release();
      return tool_error(fmt::format("exec_command failed for `{}`: running without the sandbox needs approval, "
                                    "and the approval policy is never",
                                    p.cmd));
    }
    auto sel = policy::SandboxAttempt::select(*sandbox_profile_, sandbox_backend_);
    if (!sel) {
      release();
      return tool_error(fmt::format("exec_command failed for `{}`: sandbox unavailable: {}", p.cmd, sel.error().context));
    }
    attempt = std::move(*sel);
    req.sandbox_policy_cwd = default_cwd_;  // the operator's workspace, whatever `workdir` says
  }
  auto started = pm_.start(req, attempt);
  if (!started) {
    release();
    const auto& e = started.error();
    std::string why = e.sys_errno ? std::string(std::strerror(e.sys_errno)) + " (" + e.context + ")" : e.context;
    return Error{Errc::kExecFailed, e.sys_errno,
                 fmt::format("exec_command failed for `{}`: Failed to create process: {}", p.cmd, why)};
  }
  session::Session* s = pm_.find(*started);
  if (p.name) s->set_name(*p.name);
  AgentSession& a = registry_.add(id, *s, c ? c->id : 0);
  a.sub = s->output().subscribe([this, raw = &a] { on_activity(*raw); });
  log_event({SessionEvent::Kind::kStart, id, a.origin, a.cmd(), {}, {}, {}});
  return id;
}

base::Result<void> AgentService::adopt(long id) {
  session::Session* s = pm_.find(std::to_string(id));
  if (!s) return Error::invalid("agent session " + std::to_string(id) + " was not taken over");
  if (registry_.find(id)) return Error::invalid("agent session id " + std::to_string(id) + " is in use");
  AgentSession& a = registry_.add(id, *s, 0);
  a.sub = s->output().subscribe([this, raw = &a] { on_activity(*raw); });
  log_event({SessionEvent::Kind::kStart, id, a.origin, a.cmd(), {}, {}, {}});
  return {};
}

// ---- the tools ---------------------------------------------------------------------------------

namespace {
// A call's wait that starts when it gets its turn on the session, for `yield` ms, no settle.
std::function<Result<void>(Call&, AgentSession&)> wait_from_turn(long yield) {
  return [yield](Call& call, AgentSession& a) -> Result<void> {
    call.wait.start(*a.session, Clock::now(), milliseconds{0}, milliseconds{yield});
    return {};
  };
}
}  // namespace

CallId AgentService::exec_command(ExecParams p, Reply done) {
  auto reject = [&](std::string msg) -> CallId {
    done(tool_error(fmt::format("exec_command failed for `{}`: {}", p.cmd, msg)));
    return 0;
  };
  if (p.cmd.find_first_not_of(" \t\r\n") == std::string::npos) {
    done(tool_error("exec_command failed: missing command line"));
    return 0;
  }
  if (p.login && *p.login && !cfg_.allow_login_shell)
    return reject("login shell is disabled by config; omit `login` or set it to false.");
  if (p.name) {
    static const std::regex name_re("^[A-Za-z0-9._-]{1,64}$");
    if (!std::regex_match(*p.name, name_re)) return reject("invalid name: use 1-64 of [A-Za-z0-9._-]");
  }
  for (auto* t : {&p.timeout_ms, &p.idle_timeout_ms})
    if (*t && **t < 1000) return reject("timeout_ms and idle_timeout_ms must be at least 1000");
  if (p.view == View::kScreen && !p.tty) return reject("view \"screen\" needs tty=true (a pipe has no screen)");
  std::string cwd = resolve_workdir(default_cwd_, p.workdir);
  struct stat st {};
  if (::stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return reject(fmt::format("workdir {} is not an existing directory", cwd));

  long requested = p.yield_time_ms.value_or(cfg_.exec_yield_default.count());
  long yield = clamp_arg(requested, cfg_.yield_min.count(), cfg_.yield_max.count());
  std::size_t budget = output_budget(p.max_output_tokens, cfg_);
  Until until = p.until.value_or(Until{});
  if (!p.until) until.awaiting_input = true;

  // Named sessions: the same name and command again is the running one.
  if (p.name) {
    if (AgentSession* a = registry_.find_named(*p.name)) {
      const long id = a->id;
      if (a->cmd() == p.cmd && a->session->cwd() == cwd && a->session->tty() == p.tty) {
        Call& c = new_call(CallKind::kWrite, id, std::move(done));
        c.on_delta = std::move(p.on_delta);
        c.wait = UntilWait(until);
        c.budget = budget;
        c.lines.push_back(fmt::format("Session name: {} (existing)", *p.name));
        c.view = p.view;
        c.on_begin = wait_from_turn(yield);
        CallId cid = c.id;
        calls_.enqueue(c);
        return cid;
      }
      if (!p.replace)
        return reject(fmt::format(
            "session name {} is used by session {} running `{}`; pass replace=true to restart it or choose another name",
            *p.name, id, a->cmd()));
      a->killed_by = "exec_command replace";
      a->session->set_name("");
      registry_.mark_ended(*a, "killed");
      a->session->terminate();
    }
  }

  Call& c = new_call(CallKind::kExec, 0, std::move(done));
  c.on_delta = std::move(p.on_delta);
  c.wait = UntilWait(until);
  c.budget = budget;
  c.yield_requested = requested;
  c.yield_capped = requested > cfg_.yield_max.count();
  c.view = p.view;
  if (p.name) c.lines.push_back(fmt::format("Session name: {}", *p.name));
  c.on_begin = wait_from_turn(yield);
  CallId cid = c.id;
  if (sandbox_profile_ && !p.attempt && p.approvals && approval_policy_ != policy::ApprovalPolicy::kNever) {
    run_orchestrated(c, std::move(p), cwd);
    return calls_.find(cid) ? cid : 0;
  }
  auto id = start_session(p, &c);
  if (!id) {
    fail(c, std::move(id).error());
    return 0;
  }
  c.sid = *id;
  calls_.enqueue(c);
  return cid;
}

// The orchestrator decides the attempts (docs/sandbox.md §6): each RunAttempt starts a session for
// this call; the call's finish reports the outcome; a retry re-points the call at a new,
// unsandboxed session; the result answers with the last attempt's response.
void AgentService::run_orchestrated(Call& c, ExecParams p, const std::string& cwd) {
  policy::ToolCall tc;
  tc.argv = {"bash", "-lc", p.cmd};  // what the person approving reads; known_safe unwraps it
  tc.cwd = cwd;
  tc.profile = *sandbox_profile_;
  tc.backend = sandbox_backend_;
  tc.policy = approval_policy_;
  tc.require_escalated = p.require_escalated;
  tc.justification = p.justification;
  auto orchestrator = p.approvals;
  auto params = std::make_shared<ExecParams>(std::move(p));
  params->approvals.reset();  // no cycle: the orchestrator holds these callbacks
  const CallId cid = c.id;
  auto run_attempt = [this, cid, params](const policy::SandboxAttempt& attempt,
                                         std::function<void(policy::AttemptOutcome)> report) {
    Call* call = calls_.find(cid);
    if (!call) {  // cancelled meanwhile (say, while an approval was asked): nothing runs,
      policy::AttemptOutcome o;  // and the orchestration ends, releasing what it holds
      o.kind = policy::AttemptOutcome::Kind::kFailed;
      o.error = "the call was cancelled";
      return report(o);
    }
    ExecParams q = *params;
    q.attempt = attempt;
    q.require_escalated = false;
    if (call->sid != 0) {  // the retry: a fresh response for the new session
      call->lines.push_back(fmt::format("Sandbox denied session {}; retried without the sandbox (approved)", call->sid));
      call->held.reset();
      call->wait.clear_outcome();
    }
    auto id = start_session(q, call);
    if (!id) {
      policy::AttemptOutcome o;
      o.kind = policy::AttemptOutcome::Kind::kFailed;
      o.error = id.error().context;
      return report(o);
    }
    call->sid = *id;
    call->attempt_done = std::move(report);
    calls_.enqueue(*call);
  };
  auto result = [this, cid, cmd = params->cmd](policy::CallResult r) {
    Call* call = calls_.find(cid);
    if (!call) return;
    if (!call->held) {  // rejected, aborted or failed before anything ran
      if (r.kind == policy::CallResult::Kind::kFailed) return fail(*call, tool_error(r.message));  // says it all
      std::string why = r.kind == policy::CallResult::Kind::kAborted ? "aborted: " + r.message : r.message;
      return fail(*call, tool_error(fmt::format("exec_command failed for `{}`: {}", cmd, why)));
    }
    Response resp = std::move(*call->held);
    if (r.kind == policy::CallResult::Kind::kDenied && !r.message.empty()) resp.text += "\nSandbox: " + r.message;
    if (r.kind == policy::CallResult::Kind::kAborted) resp.text += "\nSandbox: " + r.message;
    Reply reply = std::move(call->reply);
    calls_.erase(*call);
    if (reply) reply(std::move(resp));
  };
  orchestrator->run(tc, std::move(run_attempt), std::move(result));
}

CallId AgentService::write_stdin(WriteParams p, Reply done) {
  auto target = registry_.find_target(p.session_id, p.name, "write_stdin", false);
  if (!target) {
    done(std::move(target).error());
    return 0;
  }
  AgentSession* a = *target;
  // Validate keys before any byte is written.
  std::vector<std::string> keys;
  for (const auto& k : p.keys) {
    std::string canon = canonical_key(k);
    if (canon.empty()) {
      std::string names;
      for (const auto& n : key_names()) names += (names.empty() ? "" : ", ") + n;
      done(tool_error(fmt::format("write_stdin failed: unknown key \"{}\"; accepted: {}", k, names)));
      return 0;
    }
    keys.push_back(canon);
  }
  if (!a->session->tty() && std::find(keys.begin(), keys.end(), "ctrl-z") != keys.end()) {
    done(tool_error("write_stdin failed: ctrl-z needs a tty session"));
    return 0;
  }
  if (p.view == View::kScreen && !a->session->tty()) {
    done(tool_error("write_stdin failed: view \"screen\" needs a tty session (a pipe has no screen)"));
    return 0;
  }
  bool empty = p.chars.empty() && keys.empty() && !p.close_stdin;
  long requested = p.yield_time_ms.value_or(cfg_.write_yield_default.count());
  long yield = empty ? clamp_arg(requested, cfg_.poll_min.count(), std::max(cfg_.poll_max.count(), cfg_.poll_min.count()))
                     : clamp_arg(requested, cfg_.yield_min.count(), cfg_.yield_max.count());
  Until until = p.until.value_or(Until{});
  if (!p.until) until.awaiting_input = true;

  Call& c = new_call(CallKind::kWrite, a->id, std::move(done));
  c.on_delta = std::move(p.on_delta);
  c.wait = UntilWait(until);
  c.budget = output_budget(p.max_output_tokens, cfg_);
  c.yield_requested = requested;
  c.yield_capped = !empty && requested > cfg_.yield_max.count();
  c.poll_raised = empty && requested < cfg_.poll_min.count();
  c.view = p.view;
  auto settle = cfg_.post_write_settle;
  StdinInput input{std::move(p.chars), std::move(keys), p.close_stdin, p.secret};
  c.on_begin = [input = std::move(input), yield, settle](Call& call, AgentSession& view) -> Result<void> {
    if (!input.empty()) {
      auto delivered = deliver_stdin(*view.session, input, view.modes.application());
      if (!delivered) return std::move(delivered).error();
      call.input_delivered = *delivered;
      view.input.saw_input(Clock::now());
    }
    call.wait.start(*view.session, Clock::now(), input.empty() ? milliseconds{0} : settle, milliseconds{yield});
    return {};
  };
  CallId cid = c.id;
  calls_.enqueue(c);
  return cid;
}

CallId AgentService::kill_session(KillParams p, Reply done) {
  auto target = registry_.find_target(p.session_id, p.name, "kill_session", true);
  if (!target) {
    // An id that ended and was collapsed into a tombstone still succeeds (idempotent).
    if (auto t = p.session_id ? registry_.tombstone(*p.session_id) : std::nullopt) {
      const long id = *p.session_id;
      Response r;
      r.chunk_id = new_chunk_id();
      r.session = id;
      r.state = "exited";
      if (t->ending.status) r.exit_code = t->ending.status->shell_code();
      Envelope env{r.chunk_id, 0, r.exit_code.value_or(0), id, {registry_.unknown_id_text(id)}, 0, ""};
      r.text = render_envelope(env);
      done(std::move(r));
      return 0;
    }
    done(std::move(target).error());
    return 0;
  }
  AgentSession* a = *target;
  static const std::map<std::string, int> kSignals = {
      {"interrupt", SIGINT}, {"terminate", SIGTERM}, {"kill", SIGKILL}, {"hangup", SIGHUP}, {"quit", SIGQUIT}};
  auto sig = kSignals.find(p.signal);
  if (sig == kSignals.end()) {
    done(tool_error("kill_session failed: signal must be one of interrupt, terminate, kill, hangup, quit"));
    return 0;
  }
  long grace = clamp_arg(p.grace_ms, 0, 30000);
  if (!a->session->finished()) {
    a->killed_by = "kill_session";
    if (sig->second == SIGTERM) {
      a->session->terminate(milliseconds{grace});
    } else {
      (void)a->session->signal(sig->second,
                               a->session->tty() ? pty::SignalTarget::kForeground : pty::SignalTarget::kGroup);
    }
  }
  Call& c = new_call(CallKind::kKill, a->id, std::move(done));
  c.budget = output_budget(p.max_output_tokens, cfg_);
  // terminate escalates to SIGKILL at `grace`; allow the kill and the reap to land.
  c.wait.start(*a->session, Clock::now(), milliseconds{0},
               milliseconds{grace} + (sig->second == SIGTERM ? milliseconds{500} : milliseconds{0}));
  c.started = true;  // not queued: it runs beside the front call
  CallId cid = c.id;
  evaluate(c);
  return cid;
}

Result<Response> AgentService::read_output(const ReadParams& p) {
  return agent::read_output(registry_, p, cfg_, journal_);
}

void AgentService::use_journal(std::string root) {
  journal_.root = std::move(root);
  std::vector<long> ids;
  // Newest first; at most half the id space, so that fresh ids never run out.
  for (const auto& l : journal::list_journals(journal_.root)) {
    auto id = journal::agent_session_id(l.meta);
    if (!id || journal_.dirs.count(*id)) continue;
    if (journal_.dirs.size() >= kMaxJournaledIds) break;
    journal_.dirs.emplace(*id, l.dir);
    ids.push_back(*id);
  }
  registry_.reserve_journaled(ids);
}

ListResult AgentService::list_sessions(const ListParams& p) { return agent::list_sessions(registry_, p, cfg_); }

void AgentService::shutdown(std::function<void()> done) {
  for (const auto& [id, a] : registry_.records()) {
    if (a->session->finished()) continue;
    if (!a->killed_by) a->killed_by = "manager shutdown";
    a->session->terminate();
  }
  shutdown_done_ = std::move(done);
  shutdown_deadline_ = Clock::now() + pm_.config().terminate_grace + milliseconds{500};
  check_shutdown();
}

void AgentService::check_shutdown() {
  const auto& records = registry_.records();
  bool all = std::all_of(records.begin(), records.end(), [](auto& kv) { return kv.second->session->finished(); });
  if (all || Clock::now() >= shutdown_deadline_) {
    shutdown_timer_.stop();
    auto fn = std::move(shutdown_done_);
    shutdown_done_ = nullptr;
    if (fn) fn();
    return;
  }
  shutdown_timer_.start(milliseconds{20}, [this] { check_shutdown(); });
}

}  // namespace uexec::agent
