// session_journal.h: the journal's loop side: copies every session of a ProcessManager into a
// JournalWriter (journal_writer.h), as a SessionRecorder (session/session_recorder.h).
//
// On a session's start it begins a journal with the session's meta (ids, command, cwd, tty,
// pid, start), then subscribes to its OutputRing like any other reader, with its own cursor:
// each notification hands the new chunks to the writer with their seq, offset, stream and
// time. The ring wakes subscribers as each chunk is appended, so the journal sees every byte
// the ring ever held, the evicted middle included. The meta is written again on the next loop
// turn (the front doors name a session just after it starts) and, with "end", when the session
// finishes or is removed while it runs.
//
// What the journal holds is the daemon's view: output the writer's queue could not take (a
// disk slower than the output) is a gap, and a process whose daemon died before its end has
// no end (journal_format.h's ending_text says so). Loop thread only.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "journal/journal_writer.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "session/session.h"
#include "session/session_recorder.h"

namespace uexec::journal {

class SessionJournal final : public session::SessionRecorder {
 public:
  SessionJournal(loop::Loop& loop, std::unique_ptr<JournalWriter> writer);
  ~SessionJournal();
  SessionJournal(const SessionJournal&) = delete;
  SessionJournal& operator=(const SessionJournal&) = delete;

  void on_started(session::Session& s) override;
  void on_closed(session::Session& s) override;
  void on_removed(session::Session& s) override;

  JournalWriter& writer() noexcept { return *writer_; }
  // Sessions being journaled now.
  std::size_t taps() const noexcept { return taps_.size(); }

 private:
  struct Tap {
    JournalWriter::Id id = 0;
    session::Offset cursor = 0;
    std::unique_ptr<session::Subscription> sub;
  };
  void drain(session::Session& s, Tap& tap);
  void finish(session::Session& s, const char* reason);
  std::string meta_of(const session::Session& s, const char* end_reason) const;

  std::unique_ptr<JournalWriter> writer_;
  unsigned long long own_start_time_;  // this process's, for the meta's "daemon"
  std::unordered_map<session::Session*, Tap> taps_;
  std::vector<session::Session*> renamed_;  // meta to write again on the next turn
  loop::Timer next_turn_;
};

}  // namespace uexec::journal
