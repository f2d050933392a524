#include "pty/file_view.h"

#include <string_view>

namespace uexec::pty {

namespace {

bool within(std::string_view path, std::string_view root) {
  if (root == "/") return true;
  return path.size() >= root.size() && path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

}  // namespace

bool FileView::forbids_write(const std::string& path) const {
  if (within(path, "/dev") || within(path, "/proc")) return false;  // the view's own devices
  if (private_tmp && within(path, "/tmp")) return false;
  for (const auto* list : {&read_only, &unreadable})  // a mask is read-only too
    for (const auto& r : *list)
      if (within(path, r)) return true;
  if (full_write) return false;
  for (const auto& w : writable)
    if (within(path, w)) return false;
  return true;
}

bool FileView::forbids_read(const std::string& path) const {
  if (within(path, "/proc")) return false;  // never resolved (uexec_wn_resolve): not judged
  for (const auto& u : unreadable)
    if (within(path, u)) return true;
  return false;
}

}  // namespace uexec::pty
