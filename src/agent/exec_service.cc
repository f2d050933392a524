#include "agent/exec_service.h"


#include <fmt/core.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "agent/agent_env.h"
#include "agent/client_regex.h"
#include "agent/deltas.h"
#include "agent/keys.h"
#include "agent/time_text.h"
#include "agent/tool_args.h"
#include "base/log.h"
#include "pty/tty_state.h"
#include "session/utf8_cut.h"

namespace uexec::agent {

using base::Errc;
using base::Error;
using base::Result;
using session::Offset;
using WallClock = std::chrono::system_clock;

namespace {

enum CallKind { kExec = 0, kWrite = 1, kKill = 2 };

// `Lingering processes: 2 killed (sleep pid 4242, tee pid 4243)` (docs/agent.md §2.6).
std::string lingering_line(const std::vector<session::LingeringProcess>& l) {
  std::size_t killed = 0;
  std::string names;
  for (const auto& p : l) {
    killed += p.killed ? 1 : 0;
    if (!names.empty()) names += ", ";
    names += fmt::format("{} pid {}", p.comm, p.pid);
  }
  if (killed == l.size()) return fmt::format("Lingering processes: {} killed ({})", killed, names);
  return fmt::format("Lingering processes: {} still running, to be killed when the session closes ({})",
                     l.size() - killed, names);
}

// After the exit: what still holds the output (and will be killed when the session closes),
// or what was killed when it closed.
void report_lingering(const session::Session& s, Response& r, std::vector<std::string>& extra) {
  r.lingering = s.finished() ? s.lingering() : s.live_descendants();
  if (!r.lingering.empty()) extra.push_back(lingering_line(r.lingering));
}

}  // namespace

struct ExecService::Call {
  explicit Call(loop::Loop& l) : timer(l) {}
  DeltaSplitter::Emit on_delta;      // streaming: set by the front door
  std::optional<DeltaSplitter> deltas;
  Offset delta_cursor = 0;           // the next output byte to stream
  CallId id = 0;
  int kind = kExec;
  long sid = 0;
  Reply reply;
  bool started = false;
  UntilWait wait;  // t0, the deadline, the conditions and what fired
  std::size_t budget = 40000;
  std::vector<std::string> lines, warnings;
  bool input_delivered = true;
  bool yield_capped = false;
  long yield_requested = 0;
  View view = View::kRaw;
  std::function<Result<void>(Call&, AgentSession&)> on_begin;
  loop::Timer timer;
  // Orchestrated (approvals): the attempt's outcome goes to the orchestrator at finish, and
  // its response waits here for the orchestrator's last word (a retry replaces it).
  std::function<void(policy::AttemptOutcome)> attempt_done;
  std::optional<Response> held;
};

ExecService::ExecService(session::ProcessManager& pm, std::vector<std::string> base_env, std::string default_cwd)
    : pm_(pm),
      loop_(pm.loop()),
      cfg_(pm.config().agent),
      base_env_(std::move(base_env)),
      default_cwd_(std::move(default_cwd)),
      registry_(pm, cfg_),
      shutdown_timer_(pm.loop()) {
  registry_.has_calls = [this](long id) {
    auto q = queues_.find(id);
    return q != queues_.end() && !q->second.empty();
  };
  registry_.on_counted = [this](AgentSession& a, std::vector<std::string> warnings) {
    auto q = queues_.find(a.id);
    if (q == queues_.end() || q->second.empty()) return;
    if (auto it = calls_.find(q->second.front()); it != calls_.end())
      for (auto& w : warnings) it->second->warnings.push_back(std::move(w));
  };
  registry_.before_forget = [this](long id) {
    // Drop any call still pointing at it.
    std::vector<CallId> stale;
    for (auto& [cid, c] : calls_)
      if (c->sid == id) stale.push_back(cid);
    for (CallId cid : stale) cancel(cid);
    queues_.erase(id);
    if (on_forget) on_forget(id);
  };
}

ExecService::~ExecService() {
  calls_.clear();
  queues_.clear();
  registry_.forget_all();  // while on_forget is still whole
}

std::size_t ExecService::live_sessions() const noexcept { return registry_.live_count(); }

// ---- calls -------------------------------------------------------------------------------------

ExecService::Call* ExecService::new_call(int kind, long sid, Reply done) {
  auto c = std::make_unique<Call>(loop_);
  c->id = next_call_++;
  c->kind = kind;
  c->sid = sid;
  c->reply = std::move(done);
  c->budget = static_cast<std::size_t>(cfg_.max_output_tokens * cfg_.bytes_per_token);
  Call* raw = c.get();
  calls_.emplace(raw->id, std::move(c));
  return raw;
}

void ExecService::enqueue(Call* c) {
  auto& q = queues_[c->sid];
  q.push_back(c->id);
  if (q.size() == 1) begin(c);
}

void ExecService::begin(Call* c) {
  auto* a = registry_.find(c->sid);
  c->started = true;
  a->last_used = Clock::now();
  if (c->on_begin) {
    auto r = c->on_begin(*c, *a);
    if (!r) return fail(c, std::move(r).error());
  }
  if (c->on_delta) {
    c->deltas.emplace(cfg_.delta_max_bytes, cfg_.deltas_per_call);
    c->delta_cursor = a->reader;  // what this call's response will hold
  }
  evaluate(c);
}

// Streams what arrived since the last piece; at `closed`, the held tail too.
void ExecService::stream_deltas(Call& c, AgentSession& a) {
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

void ExecService::fail(Call* c, Error e) {
  Reply reply = std::move(c->reply);
  long sid = remove_call(c);
  if (reply) reply(std::move(e));
  start_next(sid);
}

long ExecService::remove_call(Call* c) {
  CallId id = c->id;
  long sid = c->sid;
  if (auto q = queues_.find(sid); q != queues_.end()) {
    auto it = std::find(q->second.begin(), q->second.end(), id);
    if (it != q->second.end()) q->second.erase(it);
    if (q->second.empty()) queues_.erase(q);
  }
  calls_.erase(id);  // destroys c (and its timer)
  return sid;
}

void ExecService::start_next(long sid) {
  auto q = queues_.find(sid);
  if (!registry_.find(sid) || q == queues_.end() || q->second.empty()) return;
  auto next = calls_.find(q->second.front());
  if (next != calls_.end() && !next->second->started) begin(next->second.get());
}

void ExecService::cancel(CallId id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  it->second->reply = nullptr;
  start_next(remove_call(it->second.get()));
}

void ExecService::log_event(SessionEvent e) {
  if (events_.size() == 1024) events_.pop_front();
  events_.push_back(std::move(e));
  if (on_event) on_event(events_.back());
}

void ExecService::on_activity(AgentSession& a) {
  std::uint64_t before = 0;
  if (a.input.saw_output(a.session->output().total(), Clock::now(), &before) && a.session->tty())
    a.cursor_keys.scan(a.session->output(), before);
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
  std::vector<CallId> wake;
  for (auto& [cid, c] : calls_)
    if (c->sid == a.id && c->started) wake.push_back(cid);
  for (CallId cid : wake)
    if (auto it = calls_.find(cid); it != calls_.end()) evaluate(it->second.get());
}

std::optional<AwaitingInput> ExecService::probe_awaiting(AgentSession& a) {
  return a.input.probe(*a.session, Clock::now(), cfg_.input_quiet);
}

void ExecService::evaluate(Call* c) {
  if (!c->started) return;
  auto* a = registry_.find(c->sid);
  if (!a) return fail(c, tool_error("the session is gone"));
  auto now = Clock::now();
  stream_deltas(*c, *a);
  auto step = c->wait.evaluate(*a->session, a->input, {cfg_.input_quiet, cfg_.port_probe, cfg_.post_exit_close_cap}, now);
  if (step.done) return finish(c);
  auto delay = std::chrono::duration_cast<milliseconds>(step.wake_at - now) + milliseconds{1};
  CallId id = c->id;
  c->timer.start(std::max(delay, milliseconds{0}), [this, id] {
    if (auto it = calls_.find(id); it != calls_.end()) evaluate(it->second.get());
  });
}

// The session's screen as text, cut to `budget` bytes from the top (the bottom of a screen is
// where the prompt and the latest output are), with what the model knows about it.
Result<std::pair<std::string, ScreenInfo>> ExecService::screen_view(session::Session& s, std::size_t budget) {
  auto st = s.screen();
  if (!st) return tool_error(st.error().context);
  const term::Screen& sc = *st->screen;
  std::string text = session::lossy_decode(sc.text());
  if (text.size() > budget) {
    std::size_t cut = session::cut_forward(text, text.size() - budget);
    std::size_t nl = text.find('\n', cut);
    cut = nl == std::string::npos ? cut : nl + 1;
    std::size_t dropped = static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(cut), '\n'));
    text = fmt::format("[{} screen lines above omitted]\n", dropped) + text.substr(cut);
  }
  auto cur = sc.cursor();
  ScreenInfo info{sc.size().rows, sc.size().cols, cur.row, cur.col, sc.alt_screen(), sc.title(), st->exact};
  return std::pair{std::move(text), std::move(info)};
}

std::string ExecService::screen_line(const ScreenInfo& i) {
  return fmt::format("Screen: {}x{}, cursor at row {} col {}{}{}{}", i.rows, i.cols, i.cursor_row + 1, i.cursor_col + 1,
                     i.alt_screen ? ", alternate screen" : "", i.title.empty() ? "" : ", title \"" + i.title + "\"",
                     i.exact ? "" : " (inexact: earlier output was evicted)");
}

Response ExecService::build_response(AgentSession& a, Call& c) {
  auto* s = a.session;
  auto now = Clock::now();
  bool closed = s->finished();
  Collected col = collect(s->output(), a.reader, !closed);
  std::size_t budget = c.budget;
  Body body = render_body(col, budget, a.id, cfg_.envelope_extensions, cfg_.bytes_per_token);
  a.reader = col.end;  // consumed, whichever view is shown
  std::vector<std::string> screen_lines;
  std::optional<ScreenInfo> screen;
  if (c.view == View::kScreen) {
    auto sc = screen_view(*s, budget);
    if (sc) {
      body.text = std::move(sc->first);
      screen = sc->second;
      screen_lines.push_back(screen_line(*screen));
    } else {
      screen_lines.push_back("Screen: unavailable (" + sc.error().context + "); showing the raw output");
    }
  }

  Response r;
  r.chunk_id = new_chunk_id();
  r.wall_time_seconds = seconds(now - c.wait.t0());
  r.output = body.text;
  r.original_token_count = body.original_tokens;
  r.session = a.id;
  r.name = a.name();
  r.range_offset = col.start;
  r.range_length = col.end - col.start;
  r.omitted = body.omitted;
  r.output_closed = s->output_closed();
  r.input_delivered = c.input_delivered;
  if (auto* p = s->process()) r.stdin_pending_bytes = p->queued_input();
  r.fired = c.wait.fired();
  r.match_text = c.wait.match_text();
  r.match_offset = c.wait.match_offset();
  r.match_port = c.wait.port_match();
  r.warnings = c.warnings;
  r.screen = screen;

  Envelope env;
  env.chunk_id = r.chunk_id;
  env.wall_time_seconds = r.wall_time_seconds;
  env.session_id = a.id;
  env.original_tokens = r.original_token_count;
  env.body = body.text;
  std::vector<std::string> extra = c.lines;
  extra.insert(extra.end(), screen_lines.begin(), screen_lines.end());
  const auto& v = s->verdict();
  if (v) {
    r.exit_code = v->status.shell_code();
    env.exit_code = r.exit_code;
    r.state = "exited";
    r.core_dumped = v->status.core_dumped;
    if (v->status.signal) {
      r.signal = pty::signal_name(v->status.signal);
      r.killed_by = a.killed_by.value_or("a signal not sent by uexec");
      extra.push_back(fmt::format("Signal: {} (sent by {})", *r.signal, *r.killed_by));
    }
    if (v->denial) r.sandbox_denied = v->denial;
    report_lingering(*s, r, extra);
    if (!a.ended) registry_.mark_ended(a, SessionRegistry::end_reason_of(a));
  } else {
    r.session_id = a.id;
    r.state = "running";
    if (c.kind != kKill) {
      // Known when it ended the wait; otherwise looked at only after the output went quiet.
      if (auto aw = c.wait.awaiting() ? c.wait.awaiting() : probe_awaiting(a)) {
        r.awaiting_input = aw;
        r.state = "awaiting_input";
        a.input.mark_reported();
        extra.push_back(fmt::format("Waiting for input: {} ({}); prompt: \"{}\"", aw->kind, aw->evidence, aw->prompt));
      }
    }
    if (c.yield_capped)
      r.warnings.push_back(fmt::format(
          "Warning: yield_time_ms {} exceeds the {} ms maximum; waited {} ms. The process is still running: poll it "
          "with write_stdin or pass until to return when it is ready.",
          c.yield_requested, cfg_.yield_max.count(), cfg_.yield_max.count()));
  }
  const auto& fired = c.wait.fired();
  if (fired && *fired != "exit") {
    const Until& until = c.wait.conditions();
    const auto& port = c.wait.port_match();
    std::string what;
    if (*fired == "regex")
      what = fmt::format("regex /{}/ matched at byte {}", until.regex_src.value_or(""), c.wait.match_offset().value_or(0));
    else if (*fired == "idle")
      what = fmt::format("idle {} ms", until.idle ? until.idle->count() : 0);
    else if (*fired == "port" && port)
      what = fmt::format("port {} listening (pid {}, {})", port->port, port->pid, port->comm);
    else
      what = "awaiting input";
    extra.push_back("Returned early: " + what);
  }
  if (r.sandbox_denied) extra.push_back("Sandbox denied: " + r.sandbox_denied->describe());
  if (!c.input_delivered) r.warnings.push_back("Warning: input not delivered: the process had already exited.");
  for (const auto& w : r.warnings) extra.push_back(w);
  if (cfg_.envelope_extensions) env.extra = std::move(extra);
  r.text = render_envelope(env);
  return r;
}

void ExecService::finish(Call* c) {
  auto* a = registry_.find(c->sid);
  Response r = build_response(*a, *c);
  if (c->attempt_done) {
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
    auto report = std::move(c->attempt_done);
    c->attempt_done = nullptr;
    c->held = std::move(r);
    c->started = false;
    c->timer.stop();
    long sid = c->sid;
    if (auto q = queues_.find(sid); q != queues_.end()) {
      q->second.erase(std::remove(q->second.begin(), q->second.end(), c->id), q->second.end());
      if (q->second.empty()) queues_.erase(q);
    }
    start_next(sid);
    report(o);
    return;
  }
  Reply reply = std::move(c->reply);
  long sid = remove_call(c);
  if (reply) reply(std::move(r));
  start_next(sid);
}

// ---- sessions ----------------------------------------------------------------------------------

Result<long> ExecService::start_session(const ExecParams& p, Call* c) {
  long id = registry_.allocate_id();
  auto release = [&] { registry_.release_id(id); };
  std::vector<std::string> env = build_agent_env(base_env_, EnvPolicy{}, id);
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
  std::string cwd = default_cwd_;
  if (p.workdir && !p.workdir->empty()) cwd = (*p.workdir)[0] == '/' ? *p.workdir : default_cwd_ + "/" + *p.workdir;
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

// ---- the tools ---------------------------------------------------------------------------------

namespace {
// A call's wait that starts when it gets its turn on the session, for `yield` ms, no settle.
template <class CallT, class SessionT>
std::function<Result<void>(CallT&, SessionT&)> make_wait_from_turn(long yield) {
  return [yield](CallT& call, SessionT& a) -> Result<void> {
    call.wait.start(*a.session, Clock::now(), milliseconds{0}, milliseconds{yield});
    return {};
  };
}
}  // namespace

CallId ExecService::exec_command(ExecParams p, Reply done) {
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
  std::string cwd = default_cwd_;
  if (p.workdir && !p.workdir->empty()) cwd = (*p.workdir)[0] == '/' ? *p.workdir : default_cwd_ + "/" + *p.workdir;
  struct stat st {};
  if (::stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return reject(fmt::format("workdir {} is not an existing directory", cwd));

  long requested = p.yield_time_ms.value_or(cfg_.exec_yield_default.count());
  long yield = clamp_arg(requested, cfg_.yield_min.count(), cfg_.yield_max.count());
  long tokens = clamp_arg(p.max_output_tokens.value_or(cfg_.max_output_tokens), 0, cfg_.max_output_tokens_cap);
  Until until = p.until.value_or(Until{});
  if (!p.until) until.awaiting_input = true;

  // Named sessions: the same name and command again is the running one.
  std::optional<std::string> reuse_line;
  if (p.name) {
    if (AgentSession* a = registry_.find_named(*p.name)) {
      const long id = a->id;
      if (a->cmd() == p.cmd && a->session->cwd() == cwd && a->session->tty() == p.tty) {
        Call* c = new_call(kWrite, id, std::move(done));
        c->on_delta = std::move(p.on_delta);
        c->wait = UntilWait(until);
        c->budget = static_cast<std::size_t>(tokens * cfg_.bytes_per_token);
        c->lines.push_back(fmt::format("Session name: {} (existing)", *p.name));
        c->view = p.view;
        c->on_begin = make_wait_from_turn<Call, AgentSession>(yield);
        CallId cid = c->id;
        enqueue(c);
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

  Call* c = new_call(kExec, 0, std::move(done));
  c->on_delta = std::move(p.on_delta);
  c->wait = UntilWait(until);
  c->budget = static_cast<std::size_t>(tokens * cfg_.bytes_per_token);
  c->yield_requested = requested;
  c->yield_capped = requested > cfg_.yield_max.count();
  c->view = p.view;
  if (p.name) c->lines.push_back(fmt::format("Session name: {}", *p.name));
  c->on_begin = make_wait_from_turn<Call, AgentSession>(yield);
  CallId cid = c->id;
  if (sandbox_profile_ && !p.attempt && p.approvals && approval_policy_ != policy::ApprovalPolicy::kNever) {
    run_orchestrated(c, std::move(p), cwd);
    return calls_.count(cid) ? cid : 0;
  }
  auto id = start_session(p, c);
  if (!id) {
    fail(c, std::move(id).error());
    return 0;
  }
  c->sid = *id;
  enqueue(c);
  return cid;
}

// The orchestrator decides the attempts (docs/sandbox.md §6): each RunAttempt starts a session for
// this call; the call's finish reports the outcome; a retry re-points the call at a new,
// unsandboxed session; the result answers with the last attempt's response.
void ExecService::run_orchestrated(Call* c, ExecParams p, const std::string& cwd) {
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
  const CallId cid = c->id;
  auto run_attempt = [this, cid, params](const policy::SandboxAttempt& attempt,
                                         std::function<void(policy::AttemptOutcome)> report) {
    auto it = calls_.find(cid);
    if (it == calls_.end()) {  // cancelled meanwhile (say, while an approval was asked): nothing runs,
      policy::AttemptOutcome o;  // and the orchestration ends, releasing what it holds
      o.kind = policy::AttemptOutcome::Kind::kFailed;
      o.error = "the call was cancelled";
      return report(o);
    }
    Call* call = it->second.get();
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
    enqueue(call);
  };
  auto result = [this, cid, cmd = params->cmd](policy::CallResult r) {
    auto it = calls_.find(cid);
    if (it == calls_.end()) return;
    Call* call = it->second.get();
    if (!call->held) {  // rejected, aborted or failed before anything ran
      if (r.kind == policy::CallResult::Kind::kFailed) return fail(call, tool_error(r.message));  // says it all
      std::string why = r.kind == policy::CallResult::Kind::kAborted ? "aborted: " + r.message : r.message;
      return fail(call, tool_error(fmt::format("exec_command failed for `{}`: {}", cmd, why)));
    }
    Response resp = std::move(*call->held);
    if (r.kind == policy::CallResult::Kind::kDenied && !r.message.empty()) resp.text += "\nSandbox: " + r.message;
    if (r.kind == policy::CallResult::Kind::kAborted) resp.text += "\nSandbox: " + r.message;
    Reply reply = std::move(call->reply);
    calls_.erase(it);
    if (reply) reply(std::move(resp));
  };
  orchestrator->run(tc, std::move(run_attempt), std::move(result));
}

CallId ExecService::write_stdin(WriteParams p, Reply done) {
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
  long tokens = clamp_arg(p.max_output_tokens.value_or(cfg_.max_output_tokens), 0, cfg_.max_output_tokens_cap);
  Until until = p.until.value_or(Until{});
  if (!p.until) until.awaiting_input = true;

  Call* c = new_call(kWrite, a->id, std::move(done));
  c->on_delta = std::move(p.on_delta);
  c->wait = UntilWait(until);
  c->budget = static_cast<std::size_t>(tokens * cfg_.bytes_per_token);
  c->yield_requested = requested;
  c->yield_capped = !empty && requested > cfg_.yield_max.count();
  c->view = p.view;
  auto settle = cfg_.post_write_settle;
  c->on_begin = [p = std::move(p), keys = std::move(keys), yield, empty, settle](Call& call,
                                                                                 AgentSession& view) -> Result<void> {
    session::Session& s = *view.session;
    auto* proc = s.process();
    if (!empty) {
      if (s.verdict() || s.finished()) {
        call.input_delivered = false;
      } else if (s.tty()) {
        if (p.secret) {
          auto modes = pty::tty_modes(proc->master_fd());
          if (!modes || modes->echo || !modes->icanon)
            return tool_error(
                "write_stdin failed: secret input refused: the terminal would echo it (ECHO is on or the program reads in "
                "raw mode)");
        }
        std::string data = p.chars;
        for (const auto& k : keys) data += *key_bytes(k, true, view.cursor_keys.application());
        if (p.close_stdin) data += "\x04";
        if (auto r = s.write(data); !r) {
          if (r.error().code == Errc::kLimit)
            return tool_error("write_stdin failed: failed to write to stdin: stdin queue full: the process is not reading");
          call.input_delivered = false;
        }
      } else {
        bool only = keys.empty() || p.chars.empty();
        bool ctrl_c = (p.chars == "\x03" && keys.empty()) || (p.chars.empty() && keys == std::vector<std::string>{"ctrl-c"});
        bool ctrl_d = (p.chars == "\x04" && keys.empty()) || (p.chars.empty() && keys == std::vector<std::string>{"ctrl-d"});
        bool ctrl_bs = p.chars.empty() && keys == std::vector<std::string>{"ctrl-\\"};
        (void)only;
        if (ctrl_c) {
          (void)s.signal(SIGINT, pty::SignalTarget::kGroup);
        } else if (ctrl_bs) {
          (void)s.signal(SIGQUIT, pty::SignalTarget::kGroup);
        } else if (ctrl_d || (p.close_stdin && p.chars.empty() && keys.empty())) {
          if (proc->stdin_pipe_fd() >= 0) (void)s.close_stdin();
        } else {
          if (proc->stdin_pipe_fd() < 0)
            return tool_error(
                "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true or "
                "pipe_stdin=true to keep stdin open");
          if (p.secret) {
            // A pipe does not echo: secret input is fine here.
          }
          std::string data = p.chars;
          for (const auto& k : keys) data += *key_bytes(k, false, false);
          if (auto r = s.write(data); !r) {
            if (r.error().code == Errc::kLimit)
              return tool_error(
                  "write_stdin failed: failed to write to stdin: stdin queue full: the process is not reading");
            return tool_error("write_stdin failed: failed to write to stdin: " + r.error().message());
          }
          if (p.close_stdin) (void)s.close_stdin();
        }
      }
      view.input.saw_input(Clock::now());
    }
    call.wait.start(s, Clock::now(), empty ? milliseconds{0} : settle, milliseconds{yield});
    return {};
  };
  CallId cid = c->id;
  enqueue(c);
  return cid;
}

CallId ExecService::kill_session(KillParams p, Reply done) {
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
  long tokens = clamp_arg(p.max_output_tokens.value_or(cfg_.max_output_tokens), 0, cfg_.max_output_tokens_cap);
  if (!a->session->finished()) {
    a->killed_by = "kill_session";
    if (sig->second == SIGTERM) {
      a->session->terminate(milliseconds{grace});
    } else {
      (void)a->session->signal(sig->second,
                               a->session->tty() ? pty::SignalTarget::kForeground : pty::SignalTarget::kGroup);
    }
  }
  Call* c = new_call(kKill, a->id, std::move(done));
  c->budget = static_cast<std::size_t>(tokens * cfg_.bytes_per_token);
  // terminate escalates to SIGKILL at `grace`; allow the kill and the reap to land.
  c->wait.start(*a->session, Clock::now(), milliseconds{0},
                milliseconds{grace} + (sig->second == SIGTERM ? milliseconds{500} : milliseconds{0}));
  c->started = true;
  CallId cid = c->id;
  evaluate(c);
  return cid;
}

Result<Response> ExecService::read_output(const ReadParams& p) {
  auto target = registry_.find_target(p.session_id, p.name, "read_output", true);
  if (!target) return std::move(target).error();
  AgentSession* a = *target;
  const auto& ring = a->session->output();
  auto t0 = Clock::now();
  long tokens = clamp_arg(p.max_output_tokens.value_or(cfg_.max_output_tokens), 0, cfg_.max_output_tokens_cap);
  std::size_t budget = static_cast<std::size_t>(tokens * cfg_.bytes_per_token);
  Offset first = ring.head_end() < ring.tail_start() && ring.head_end() == 0 ? ring.tail_start() : 0;
  Response r;
  r.session = a->id;
  r.name = a->name();
  std::string body;
  Offset range_from = 0, range_to = 0;
  if (p.view == View::kScreen) {
    if (p.grep || p.offset || p.length || p.tail_lines)
      return tool_error("read_output failed: view \"screen\" shows the current screen; it cannot be combined with "
                        "grep, offset, length or tail_lines");
    auto sc = screen_view(*a->session, budget);
    if (!sc) return tool_error("read_output failed: " + sc.error().context);
    body = std::move(sc->first);
    r.screen = sc->second;
    range_from = range_to = ring.total();
  } else if (p.grep) {
    auto compiled = compile_client_regex(*p.grep, p.ignore_case);
    if (!compiled)
      return tool_error(fmt::format("read_output failed: invalid grep pattern: {}", compiled.error().context));
    const std::regex& re = **compiled;
    // Walk retained lines with absolute numbers; show hits with context.
    Collected col = collect(ring, first, false);
    std::uint64_t tail_lines = 0;
    std::string tail_raw = col.raw.substr(col.gap > 0 ? col.gap_at : col.raw.size());
    for (char ch : tail_raw) tail_lines += ch == '\n';
    struct Line {
      std::uint64_t no;
      Offset off;
      std::string text;
    };
    std::vector<Line> lines;
    auto split = [&](std::string_view raw, Offset base, std::uint64_t first_no) {
      std::size_t pos = 0;
      std::uint64_t no = first_no;
      while (pos < raw.size()) {
        std::size_t nl = raw.find('\n', pos);
        std::size_t end = nl == std::string_view::npos ? raw.size() : nl;
        lines.push_back({no++, base + pos, session::lossy_decode(strip_ansi(raw.substr(pos, end - pos)))});
        pos = end + 1;
      }
    };
    std::string_view raw(col.raw);
    if (col.gap > 0) {
      split(raw.substr(0, col.gap_at), col.start, 1);
      // The tail's first line number: total newlines minus those in the tail, plus one.
      std::uint64_t tail_first = ring.newlines() - tail_lines + 1;
      split(raw.substr(col.gap_at), col.start + col.gap_at + col.gap, tail_first);
    } else {
      split(raw, col.start, 1);
    }
    long ctx = clamp_arg(p.context, 0, 10);
    long hits = 0;
    std::size_t last_shown = SIZE_MAX;
    for (std::size_t i = 0; i < lines.size() && hits < p.max_matches; ++i) {
      if (!std::regex_search(lines[i].text, re)) continue;
      ++hits;
      std::size_t from = i >= static_cast<std::size_t>(ctx) ? i - static_cast<std::size_t>(ctx) : 0;
      std::size_t to = std::min(lines.size() - 1, i + static_cast<std::size_t>(ctx));
      if (last_shown != SIZE_MAX && from > last_shown + 1) body += "--\n";
      for (std::size_t k = std::max(from, last_shown == SIZE_MAX ? 0 : last_shown + 1); k <= to; ++k)
        body += fmt::format("L{}@{}{} {}\n", lines[k].no, lines[k].off, k == i ? ":" : "-", lines[k].text);
      last_shown = to;
    }
    if (col.gap > 0) body += fmt::format("[bytes {}-{} dropped from retention]\n", col.start + col.gap_at,
                                        col.start + col.gap_at + col.gap);
    if (hits == 0) body += "(no match)\n";
    range_from = col.start;
    range_to = col.end;
  } else {
    Offset from = p.offset.value_or(first);
    Offset to;
    if (p.tail_lines) {
      // The last N lines of the retained tail.
      Collected all = collect(ring, first, false);
      std::string_view raw(all.raw);
      long n = std::max(1L, *p.tail_lines);
      std::size_t pos = raw.size();
      if (pos > 0 && raw[pos - 1] == '\n') --pos;
      for (long k = 0; k < n && pos > 0; ++k) {
        auto nl = raw.rfind('\n', pos - 1);
        pos = nl == std::string_view::npos ? 0 : nl + 1;
        if (nl == std::string_view::npos) break;
        if (k + 1 < n) pos = nl;
      }
      from = all.start + pos + (all.gap > 0 && pos >= all.gap_at ? all.gap : 0);
      to = ring.total();
    } else {
      to = p.length ? std::min<Offset>(ring.total(), from + *p.length) : ring.total();
    }
    Collected col = collect(ring, from, false);
    trim_collected(col, to);
    Body b = render_body(col, budget, a->id, cfg_.envelope_extensions, cfg_.bytes_per_token);
    body = std::move(b.text);
    r.omitted = b.omitted;
    r.original_token_count = b.original_tokens;
    range_from = col.start;
    range_to = col.end;
  }
  r.chunk_id = new_chunk_id();
  r.wall_time_seconds = seconds(Clock::now() - t0);
  r.output = body;
  r.range_offset = range_from;
  r.range_length = range_to - range_from;
  Envelope env;
  env.chunk_id = r.chunk_id;
  env.wall_time_seconds = r.wall_time_seconds;
  env.session_id = a->id;
  r.session = a->id;
  r.output_closed = a->session->output_closed();
  std::vector<std::string> lingering;
  if (const auto& v = a->session->verdict()) {
    r.exit_code = v->status.shell_code();
    env.exit_code = r.exit_code;
    r.state = "exited";
    report_lingering(*a->session, r, lingering);
  } else {
    r.session_id = a->id;
    r.state = "running";
  }
  env.extra.push_back(r.screen ? screen_line(*r.screen)
                              : fmt::format("Range: bytes {}-{} of {}", range_from, range_to, ring.total()));
  env.extra.insert(env.extra.end(), lingering.begin(), lingering.end());
  env.original_tokens = r.original_token_count;
  env.body = body;
  r.text = render_envelope(env);
  return r;
}

ListResult ExecService::list_sessions(const ListParams& p) {
  ListResult out;
  auto now = Clock::now();
  for (const auto& [id, a] : registry_.records()) {
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
    else if (probe_awaiting(*a))
      row.state = "awaiting_input";
    else
      row.state = "running";
    out.rows.push_back(std::move(row));
  }
  if (p.include_exited) {
    int shown = 0;
    registry_.tombstones().newest_first([&](const session::Tombstones::Entry& t) {
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

void ExecService::shutdown(std::function<void()> done) {
  for (const auto& [id, a] : registry_.records()) {
    if (a->session->finished()) continue;
    if (!a->killed_by) a->killed_by = "manager shutdown";
    a->session->terminate();
  }
  shutdown_done_ = std::move(done);
  shutdown_deadline_ = Clock::now() + pm_.config().terminate_grace + milliseconds{500};
  check_shutdown();
}

void ExecService::check_shutdown() {
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
