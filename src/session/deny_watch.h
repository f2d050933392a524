// deny_watch.h: deny-read files that appear after a sandbox started (docs/sandbox.md §3.8).
//
// Codex takes its deny-read globs as a launch-time snapshot: a `.env` written after the
// session started stays readable. uexec watches instead. One DenyReadWatcher per manager
// holds one inotify instance on the loop; each sandboxed session with deny-read entries
// registers its absolute globs and the datagram socket on which its sandbox's init takes
// mask requests (pty/supervisor_protocol.h). The watcher places watches on each glob's
// static prefix (its nearest existing ancestor when missing) and, at any depth the glob can
// reach, on the subdirectories a glob can still match below, following new directories as
// they appear and symlinked directories to their real directory (watched once, by real
// path). A file or directory created or moved in that matches a session's glob, by the
// path the command names it with, is sent to that session's init by its real path, and init
// mounts an empty mode-000 mask over it inside the sandbox: masked within a loop turn of
// the event (the target is 100 ms; docs/benchmarks.md measures it). This covers files the
// sandbox creates itself: the writable roots are bind mounts of the same inodes.
//
// What is exact and what is not. The name of a late file is visible inside the sandbox from
// the moment it is created until its mask lands: a process inside that opens it in that
// window keeps its fd: init, finding it still open when the mask lands, stops the sandbox
// and says so ("H" on the channel), and the session is ended (on_uncovered), but what was
// read before the mask landed was read. Everything else fails closed: a directory that cannot be watched
// (more than kMaxWatches, the kernel's max_user_watches, any inotify error) refuses the
// session at start and ends it later (on_uncovered), as does a backlog of more than
// kMaxPendingMasks masks that init has not taken yet; a queue overflow rescans. Watches are
// dropped when the last watching session ends. Loop thread only.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "loop/loop.h"
#include "loop/uv_handle.h"

namespace uexec::session {

class DenyReadWatcher {
 public:
  static constexpr std::size_t kMaxWatches = 8192;
  static constexpr std::size_t kMaxPendingMasks = 4096;  // per session, while its init catches up

  // A session whose globs can no longer be covered (`why` says which directory or mask):
  // the owner must end it. Called from the loop, never from inside add().
  std::function<void(const std::string& id, const std::string& why)> on_uncovered;

  explicit DenyReadWatcher(loop::Loop& loop) : loop_(&loop) {}
  DenyReadWatcher(const DenyReadWatcher&) = delete;
  DenyReadWatcher& operator=(const DenyReadWatcher&) = delete;

  // Watches for `patterns` (absolute globs or paths) on behalf of session `id`; matches are
  // sent as mask requests on `channel`, which must stay open until remove(id).
  [[nodiscard]] base::Result<void> add(const std::string& id, const std::vector<std::string>& patterns,
                                       int channel);
  void remove(const std::string& id);
  // Calls on_uncovered for what the last add() found about other sessions (a mask backlog).
  void report_uncovered();

  std::size_t watches() const noexcept { return dirs_.size(); }
  std::size_t masks_sent() const noexcept { return masks_sent_; }

 private:
  static constexpr int kUnbounded = 1 << 30;  // a `**` glob's reach, in directories
  struct Dir {
    std::string path;  // as the globs name it (through symlinks)
    std::string real;  // what is watched
    int depth;         // below the pattern base it was placed for
    int limit;         // how deep (in directories) the patterns that wanted it can reach
  };
  struct Entry {
    DenyReadWatcher* owner;
    std::string id;
    std::vector<std::string> patterns;
    int channel;
    std::deque<std::string> pending;     // mask requests init's queue had no room for
    loop::UvHandle<uv_poll_t> poll;      // on `channel`: init's reports; writable while `pending`
    bool uncovered = false;              // reported once
  };

  base::Result<void> ensure_open();
  base::Result<void> watch(const std::string& dir, const std::string& real, int depth, int limit, bool scan);
  // Whether some session's glob can match below `dir` (only such directories are watched).
  bool wanted(const std::string& dir) const;
  void offer(const std::string& path, const std::string& real, bool is_dir);
  void send_mask(Entry& e, std::string msg);
  base::Result<void> open_channel(Entry& e);
  void flush(Entry& e);
  void read_reports(Entry& e);
  // Every session that wanted `dir` is no longer covered: reported after the current event.
  void uncover(const std::string& dir, const std::string& why);
  void uncover(Entry& e, const std::string& why);
  void drain();
  static void on_readable(uv_poll_t* h, int status, int events) noexcept;
  static void on_channel(uv_poll_t* h, int status, int events) noexcept;

  loop::Loop* loop_;
  base::UniqueFd fd_;
  loop::UvHandle<uv_poll_t> poll_;
  std::unordered_map<int, Dir> dirs_;          // by watch descriptor
  std::unordered_map<std::string, int> wds_;   // by real path
  std::vector<std::pair<std::string, std::string>> uncovered_;  // (id, why) to report
  std::map<std::string, Entry> sessions_;
  std::size_t masks_sent_ = 0;
};

}  // namespace uexec::session
