#include "agent/until.h"

#include <algorithm>

#include "session/session.h"
#include "session/utf8_cut.h"

namespace uexec::agent {

void UntilWait::start(const session::Session& s, Clock::time_point t0, milliseconds settle, milliseconds wait) {
  start_at(s.output().total(), t0, settle, wait);
}

void UntilWait::start_at(session::Offset from, Clock::time_point t0, milliseconds settle, milliseconds wait) {
  t0_ = t0;
  settle_end_ = t0 + settle;
  deadline_ = t0 + settle + wait;
  from_ = scan_ = from;
  partial_.clear();
  partial_start_ = scan_;
}

void UntilWait::clear_outcome() {
  fired_.reset();
  match_text_.reset();
  match_offset_.reset();
  port_match_.reset();
  awaiting_.reset();
}

UntilWait::Step UntilWait::evaluate(session::Session& s, InputWatch& input, const UntilTiming& timing,
                                    Clock::time_point now) {
  Clock::time_point next = deadline_;
  if (now < settle_end_)
    next = std::min(next, settle_end_);
  else if (output_condition_holds(s.output()))
    return {true, now};
  if (s.finished()) return {true, now};
  if (s.verdict()) {
    auto cap = std::min(s.exited_at() + timing.post_exit_close_cap, deadline_);
    if (now >= cap) return {true, now};
    next = std::min(next, cap);
  } else if (now >= settle_end_ && state_condition_holds(s, input, timing, now, &next)) {
    return {true, now};
  }
  if (now >= deadline_) {
    // A reaped child's verdict is at most one exit drain away: report the exit, not "running".
    if (!(s.exited() && !s.verdict())) return {true, now};
    next = now + milliseconds{5};
  }
  return {false, next};
}

bool UntilWait::output_condition_holds(const session::OutputRing& ring) {
  if (until_.regex && scan_regex(ring)) {
    fired_ = "regex";
    return true;
  }
  if (until_.bytes && ring.total() - std::min(from_, ring.total()) >= *until_.bytes) {
    fired_ = "bytes";
    return true;
  }
  return false;
}

bool UntilWait::state_condition_holds(session::Session& s, InputWatch& input, const UntilTiming& timing,
                                      Clock::time_point now, Clock::time_point* next) {
  if (until_.idle) {
    auto since = std::max({t0_, settle_end_, input.last_output()});
    if (now - since >= *until_.idle) {
      fired_ = "idle";
      return true;
    }
    *next = std::min(*next, since + *until_.idle);
  }
  if (until_.port) {
    if (now >= next_probe_) {
      if (auto l = find_listener(s.pid(), *until_.port)) {
        port_match_ = l;
        fired_ = "port";
        return true;
      }
      next_probe_ = now + timing.port_probe;
    }
    *next = std::min(*next, next_probe_);
  }
  if (until_.awaiting_input) {
    auto quiet_at = input.last_output() + timing.input_quiet;
    if (now < quiet_at) {
      *next = std::min(*next, quiet_at);
    } else {
      if (!input.reported()) {
        if (auto aw = input.probe(s, now, timing.input_quiet)) {
          fired_ = "awaiting_input";
          awaiting_ = std::move(aw);
          return true;
        }
      }
      *next = std::min(*next, now + milliseconds{100});
    }
  }
  return false;
}

// Matches the regex per line of new output (ANSI stripped, decoded lossily); a line not yet
// ended is matched as it stands, and at most its last 64 KiB are examined.
bool UntilWait::scan_regex(const session::OutputRing& ring) {
  auto matches = [this](std::string_view raw) {
    std::string line = session::lossy_decode(strip_ansi(raw));
    std::smatch m;
    if (!std::regex_search(line, m, *until_.regex)) return false;
    match_text_ = m.str(0);
    match_offset_ = partial_start_;
    return true;
  };
  while (scan_ < ring.total()) {
    auto r = ring.read_from(scan_, 64 * 1024);
    if (r.gap > 0) {
      partial_.clear();
      partial_start_ = scan_ + r.gap;
    }
    partial_ += r.text();
    scan_ = r.next;
    // Complete lines first.
    std::size_t nl;
    while ((nl = partial_.find('\n')) != std::string::npos) {
      if (matches(std::string_view(partial_).substr(0, nl))) return true;
      partial_.erase(0, nl + 1);
      partial_start_ += nl + 1;
    }
    if (partial_.size() > 64 * 1024) {  // examine at most the last 64 KiB of a line
      partial_start_ += partial_.size() - 64 * 1024;
      partial_.erase(0, partial_.size() - 64 * 1024);
    }
  }
  return !partial_.empty() && matches(partial_);
}

}  // namespace uexec::agent
