#include "journal/session_journal.h"

#include <unistd.h>

#include <csignal>

#include <chrono>

#include <nlohmann/json.hpp>

#include "policy/control_registry.h"

namespace uexec::journal {

using nlohmann::json;

namespace {

long long unix_ms(session::WallClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

SessionJournal::SessionJournal(loop::Loop& loop, std::unique_ptr<JournalWriter> writer)
    : writer_(std::move(writer)),
      own_start_time_(policy::process_start_time(::getpid())),
      next_turn_(loop) {}

SessionJournal::~SessionJournal() = default;

void SessionJournal::on_started(session::Session& s) {
  Tap& tap = taps_[&s];
  tap.id = writer_->begin(static_cast<std::uint64_t>(unix_ms(s.started_wall())), meta_of(s, nullptr));
  tap.sub = s.output().subscribe([this, &s] {
    if (auto it = taps_.find(&s); it != taps_.end()) drain(s, it->second);
  });
  drain(s, tap);
  renamed_.push_back(&s);
  if (!next_turn_.active())
    next_turn_.start(std::chrono::milliseconds{0}, [this] {
      auto pending = std::move(renamed_);
      renamed_.clear();
      for (session::Session* p : pending)
        if (auto it = taps_.find(p); it != taps_.end()) writer_->update_meta(it->second.id, meta_of(*p, nullptr));
    });
}

void SessionJournal::on_closed(session::Session& s) { finish(s, "exited"); }

void SessionJournal::on_removed(session::Session& s) { finish(s, "removed"); }

void SessionJournal::finish(session::Session& s, const char* reason) {
  auto it = taps_.find(&s);
  if (it == taps_.end()) return;
  drain(s, it->second);
  writer_->end(it->second.id, meta_of(s, reason));
  taps_.erase(it);
}

void SessionJournal::drain(session::Session& s, Tap& tap) {
  const session::OutputRing& ring = s.output();
  while (tap.cursor < ring.total()) {
    session::ReadResult r = ring.read_from(tap.cursor, SIZE_MAX);
    for (const auto& p : r.pieces) {
      RecordHeader h;
      h.length = static_cast<std::uint32_t>(p.bytes.size());
      h.seq = p.seq;
      h.offset = p.offset;
      h.at_ms = p.at_ms;
      h.stream = static_cast<std::uint8_t>(p.stream);
      (void)writer_->append(tap.id, h, p.bytes);  // a full queue drops: the offsets show the hole
    }
    if (r.next <= tap.cursor) break;
    tap.cursor = r.next;
  }
}

std::string SessionJournal::meta_of(const session::Session& s, const char* end_reason) const {
  json m = json::object();
  m["version"] = 1;
  m["id"] = s.id();
  if (auto slash = s.id().find('/'); slash != std::string::npos) {
    m["sessionId"] = s.id().substr(0, slash);
    m["processId"] = s.id().substr(slash + 1);
  } else if (!s.id().empty() && s.id().find_first_not_of("0123456789") == std::string::npos && s.id().size() < 12) {
    m["agentSessionId"] = std::stoll(s.id());  // an agent tool's session (exec_command)
  } else {
    m["processId"] = s.id();
  }
  if (!s.name().empty()) m["name"] = s.name();
  m["argv"] = s.argv();
  m["cwd"] = s.cwd();
  m["tty"] = s.tty();
  if (s.tty()) m["size"] = {{"rows", s.size().rows}, {"cols", s.size().cols}};
  m["pid"] = s.pid();
  m["startedAtMs"] = unix_ms(s.started_wall());
  m["sandbox"] = s.sandbox_kind();
  m["daemon"] = {{"pid", ::getpid()}, {"startTime", own_start_time_}};
  if (end_reason) {
    json end = {{"reason", end_reason}, {"totalBytes", s.output().total()}, {"newlines", s.output().newlines()}};
    if (const auto& v = s.verdict()) {
      if (v->status.signal != 0) end["signal"] = v->status.signal;
      else end["exitCode"] = v->status.code;
      end["exitedAtMs"] = unix_ms(s.exited_wall());
      if (v->sandbox_denied()) end["denied"] = true;
    } else {
      end["signal"] = SIGKILL;  // removed while it ran: the manager kills it
    }
    if (const auto& by = s.ended_by()) {
      end["endedBy"] = by->limit;
      end["endedByMessage"] = by->message;
    }
    m["end"] = std::move(end);
  }
  return m.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace uexec::journal
