// missing_watch.h: fs/watchMissing (Codex exec-server 0.169.0; docs/protocol.md §3.11): one
// watch per connection that fires once, with `fs/missingChanged {watchId}`, when any of its
// missing paths (or a missing directory on the way to one) is created, or its `present` path
// is changed, replaced or removed. Codex's CLI uses it to learn when `.agents/skills` or a
// `.git` appears, so it can look for skills again.
//
// The plan (which directory to watch for which name) is made on libuv's thread pool with the
// other fs work (fs_ops.h, `watch_plan`); this class then watches each planned directory with
// inotify (uv_fs_event) and compares each event's name with the planned one: a new file next
// to a missing path, or inside a present directory, does not fire. After it fired it watches
// nothing more; it is dropped when the connection goes or a newer watchId replaces it.
// Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "loop/loop.h"
#include "loop/uv_handle.h"

namespace uexec::rpc {

class MissingWatch {
 public:
  struct Target {
    std::string dir;   // watched for events
    std::string name;  // the entry in it that matters
  };
  // Watches every target; `fired` runs once, on the first event that names a target's entry.
  // An error when a directory cannot be watched (inotify's limits, a directory that went).
  static base::Result<std::unique_ptr<MissingWatch>> start(loop::Loop& loop, const std::vector<Target>& targets,
                                                           std::function<void()> fired);
  MissingWatch(const MissingWatch&) = delete;
  MissingWatch& operator=(const MissingWatch&) = delete;

 private:
  struct Entry {
    loop::UvHandle<uv_fs_event_t> handle;
    std::string name;
    MissingWatch* owner;
  };
  explicit MissingWatch(std::function<void()> fired) : fired_(std::move(fired)) {}
  void on_event(const Entry& e, const char* filename);

  std::vector<std::unique_ptr<Entry>> entries_;
  std::function<void()> fired_;  // empty once it fired
};

}  // namespace uexec::rpc
