#include "term/mode_scanner.h"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

namespace uexec::term {

namespace {

constexpr std::size_t kMaxCsi = 128;  // longer than any CSI the filter lets through

}  // namespace

bool ModeScanner::take_alt_enter() noexcept { return std::exchange(alt_enter_, false); }

bool ModeScanner::take_cursor_restore() noexcept { return std::exchange(cursor_restore_, false); }

void ModeScanner::scan(unsigned char c, int rows) {
  sgr_ended_ = false;
  switch (state_) {
    case State::kGround:
      if (c == 0x1b) {
        state_ = State::kEsc;
        csi_.clear();  // the intermediates of an ESC sequence
      }
      break;
    case State::kEsc:
      if (c == '[') {
        state_ = State::kCsi;
        csi_.clear();
      } else if (c >= 0x20 && c <= 0x2f) {
        csi_ += static_cast<char>(c);  // (the filter lets two through at most)
      } else {
        if (c == 'c' && csi_.empty()) modes_ = Modes{};  // RIS: a full reset
        if (c == '8' && csi_.empty()) cursor_restore_ = true;
        state_ = State::kGround;
      }
      break;
    case State::kCsi:
      if (c >= 0x40 && c <= 0x7e) {
        if (csi_.size() < kMaxCsi) {
          csi_ += static_cast<char>(c);
          csi_done(rows);
        }
        sgr_ended_ = c == 'm' && csi_.find_first_not_of("0123456789;:") == csi_.size() - 1;
        state_ = State::kGround;
      } else if (c >= 0x20 && csi_.size() < kMaxCsi) {
        csi_ += static_cast<char>(c);
      } else if (c >= 0x20) {
        csi_.assign(kMaxCsi, '\0');  // too long to be ours: ignored at its final byte
      }
      break;
  }
}

void ModeScanner::csi_done(int rows) {
  char final = csi_.back();
  std::string_view body(csi_.data(), csi_.size() - 1);
  auto numbers = [](std::string_view s) {
    std::vector<int> out;
    std::size_t pos = 0;
    while (pos <= s.size()) {
      std::size_t semi = s.find(';', pos);
      std::string_view part = s.substr(pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos);
      int v = 0;
      if (!part.empty()) std::from_chars(part.data(), part.data() + part.size(), v);
      out.push_back(v);
      if (semi == std::string_view::npos) break;
      pos = semi + 1;
    }
    return out;
  };
  if (!body.empty() && body[0] == '?' && (final == 'h' || final == 'l')) {
    bool on = final == 'h';
    for (int m : numbers(body.substr(1))) {
      switch (m) {
        case 1: modes_.app_cursor = on; break;
        case 6: modes_.origin = on; break;
        case 7: modes_.autowrap = on; break;
        case 1000:
        case 1002:
        case 1003:
          if (on) modes_.mouse = m;
          else if (modes_.mouse == m) modes_.mouse = 0;
          break;
        case 1004: modes_.focus_events = on; break;
        case 1006: modes_.mouse_sgr = on; break;
        case 2004: modes_.bracketed_paste = on; break;
        case 69: modes_.lr_margins = on; break;
        case 47:
        case 1047:
        case 1049: if (on) alt_enter_ = true; break;
        default: break;
      }
    }
  } else if (final == 'r' && body.find_first_not_of("0123456789;:") == std::string_view::npos &&
             body.find(':') != std::string_view::npos) {
    modes_.top = 1;  // a form libvterm may read but we do not: assume margins (no fast path)
    modes_.bottom = rows;
  } else if (final == 's' && modes_.lr_margins) {
    modes_.top = 1;  // DECSLRM: left/right margins; the fast path stays off
    modes_.bottom = rows;
  } else if (final == 'r' && body.find_first_not_of("0123456789;") == std::string_view::npos) {
    // DECSTBM exactly as libvterm 0.1.4 reads it (state.c): a missing top is 1, a missing
    // bottom the last row, both clamped to the screen; a region of no rows (0 is a value
    // here, not a default) is the full screen again.
    auto n = numbers(body);
    std::size_t semi = body.find(';');
    bool has_top = !body.empty() && semi != 0;
    bool has_bottom = semi != std::string_view::npos && semi + 1 < body.size() && body[semi + 1] != ';';
    int top = std::clamp((has_top ? n[0] : 1) - 1, 0, rows);  // 0-based
    int bottom = has_bottom ? std::min(n[1], rows) : rows;    // exclusive
    if (bottom <= top || (top == 0 && bottom == rows)) {
      modes_.top = modes_.bottom = 0;  // the full screen
    } else {
      modes_.top = top + 1;
      modes_.bottom = bottom;
    }
  } else if (final == 'p' && body == "!") {  // DECSTR, a soft reset (libvterm 0.1 keeps the margins)
    modes_.app_cursor = modes_.origin = false;
    modes_.autowrap = true;
  }
}

}  // namespace uexec::term
