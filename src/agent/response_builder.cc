#include "agent/response_builder.h"

#include <fmt/core.h>

#include <algorithm>

#include "agent/time_text.h"
#include "agent/tool_args.h"
#include "session/utf8_cut.h"

namespace uexec::agent {

using base::Result;

namespace {

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

}  // namespace

void report_lingering(const session::Session& s, Response& r, std::vector<std::string>& extra) {
  r.lingering = s.finished() ? s.lingering() : s.live_descendants();
  if (!r.lingering.empty()) extra.push_back(lingering_line(r.lingering));
}

// The session's screen as text, cut to `budget` bytes from the top (the bottom of a screen is
// where the prompt and the latest output are), with what the model knows about it.
Result<std::pair<std::string, ScreenInfo>> screen_view(session::Session& s, std::size_t budget) {
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

std::string screen_line(const ScreenInfo& i) {
  return fmt::format("Screen: {}x{}, cursor at row {} col {}{}{}{}", i.rows, i.cols, i.cursor_row + 1, i.cursor_col + 1,
                     i.alt_screen ? ", alternate screen" : "", i.title.empty() ? "" : ", title \"" + i.title + "\"",
                     i.exact ? "" : " (inexact: earlier output was evicted)");
}

Response build_call_response(AgentSession& a, const Call& c, const base::AgentConfig& cfg) {
  auto* s = a.session;
  auto now = Clock::now();
  bool closed = s->finished();
  Collected col = collect(s->output(), a.reader, !closed);
  std::size_t budget = c.budget;
  Body body = render_body(col, budget, a.id, cfg.envelope_extensions, cfg.bytes_per_token);
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
    // Codex's line names the session only while it runs; read_output still takes it.
    extra.insert(extra.begin(), fmt::format("Session ID: {} (exited; read_output re-reads its output)", a.id));
    report_lingering(*s, r, extra);
  } else {
    r.session_id = a.id;
    r.state = "running";
    if (c.kind != CallKind::kKill) {
      // Known when it ended the wait; otherwise looked at only after the output went quiet.
      if (auto aw = c.wait.awaiting() ? c.wait.awaiting() : a.input.probe(*s, now, cfg.input_quiet)) {
        r.awaiting_input = aw;
        r.state = "awaiting_input";
        a.input.mark_reported();
        extra.push_back(aw->kind == "screen"
                            ? fmt::format("Waiting for input: a full-screen program waits for keys ({})", aw->evidence)
                            : fmt::format("Waiting for input: {} ({}); prompt: \"{}\"", aw->kind, aw->evidence, aw->prompt));
      }
    }
    if (c.yield_capped)
      r.warnings.push_back(fmt::format(
          "Warning: yield_time_ms {} exceeds the {} ms maximum; waited {} ms. The process is still running: poll it "
          "with write_stdin or pass until to return when it is ready.",
          c.yield_requested, cfg.yield_max.count(), cfg.yield_max.count()));
    if (c.poll_raised && r.wall_time_seconds * 1000 > static_cast<double>(c.yield_requested))
      r.warnings.push_back(fmt::format(
          "Note: write_stdin without input is a poll, which waits at least {} ms (Codex's rule); yield_time_ms {} was "
          "raised. Pass until to return as soon as the process prints, exits or waits for input.",
          cfg.poll_min.count(), c.yield_requested));
  }
  const auto& fired = c.wait.fired();
  if (fired && *fired != "exit") {
    const Until& until = c.wait.conditions();
    const auto& port = c.wait.port_match();
    std::string what;
    if (*fired == "regex")
      what = fmt::format("regex /{}/ matched at byte {}", until.regex_src.value_or(""), c.wait.match_offset().value_or(0));
    else if (*fired == "bytes")
      what = fmt::format("{} bytes of output", until.bytes.value_or(0));
    else if (*fired == "idle")
      what = fmt::format("idle {} ms", until.idle ? until.idle->count() : 0);
    else if (*fired == "port" && port)
      what = fmt::format("port {} listening (pid {}, {})", port->port, port->pid, port->comm);
    else
      what = "awaiting input";
    extra.push_back("Returned early: " + what);
  }
  if (r.sandbox_denied) extra.push_back("Sandbox denied: " + r.sandbox_denied->describe());
  // Up here as well as in the output: a client that cuts a long result in the middle (Codex,
  // Gemini CLI) cuts the output's own marker away, never these lines.
  for (const auto& o : r.omitted)
    extra.push_back(o.kind == "evicted"
                        ? fmt::format("Omitted: bytes {}-{} of the output were evicted (no longer retained)", o.offset,
                                      o.offset + o.length)
                        : fmt::format("Omitted: bytes {}-{} (truncated); read_output session_id={} offset={} length={} "
                                      "returns them",
                                      o.offset, o.offset + o.length, a.id, o.offset, o.length));
  if (!c.input_delivered) r.warnings.push_back("Warning: input not delivered: the process had already exited.");
  for (const auto& w : r.warnings) extra.push_back(w);
  if (cfg.envelope_extensions) env.extra = std::move(extra);
  r.text = render_envelope(env);
  return r;
}

}  // namespace uexec::agent
