#include "agent/read_output.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <vector>

#include "agent/client_regex.h"
#include "agent/envelope.h"
#include "agent/probes.h"
#include "agent/response_builder.h"
#include "agent/time_text.h"
#include "agent/tool_args.h"
#include "journal/journal_format.h"
#include "pty/exit_status.h"
#include "session/utf8_cut.h"

namespace uexec::agent {

using base::Result;
using session::Offset;

namespace {

// What read_output reads: everything retained of one session's output from its first retained
// byte, with the one span it lost (a live ring's evicted middle, a journal's cut).
struct Retained {
  Collected all;
  Offset total = 0;              // everything the process wrote; may be past all.end (a journal)
  std::uint64_t newlines = 0;    // in all of it, the lost span included (tail line numbers)
  bool tail_numbers_known = true;  // false: a journal whose lost span's newlines are unknown
};

Retained retained_of(const session::OutputRing& ring) {
  Offset first = ring.head_end() < ring.tail_start() && ring.head_end() == 0 ? ring.tail_start() : 0;
  return {collect(ring, first, false), ring.total(), ring.newlines()};
}

// A journal's chunks as one Collected: the head run, the single lost span, the last run. With
// more than one loss (a head cut and a queue gap), the runs between are counted into the span,
// never shown as continuous output.
Retained retained_of(const journal::Contents& j) {
  Retained r;
  struct Run {
    Offset from;
    std::string bytes;
  };
  std::vector<Run> runs;
  for (const auto& ch : j.chunks) {
    if (runs.empty() || ch.missing_before > 0 || ch.offset != runs.back().from + runs.back().bytes.size()) {
      if (ch.offset < (runs.empty() ? 0 : runs.back().from + runs.back().bytes.size())) continue;  // overlap
      if (runs.empty() && ch.offset > 0) runs.push_back({0, {}});  // the first bytes are gone
      runs.push_back({ch.offset, ch.bytes});
    } else {
      runs.back().bytes += ch.bytes;
    }
  }
  Collected& c = r.all;
  if (!runs.empty()) {
    c.raw = std::move(runs.front().bytes);
    c.end = runs.front().from + c.raw.size();
    if (runs.size() > 1) {
      c.gap_at = c.raw.size();
      c.gap = runs.back().from - c.end;
      c.raw += runs.back().bytes;
      c.end = runs.back().from + runs.back().bytes.size();
    }
  }
  const nlohmann::json end = j.meta.value("end", nlohmann::json());
  auto unsigned_member = [&](const char* name) -> std::optional<std::uint64_t> {
    if (!end.is_object() || !end.contains(name) || !end[name].is_number_unsigned()) return std::nullopt;
    return end[name].get<std::uint64_t>();
  };
  const auto total = unsigned_member("totalBytes");
  r.total = std::max<Offset>(c.end, total.value_or(0));
  for (char ch : c.raw) r.newlines += ch == '\n';
  if (c.gap > 0) {
    // Line numbers after a lost span need the process's own count, written at its end, and
    // only when nothing after the last record is missing too.
    const auto newlines = unsigned_member("newlines");
    r.tail_numbers_known = newlines && total == c.end;
    if (r.tail_numbers_known) r.newlines = *newlines;
  }
  return r;
}

// The body of a grep, a tail_lines or a byte-range read of `src` into `r`; the range it covers.
Result<std::pair<Offset, Offset>> render_read(const Retained& src, const ReadParams& p, std::size_t budget, long id,
                                              const base::AgentConfig& cfg, Response& r, std::string& body) {
  if (p.grep) {
    auto compiled = compile_client_regex(*p.grep, p.ignore_case);
    if (!compiled)
      return tool_error(fmt::format("read_output failed: invalid grep pattern: {}", compiled.error().context));
    const std::regex& re = **compiled;
    // Walk retained lines with absolute numbers; show hits with context.
    const Collected& col = src.all;
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
        lines.push_back({no, base + pos, session::lossy_decode(strip_ansi(raw.substr(pos, end - pos)))});
        if (no > 0) ++no;
        pos = end + 1;
      }
    };
    std::string_view raw(col.raw);
    if (col.gap > 0) {
      split(raw.substr(0, col.gap_at), col.start, 1);
      // The tail's first line number: total newlines minus those in the tail, plus one.
      // (0: unknown, shown as "L?")
      std::uint64_t tail_first = !src.tail_numbers_known       ? 0
                                 : src.newlines >= tail_lines ? src.newlines - tail_lines + 1
                                                              : 1;
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
        body += fmt::format("L{}@{}{} {}\n", lines[k].no ? std::to_string(lines[k].no) : std::string("?"), lines[k].off,
                            k == i ? ":" : "-", lines[k].text);
      last_shown = to;
    }
    if (col.gap > 0) body += fmt::format("[bytes {}-{} dropped from retention]\n", col.start + col.gap_at,
                                        col.start + col.gap_at + col.gap);
    if (hits == 0) body += "(no match)\n";
    return std::pair{col.start, col.end};
  }
  Offset from = p.offset.value_or(src.all.start);
  Offset to;
  if (p.tail_lines) {
    // The last N lines of the retained tail.
    const Collected& all = src.all;
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
    to = src.total;
  } else {
    to = p.length ? std::min<Offset>(src.total, from + *p.length) : src.total;
  }
  Collected col = from_offset(src.all, from);
  trim_collected(col, to);
  Body b = render_body(col, budget, id, cfg.envelope_extensions, cfg.bytes_per_token);
  body = std::move(b.text);
  r.omitted = b.omitted;
  r.original_token_count = b.original_tokens;
  return std::pair{col.start, col.end};
}

// read_output of a session no record holds, from the newest journal of its id: one an earlier
// daemon ran (the lookup's index), or one this daemon issued and forgot (a scan of the root).
std::optional<Result<Response>> read_from_journal(const SessionRegistry& registry, long id, const ReadParams& p,
                                                  const base::AgentConfig& cfg, const JournalLookup& journal) {
  if (journal.root.empty()) return std::nullopt;
  std::string dir;
  if (auto it = journal.dirs.find(id); it != journal.dirs.end()) {
    dir = it->second;
  } else if (registry.issued(id)) {
    auto listed = journal::find_agent_journal(journal.root, id);
    if (!listed) return std::nullopt;
    dir = listed->dir;
  } else {
    return std::nullopt;  // no daemon gave this id: no scan for a typo
  }
  auto contents = journal::read_journal(dir);
  if (!contents) return std::nullopt;
  const nlohmann::json daemon = contents->meta.value("daemon", nlohmann::json::object());
  const bool ours = daemon.is_object() && daemon.contains("pid") && daemon["pid"].is_number_integer() &&
                    daemon["pid"].get<long long>() == static_cast<long long>(::getpid());
  const char* whose = ours ? "this daemon no longer keeps it" : "an earlier daemon ran it";
  if (p.view == View::kScreen)
    return tool_error(fmt::format("read_output failed: session {} has ended ({}); its screen is gone, but its output "
                                  "is in the journal: read it without view \"screen\"",
                                  id, whose));
  auto t0 = Clock::now();
  const Retained src = retained_of(*contents);
  Response r;
  std::string body;
  auto range = render_read(src, p, output_budget(p.max_output_tokens, cfg), id, cfg, r, body);
  if (!range) return std::move(range).error();
  const auto [range_from, range_to] = *range;
  const nlohmann::json& meta = contents->meta;
  const nlohmann::json end = meta.value("end", nlohmann::json());
  r.chunk_id = new_chunk_id();
  r.wall_time_seconds = seconds(Clock::now() - t0);
  r.output = body;
  r.range_offset = range_from;
  r.range_length = range_to - range_from;
  r.session = id;
  if (meta.contains("name") && meta["name"].is_string()) r.name = meta["name"].get<std::string>();
  r.output_closed = true;
  r.journal = dir;
  Envelope env;
  env.chunk_id = r.chunk_id;
  env.wall_time_seconds = r.wall_time_seconds;
  env.session_id = id;
  auto small_int = [&](const char* name, long lo, long hi) -> std::optional<int> {
    if (!end.is_object() || !end.contains(name) || !end[name].is_number_integer()) return std::nullopt;
    const long long v = end[name].get<long long>();
    return v >= lo && v <= hi ? std::optional(static_cast<int>(v)) : std::nullopt;
  };
  if (auto sig = small_int("signal", 1, 127)) {
    r.exit_code = 128 + *sig;
    r.signal = pty::signal_name(*sig);
    r.state = "exited";
  } else if (auto code = small_int("exitCode", 0, 255)) {
    r.exit_code = *code;
    r.state = "exited";
  } else {
    r.state = "unknown";  // its daemon stopped first: it may have gone on running, unwatched
  }
  env.exit_code = r.exit_code;
  env.extra.push_back(fmt::format("Range: bytes {}-{} of {}", range_from, range_to, src.total));
  env.extra.push_back(fmt::format("From the journal ({}): {}", whose, journal::ending_text(meta)));
  env.original_tokens = r.original_token_count;
  env.body = body;
  r.text = render_envelope(env);
  return r;
}

}  // namespace

Result<Response> read_output(SessionRegistry& registry, const ReadParams& p, const base::AgentConfig& cfg,
                             const JournalLookup& journal) {
  auto target = registry.find_target(p.session_id, p.name, "read_output", true);
  if (!target) {
    if (p.session_id && !registry.find(*p.session_id))
      if (auto from_journal = read_from_journal(registry, *p.session_id, p, cfg, journal))
        return std::move(*from_journal);
    return std::move(target).error();
  }
  AgentSession* a = *target;
  const auto& ring = a->session->output();
  auto t0 = Clock::now();
  std::size_t budget = output_budget(p.max_output_tokens, cfg);
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
  } else {
    auto range = render_read(retained_of(ring), p, budget, a->id, cfg, r, body);
    if (!range) return std::move(range).error();
    std::tie(range_from, range_to) = *range;
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
