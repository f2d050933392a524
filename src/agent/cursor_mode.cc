#include "agent/cursor_mode.h"

#include <cstdint>

namespace uexec::agent {

void CursorKeyMode::scan_text(std::string_view t) {
  for (std::size_t pos = t.find("\x1b[?1"); pos != std::string_view::npos; pos = t.find("\x1b[?1", pos + 1)) {
    if (pos + 4 >= t.size()) break;
    if (t[pos + 4] == 'h') application_ = true;
    else if (t[pos + 4] == 'l') application_ = false;
  }
  if (t.find("\x1b" "c") != std::string_view::npos) application_ = false;  // RIS resets it
}

void CursorKeyMode::scan(const session::OutputRing& ring, session::Offset from) {
  auto r = ring.read_from(from, SIZE_MAX);
  for (const auto& piece : r.pieces) {
    std::string_view v(reinterpret_cast<const char*>(piece.bytes.data()), piece.bytes.size());
    std::string edge = carry_ + std::string(v.substr(0, 4));
    scan_text(edge);
    scan_text(v);
    std::string tail = v.size() >= 4 ? std::string(v.substr(v.size() - 4)) : carry_ + std::string(v);
    carry_ = tail.size() > 4 ? tail.substr(tail.size() - 4) : tail;
  }
}

}  // namespace uexec::agent
