#include "pty/writable_view.h"

#include <string_view>

namespace uexec::pty {

namespace {

bool within(std::string_view path, std::string_view root) {
  if (root == "/") return true;
  return path.size() >= root.size() && path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

}  // namespace

bool WritableView::forbids(const std::string& path) const {
  if (within(path, "/dev") || within(path, "/proc")) return false;  // the view's own devices
  if (private_tmp && within(path, "/tmp")) return false;
  for (const auto& r : read_only)
    if (within(path, r)) return true;
  if (full_write) return false;
  for (const auto& w : writable)
    if (within(path, w)) return false;
  return true;
}

}  // namespace uexec::pty
