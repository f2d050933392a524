#include "term/cells.h"

#include <algorithm>
#include <unordered_map>

#include <utf8proc.h>

namespace uexec::term {

void put_utf8(std::string& out, std::uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void rtrim(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

// One cell's characters (base + combining) as UTF-8; an empty cell is a space.
void cell_text(std::string& out, const VTermScreenCell& cell) {
  if (cell.chars[0] == 0) {
    out += ' ';
    return;
  }
  for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i] != 0; ++i) put_utf8(out, cell.chars[i]);
}

// The width libvterm gives `cp` when it prints it alone: 0 (its combining table, which is
// not utf8proc's), 1 or 2. Asked of a scratch terminal (one per thread, kept) and
// remembered: how far the cursor moves when `cp` is printed at a fresh position.
int vterm_width(std::uint32_t cp) {
  if (cp < 0x300) return 1;  // below U+0300 nothing is combining or wide
  struct Scratch {
    VTerm* vt = vterm_new(1, 8);
    std::unordered_map<std::uint32_t, int> known;
    Scratch() {
      if (!vt) return;
      vterm_set_utf8(vt, 1);
      vterm_output_set_callback(vt, [](const char*, std::size_t, void*) {}, nullptr);
      vterm_state_reset(vterm_obtain_state(vt), 1);
    }
    ~Scratch() {
      if (vt) vterm_free(vt);
    }
  };
  thread_local Scratch scratch;
  if (auto it = scratch.known.find(cp); it != scratch.known.end()) return it->second;
  if (!scratch.vt) return utf8proc_charwidth(static_cast<utf8proc_int32_t>(cp));
  // 'x' first, so that the character cannot join the previous probe's.
  std::string probe = "\x1b[1;1Hx\x1b[1;4H";
  put_utf8(probe, cp);
  vterm_input_write(scratch.vt, probe.data(), probe.size());
  VTermPos pos;
  vterm_state_get_cursorpos(vterm_obtain_state(scratch.vt), &pos);
  int width = std::clamp(pos.col - 3, 0, 2);
  if (scratch.known.size() < 65536) scratch.known.emplace(cp, width);
  return width;
}

}  // namespace uexec::term
