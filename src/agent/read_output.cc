#include "agent/read_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <regex>
#include <vector>

#include "agent/client_regex.h"
#include "agent/envelope.h"
#include "agent/probes.h"
#include "agent/response_builder.h"
#include "agent/time_text.h"
#include "agent/tool_args.h"
#include "session/utf8_cut.h"

namespace uexec::agent {

using base::Result;
using session::Offset;

Result<Response> read_output(SessionRegistry& registry, const ReadParams& p, const base::AgentConfig& cfg) {
  auto target = registry.find_target(p.session_id, p.name, "read_output", true);
  if (!target) return std::move(target).error();
  AgentSession* a = *target;
  const auto& ring = a->session->output();
  auto t0 = Clock::now();
  std::size_t budget = output_budget(p.max_output_tokens, cfg);
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
    Body b = render_body(col, budget, a->id, cfg.envelope_extensions, cfg.bytes_per_token);
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

}  // namespace uexec::agent
