// deny_watch.h: deny-read files that appear after a sandbox started (docs/sandbox.md §3.8).
//
// Codex takes its deny-read globs as a launch-time snapshot: a `.env` written after the
// session started stays readable. uexec watches instead. One DenyReadWatcher per manager
// holds one inotify instance on the loop; each sandboxed session with deny-read entries
// registers its absolute globs and the datagram socket on which its sandbox's init takes
// mask requests (pty/supervisor_protocol.h). The watcher places watches on each glob's
// static prefix (its nearest existing ancestor when missing) and, as deep as the glob can
// reach (bounded by the profile's scan depth), on the subdirectories a glob can still match
// below, following new directories as they appear. A file or directory
// created or moved in that matches a session's glob is sent to that session's init, which
// mounts an empty mode-000 mask over it inside the sandbox: masked within a loop turn of
// the event (the target is 100 ms; docs/benchmarks.md measures it). This covers files the
// sandbox creates itself: the writable roots are bind mounts of the same inodes.
//
// Best effort by nature: a process inside that opens a late file the moment it appears can
// read it before the mask lands (the window is one loop turn); a queue overflow rescans.
// More than 8192 watches refuses the session (kPolicy deny_read_index_unavailable) rather
// than leave it unwatched; watches are dropped when the last watching session ends.
// Loop thread only.
#pragma once

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

  explicit DenyReadWatcher(loop::Loop& loop) : loop_(&loop) {}
  DenyReadWatcher(const DenyReadWatcher&) = delete;
  DenyReadWatcher& operator=(const DenyReadWatcher&) = delete;

  // Watches for `patterns` (absolute globs or paths) on behalf of session `id`; matches are
  // sent as mask requests on `channel`, which must stay open until remove(id).
  [[nodiscard]] base::Result<void> add(const std::string& id, const std::vector<std::string>& patterns,
                                       int channel, int max_depth = 16);
  void remove(const std::string& id);

  std::size_t watches() const noexcept { return dirs_.size(); }
  std::size_t masks_sent() const noexcept { return masks_sent_; }

 private:
  struct Dir {
    std::string path;
    int depth;  // below the pattern base it was placed for
    int limit;  // how deep (in directories) the patterns that wanted it can reach
  };
  struct Entry {
    std::vector<std::string> patterns;
    int channel;
  };

  base::Result<void> ensure_open();
  base::Result<void> watch(const std::string& dir, int depth, int limit, bool scan);
  // Whether some session's glob can match below `dir` (only such directories are watched).
  bool wanted(const std::string& dir) const;
  void offer(const std::string& path, bool is_dir);
  void drain();
  static void on_readable(uv_poll_t* h, int status, int events) noexcept;

  loop::Loop* loop_;
  base::UniqueFd fd_;
  loop::UvHandle<uv_poll_t> poll_;
  std::unordered_map<int, Dir> dirs_;          // by watch descriptor
  std::unordered_map<std::string, int> wds_;   // by path
  std::map<std::string, Entry> sessions_;
  std::size_t masks_sent_ = 0;
};

}  // namespace uexec::session
