// missing_watch.cc: inotify watches for fs/watchMissing (missing_watch.h).
#include "rpc/missing_watch.h"


namespace uexec::rpc {

base::Result<std::unique_ptr<MissingWatch>> MissingWatch::start(loop::Loop& loop, const std::vector<Target>& targets,
                                                                 std::function<void()> fired) {
  std::unique_ptr<MissingWatch> w(new MissingWatch(std::move(fired)));
  for (const auto& t : targets) {
    auto h = loop::make_handle<uv_fs_event_t>([&](uv_fs_event_t* p) { return uv_fs_event_init(loop.get(), p); },
                                              "uv_fs_event_init");
    if (!h) return std::move(h).error();
    w->entries_.push_back(std::make_unique<Entry>(Entry{std::move(*h), t.name, w.get()}));
    Entry* e = w->entries_.back().get();
    e->handle.get()->data = e;  // the entry is built; UvHandle's close sets it back to null
    auto on_fs_event = [](uv_fs_event_t* handle, const char* filename, int, int status) {
      auto* entry = static_cast<Entry*>(handle->data);
      if (entry && status >= 0) entry->owner->on_event(*entry, filename);
    };
    if (int rc = uv_fs_event_start(e->handle.get(), on_fs_event, t.dir.c_str(), 0); rc < 0)
      return base::Error::uv(rc, "watch " + t.dir);
  }
  return w;
}

void MissingWatch::on_event(const Entry& e, const char* filename) {
  if (!fired_ || !filename || e.name != filename) return;
  auto fired = std::move(fired_);
  fired_ = nullptr;
  for (auto& entry : entries_) uv_fs_event_stop(entry->handle.get());
  fired();  // may not destroy this watch (its owner keeps it until replaced or gone)
}

}  // namespace uexec::rpc
