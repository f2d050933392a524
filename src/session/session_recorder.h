// session_recorder.h: what a ProcessManager tells a recorder (the journal, journal/) about the
// lives of its sessions, so that something outside the manager can keep a copy of each one.
//
// The manager calls on_started() once a session spawned, on_closed() once it finished (exited
// and output closed, its verdict known), and on_removed() when it forgets a session that had
// not finished (it is killed then). A recorder reads output through its own ring
// subscription, never through these calls. Loop thread only; a recorder must not destroy the
// session or the manager from a call.
#pragma once

namespace uexec::session {

class Session;

class SessionRecorder {
 public:
  virtual void on_started(Session& s) = 0;
  virtual void on_closed(Session& s) = 0;
  virtual void on_removed(Session& s) = 0;

 protected:
  ~SessionRecorder() = default;
};

}  // namespace uexec::session
