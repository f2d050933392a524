#include "agent/output_modes.h"

#include <cstdint>

namespace uexec::agent {

void OutputModes::scan_text(std::string_view t) {
  for (std::size_t pos = t.find('\x1b'); pos != std::string_view::npos; pos = t.find('\x1b', pos + 1)) {
    if (pos + 1 < t.size() && t[pos + 1] == 'c') {  // RIS
      application_ = alternate_ = false;
      continue;
    }
    if (t.compare(pos, 3, "\x1b[?") != 0) continue;
    std::size_t i = pos + 3;
    unsigned mode = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9' && mode < 100000) mode = mode * 10 + static_cast<unsigned>(t[i++] - '0');
    if (i >= t.size() || (t[i] != 'h' && t[i] != 'l')) continue;  // another sequence, or cut here
    const bool on = t[i] == 'h';
    if (mode == 1) application_ = on;
    else if (mode == 47 || mode == 1047 || mode == 1049) alternate_ = on;
  }
}

void OutputModes::scan(const session::OutputRing& ring, session::Offset from) {
  auto r = ring.read_from(from, SIZE_MAX);
  for (const auto& piece : r.pieces) {
    std::string_view v(reinterpret_cast<const char*>(piece.bytes.data()), piece.bytes.size());
    // A sequence split across pieces: the carry and this piece's first bytes, then the piece.
    std::string edge = carry_ + std::string(v.substr(0, 7));
    scan_text(edge);
    scan_text(v);
    std::string tail = v.size() >= 7 ? std::string(v.substr(v.size() - 7)) : carry_ + std::string(v);
    carry_ = tail.size() > 7 ? tail.substr(tail.size() - 7) : tail;
  }
}

}  // namespace uexec::agent
