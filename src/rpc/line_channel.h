// line_channel.h: newline-delimited JSON over a pair of fds (stdin/stdout) or one accepted
// Unix-socket stream, on the loop.
//
// Input is split into lines (a trailing '\r' is stripped, blank lines are ignored); a line
// longer than `max_line` is discarded up to its newline and reported once through
// on_oversize, and the channel keeps going. Output goes through uv_write on a pipe, socket
// or tty, so a slow client never blocks the loop; `queued_bytes()` tells how much waits.
// A regular file on either side (a test harness redirect) is served with plain reads and
// writes instead, since epoll refuses files.
//
// Reading can be paused (a peer whose replies pile up, docs/protocol.md §7): lines already read
// but not yet handed out wait with the rest, and resume in order on the next loop turn.
//
// Rules: as UvHandle (uv_handle.h). Loop thread only. Callbacks may close the channel.
#pragma once

#include <uv.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "loop/uv_handle.h"

namespace uexec::rpc {

class LineChannel {
 public:
  // stdin/stdout style: two fds (possibly the same).
  LineChannel(loop::Loop& loop, int in_fd, int out_fd, std::size_t max_line = 16u << 20);
  // An accepted stream (a Unix-socket connection) used both ways.
  LineChannel(loop::Loop& loop, loop::UvHandle<uv_pipe_t> stream, std::size_t max_line = 16u << 20);
  ~LineChannel();
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;

  std::function<void(std::string_view line)> on_line;
  std::function<void(std::size_t limit)> on_oversize;
  std::function<void()> on_eof;

  [[nodiscard]] base::Result<void> start();
  // Queues `msg` plus '\n'.
  void send(std::string msg);
  std::size_t queued_bytes() const noexcept { return queued_; }
  // Stops reading for good; queued output is still written.
  void stop_reading();
  // Stops handing out lines (and reading) until resume_reading(); nothing read is lost.
  void pause_reading();
  void resume_reading();
  bool reading_paused() const noexcept { return paused_; }
  // Runs `fn` once everything queued has been written (at once if nothing is queued).
  void when_flushed(std::function<void()> fn);
  // Runs `fn` once the queue is at or below `bytes` (at once if it is).
  void when_below(std::size_t bytes, std::function<void()> fn);
  // The peer's uid for a Unix-socket stream (SO_PEERCRED), or -1.
  int peer_uid() const;

 private:
  struct WriteReq;
  static void on_alloc(uv_handle_t* h, std::size_t suggested, uv_buf_t* buf) noexcept;
  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) noexcept;
  static void on_write(uv_write_t* req, int status) noexcept;
  void start_write(std::string data);
  void feed(const char* data, std::size_t n);
  void handle_eof();
  void pump_file();
  void flushed_check();
  void restart_input();
  void drain_stash();

  loop::Loop& loop_;
  int in_fd_, out_fd_;
  std::size_t max_line_;
  loop::UvHandle<uv_pipe_t> in_pipe_, out_pipe_;
  loop::UvHandle<uv_tty_t> in_tty_, out_tty_;
  uv_stream_t* in_ = nullptr;
  uv_stream_t* out_ = nullptr;
  loop::Timer file_pump_;
  loop::Timer resume_;      // feeds stash_ on the turn after resume_reading()
  std::string buf_;
  std::string stash_;       // input read while paused, not yet split into lines
  bool discarding_ = false;
  bool eof_ = false;
  bool paused_ = false;
  bool stopped_ = false;
  std::size_t queued_ = 0;
  std::string pending_;     // messages waiting for the write in flight: sent as one write
  bool writing_ = false;
  std::function<void()> flushed_;
  std::size_t below_ = 0;
  std::function<void()> below_fn_;
  bool adopted_ = false;
};

}  // namespace uexec::rpc
