#include "term/screen.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <utf8proc.h>

#ifdef UEXEC_HAVE_VTERM
#include <vterm.h>
#endif

namespace uexec::term {

using base::Error;
using base::Result;

namespace {

constexpr std::size_t kMaxScrollbackLine = 4096;  // bytes kept of one scrolled-off line
constexpr std::size_t kMaxCsi = 64;               // longer CSI sequences are not ours
constexpr std::size_t kMaxTitle = 1024;
constexpr std::size_t kMaxPendingSeq = 4096;  // an unfinished sequence kept for ansi()

unsigned short clamp_dim(unsigned short v) { return static_cast<unsigned short>(std::clamp<int>(v, 1, 1000)); }
// libvterm 0.1.4 writes outside the grid for a wide character on a one-column screen.
unsigned short clamp_cols(unsigned short v) { return static_cast<unsigned short>(std::clamp<int>(v, 2, 1000)); }

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

// Length (0-3) of a trailing, valid but incomplete UTF-8 sequence.
std::size_t incomplete_utf8_tail(std::string_view s) {
  for (std::size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    auto c = static_cast<unsigned char>(s[s.size() - k]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    std::size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    return need > k ? k : 0;
  }
  return 0;
}

void rtrim(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

}  // namespace

#ifdef UEXEC_HAVE_VTERM

namespace {

constexpr std::uint32_t kWideContinuation = 0xFFFFFFFFu;  // libvterm's cell right of a wide one

// One cell's characters (base + combining) as UTF-8; an empty cell is a space.
void cell_text(std::string& out, const VTermScreenCell& cell) {
  if (cell.chars[0] == 0) {
    out += ' ';
    return;
  }
  for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i] != 0; ++i) put_utf8(out, cell.chars[i]);
}

// The pen of a cell, compared and rendered as one SGR.
struct Pen {
  VTermScreenCellAttrs attrs{};
  VTermColor fg{}, bg{};
};

bool same_color(const VTermColor& a, const VTermColor& b) {
  if (VTERM_COLOR_IS_DEFAULT_FG(&a) != VTERM_COLOR_IS_DEFAULT_FG(&b)) return false;
  if (VTERM_COLOR_IS_DEFAULT_BG(&a) != VTERM_COLOR_IS_DEFAULT_BG(&b)) return false;
  if (VTERM_COLOR_IS_DEFAULT_FG(&a) || VTERM_COLOR_IS_DEFAULT_BG(&a)) return true;
  if (VTERM_COLOR_IS_INDEXED(&a) != VTERM_COLOR_IS_INDEXED(&b)) return false;
  if (VTERM_COLOR_IS_INDEXED(&a)) return a.indexed.idx == b.indexed.idx;
  return a.rgb.red == b.rgb.red && a.rgb.green == b.rgb.green && a.rgb.blue == b.rgb.blue;
}

bool same_pen(const Pen& a, const Pen& b) {
  return a.attrs.bold == b.attrs.bold && a.attrs.underline == b.attrs.underline && a.attrs.italic == b.attrs.italic &&
         a.attrs.blink == b.attrs.blink && a.attrs.reverse == b.attrs.reverse && a.attrs.strike == b.attrs.strike &&
         same_color(a.fg, b.fg) && same_color(a.bg, b.bg);
}

void color_sgr(std::string& out, const VTermColor& c, bool fg) {
  if (VTERM_COLOR_IS_DEFAULT_FG(&c) || VTERM_COLOR_IS_DEFAULT_BG(&c)) return;  // after 0: the default
  if (VTERM_COLOR_IS_INDEXED(&c)) {
    int i = c.indexed.idx;
    if (i < 8) out += fmt::format(";{}", (fg ? 30 : 40) + i);
    else if (i < 16) out += fmt::format(";{}", (fg ? 90 : 100) + i - 8);
    else out += fmt::format(";{};5;{}", fg ? 38 : 48, i);
  } else {
    out += fmt::format(";{};2;{};{};{}", fg ? 38 : 48, c.rgb.red, c.rgb.green, c.rgb.blue);
  }
}

void pen_sgr(std::string& out, const Pen& p) {
  out += "\x1b[0";
  if (p.attrs.bold) out += ";1";
  if (p.attrs.italic) out += ";3";
  if (p.attrs.underline == 1) out += ";4";
  if (p.attrs.underline == 2) out += ";21";
  if (p.attrs.blink) out += ";5";
  if (p.attrs.reverse) out += ";7";
  if (p.attrs.strike) out += ";9";
  color_sgr(out, p.fg, true);
  color_sgr(out, p.bg, false);
  out += 'm';
}

// A cell that a repaint must draw even when it holds no character.
bool visible_blank(const VTermScreenCell& c) {
  return !VTERM_COLOR_IS_DEFAULT_BG(&c.bg) || c.attrs.reverse || c.attrs.underline || c.attrs.strike;
}

}  // namespace

struct Screen::Impl {
  VTerm* vt = nullptr;
  VTermScreen* vs = nullptr;
  // The main screen as it was when the alternate screen was entered (libvterm keeps it
  // but does not expose it), and the cursor then (the one 1049 saves).
  std::vector<VTermScreenCell> primary;
  int primary_rows = 0, primary_cols = 0;
  VTermPos primary_cursor{0, 0};
  ~Impl() {
    if (vt) vterm_free(vt);
  }
  VTermScreenCell cell(int row, int col) const {
    VTermScreenCell c;
    std::memset(&c, 0, sizeof c);
    vterm_screen_get_cell(vs, VTermPos{row, col}, &c);
    return c;
  }
};

struct Screen::Callbacks {
  static int settermprop(VTermProp prop, VTermValue* val, void* user) {
    auto* self = static_cast<Screen*>(user);
    switch (prop) {
      case VTERM_PROP_ALTSCREEN:
        self->alt_screen_ = val->boolean != 0;
        if (!self->alt_screen_) std::vector<VTermScreenCell>().swap(self->impl_->primary);  // needed no more
        break;
      case VTERM_PROP_CURSORVISIBLE:
        self->cursor_visible_ = val->boolean != 0;
        break;
      // VTERM_PROP_TITLE: libvterm 0.1 loses an OSC split across two writes; the scanner keeps it.
      default:
        break;
    }
    return 1;
  }
  static int sb_pushline(int cols, const VTermScreenCell* cells, void* user) {
    auto* self = static_cast<Screen*>(user);
    std::string line;
    for (int c = 0; c < cols && line.size() < kMaxScrollbackLine; ++c) {
      if (cells[c].chars[0] == kWideContinuation) continue;
      cell_text(line, cells[c]);
      if (cells[c].width == 2) ++c;
    }
    rtrim(line);
    if (self->drop_blank_pushes_ > 0) {
      --self->drop_blank_pushes_;
      if (line.empty()) return 1;
    }
    self->push_scrollback(std::move(line));
    return 1;
  }
  static void discard_output(const char*, std::size_t, void*) {}  // answers to DA/DSR: the real terminal's job
};

bool Screen::available() noexcept { return true; }

Result<std::unique_ptr<Screen>> Screen::create(base::PtySize size, std::size_t scrollback_lines) {
  std::unique_ptr<Screen> s(new Screen(size, scrollback_lines));
  if (!s->impl_->vt) return Error{base::Errc::kSystem, ENOMEM, "vterm_new"};
  return s;
}

Screen::Screen(base::PtySize size, std::size_t scrollback_lines)
    : impl_(std::make_unique<Impl>()), size_{clamp_dim(size.rows), clamp_cols(size.cols)}, scrollback_max_(scrollback_lines) {
  static const VTermScreenCallbacks kCallbacks = {
      nullptr, nullptr, nullptr, &Callbacks::settermprop, nullptr, nullptr, &Callbacks::sb_pushline, nullptr};
  impl_->vt = vterm_new(size_.rows, size_.cols);
  if (!impl_->vt) return;
  vterm_set_utf8(impl_->vt, 1);
  vterm_output_set_callback(impl_->vt, &Callbacks::discard_output, nullptr);
  impl_->vs = vterm_obtain_screen(impl_->vt);
  vterm_screen_enable_altscreen(impl_->vs, 1);
  vterm_screen_set_callbacks(impl_->vs, &kCallbacks, this);
  vterm_screen_set_damage_merge(impl_->vs, VTERM_DAMAGE_SCROLL);
  vterm_screen_reset(impl_->vs, 1);
}

Screen::~Screen() = default;

// Every byte a program wrote reaches libvterm here. libvterm 0.1.4 crashes or loops on some
// output (a review's fuzzing: a UTF-8-encoded C1 control under insert mode, REP after a
// combining mark in the DEC graphics set), so those are dropped first: C1 controls in UTF-8
// (which terminals ignore or treat as controls; xterm.js ignores most), and REP right after
// a non-ASCII character. Writes are cut into pieces of at most 64 KiB at a line or
// character boundary: libvterm's stack use grows with the size of one write.
void Screen::write_vt(std::string_view b) {
  constexpr std::size_t kMaxWrite = 64 * 1024;
  std::string clean;
  for (std::size_t i = 0; i + 1 < b.size(); ++i) {
    bool c1 = b[i] == '\xc2' && static_cast<unsigned char>(b[i + 1]) >= 0x80 && static_cast<unsigned char>(b[i + 1]) <= 0x9f;
    bool rep = b[i] == '\x1b' && b[i + 1] == '[' && i > 0 && static_cast<unsigned char>(b[i - 1]) >= 0x80;
    if (!c1 && !rep) continue;
    if (rep) {
      std::size_t j = i + 2;
      while (j < b.size() && b[j] >= '0' && b[j] <= '9') ++j;
      if (j >= b.size() || b[j] != 'b') continue;
      if (clean.empty() && i > 0) clean.reserve(b.size());
      clean.append(b.substr(0, i));
      b = b.substr(j + 1);
    } else {
      clean.append(b.substr(0, i));
      b = b.substr(i + 2);
    }
    i = static_cast<std::size_t>(-1);
  }
  if (!clean.empty()) {
    clean.append(b);
    b = clean;
  }
  while (!b.empty()) {
    std::size_t n = b.size();
    if (n > kMaxWrite) {
      std::size_t nl = b.rfind('\n', kMaxWrite - 1);
      n = nl != std::string_view::npos && nl >= kMaxWrite / 2 ? nl + 1 : kMaxWrite;
      while (n > 1 && (static_cast<unsigned char>(b[n]) & 0xC0) == 0x80) --n;  // not inside a character
    }
    vterm_input_write(impl_->vt, b.data(), n);
    b.remove_prefix(n);
  }
}

void Screen::feed(std::string_view bytes) {
  // libvterm 0.1 turns a UTF-8 sequence split across two writes after text into U+FFFD, and
  // reads split them all the time: an incomplete tail waits for the rest.
  std::string joined;
  if (!utf8_hold_.empty()) {
    joined = utf8_hold_;
    joined.append(bytes);
    utf8_hold_.clear();
    bytes = joined;
  }
  std::size_t hold = incomplete_utf8_tail(bytes);
  utf8_hold_.assign(bytes.substr(bytes.size() - hold));
  feed_whole(bytes.substr(0, bytes.size() - hold));
}

void Screen::feed_whole(std::string_view b) {
  if (b.empty()) return;
  seq_start_ = std::string_view::npos;
  bool captured = false;
  // Walks the bytes once with the mode scanner, finding "plain runs": text, CR, LF, TAB, BS,
  // BEL and SGR sequences, which only draw lines and set the pen. A run with many CRLFs is
  // mostly lines that scroll away before anyone can see them (a flood): those are skipped
  // (skip_lines) instead of being drawn and scrolled one by one, which is what makes
  // libvterm slow (each scroll moves the whole grid).
  const std::size_t n = b.size();
  const std::size_t keep = static_cast<std::size_t>(size_.rows) + 1;  // CRLFs drawn for real
  std::size_t fed = 0;  // b[0, fed) has reached libvterm
  bool active = false;
  std::size_t start = 0, esc = 0, crlfs = 0, first_end = 0;
  crlf_ends_.assign(keep + 1, 0);
  auto fast_ok = [&] { return modes_.top == 0 && modes_.bottom == 0 && !modes_.origin && !modes_.lr_margins; };
  auto close_run = [&](std::size_t end) {
    if (!active) return;
    active = false;
    if (crlfs < 2 * keep) return;
    std::size_t split = crlf_ends_[(crlfs - keep) % crlf_ends_.size()];  // the last `keep` CRLFs are drawn
    if (split <= first_end || split > end) return;
    write_vt(b.substr(fed, first_end - fed));
    skip_lines(b.substr(first_end, split - first_end));
    fed = split;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (scan_ == ScanState::kGround && static_cast<unsigned char>(b[i]) >= 0x20) {
      // The hot path: text. The scanner has nothing to do; a run may start here.
      std::size_t j = i;
      while (j < n && static_cast<unsigned char>(b[j]) >= 0x20) ++j;
      if (!active && fast_ok()) {
        active = true;
        start = i;
        crlfs = 0;
        first_end = 0;
      }
      i = j - 1;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(b[i]);
    const ScanState before = scan_;
    scan_byte(c);
    if (c == 0x1b && scan_ == ScanState::kEsc && before != ScanState::kEsc) seq_start_ = i;
    if (before == ScanState::kGround) {
      bool plain = c >= 0x20 || c == '\r' || c == '\n' || c == '\t' || c == '\b' || c == 0x07 || c == 0x1b;
      if (!plain) {
        close_run(i);
        continue;
      }
      if (!active) {
        if (!fast_ok()) continue;
        active = true;
        start = i;
        crlfs = 0;
        first_end = 0;
      }
      if (c == 0x1b) {
        esc = i;
      } else if (c == '\n' && i > start && b[i - 1] == '\r') {
        ++crlfs;
        if (crlfs == 1) first_end = i + 1;
        crlf_ends_[crlfs % crlf_ends_.size()] = i + 1;
      }
    } else if (active) {
      // Inside an escape sequence that began at `esc`: only a complete SGR keeps the run.
      if (scan_ == ScanState::kGround) {
        bool sgr = before == ScanState::kCsi && c == 'm' &&
                   csi_.find_first_not_of("0123456789;:") == csi_.size() - 1;
        if (!sgr) close_run(esc);
      } else if (scan_ != ScanState::kCsi || c < 0x20) {
        close_run(esc);
      }
    }
    if (alt_enter_) {
      alt_enter_ = false;
      if (!active && !captured) {
        // Up to (not including) the sequence's final byte: libvterm holds the unfinished
        // CSI; what it shows now is the main screen the alternate one is about to cover.
        // Once per feed: a program toggling the alternate screen must not make every
        // toggle copy the grid (the copy costs rows x cols cells).
        write_vt(b.substr(fed, i - fed));
        fed = i;
        if (!alt_screen_) {
          capture_primary();
          captured = true;
        }
      }
    }
  }
  if (active) close_run(scan_ == ScanState::kGround ? n : esc);
  write_vt(b.substr(fed));
  // A sequence still open at the end (a read split it) is kept for ansi(): the viewer must
  // get it too, or it would print its tail as text.
  if (scan_ == ScanState::kGround) {
    pending_seq_.clear();
  } else {
    if (seq_start_ != std::string_view::npos) pending_seq_.assign(b.substr(seq_start_));
    else pending_seq_.append(b);
    if (pending_seq_.size() > kMaxPendingSeq) pending_seq_.clear();  // a huge OSC: dropped
  }
}

void Screen::capture_primary() {
  impl_->primary_rows = size_.rows;
  impl_->primary_cols = size_.cols;
  impl_->primary.resize(static_cast<std::size_t>(size_.rows) * size_.cols);
  for (int r = 0; r < size_.rows; ++r)
    for (int c = 0; c < size_.cols; ++c) impl_->primary[static_cast<std::size_t>(r) * size_.cols + c] = impl_->cell(r, c);
  vterm_state_get_cursorpos(vterm_obtain_state(impl_->vt), &impl_->primary_cursor);
}

// The effect of a plain run that ends with CRLF and holds at least `rows` of them, without
// drawing it: the cursor ends on the bottom row, column 0, every row above it came from
// this text and scrolls away under the `rows + 1` CRLFs drawn next, and the pen is the last
// SGR's. What a person could still scroll back to is kept: the rows above the cursor, then
// the run's lines (SGR removed, a lone CR keeps what follows it, wrapped at the width).
void Screen::skip_lines(std::string_view run) {
  // The pen: the SGRs after the last reset (a run holds no other escape sequence).
  std::string pen;
  std::size_t from = 0;
  for (std::size_t at = run.rfind('\x1b'); at != std::string_view::npos; at = at ? run.rfind('\x1b', at - 1) : std::string_view::npos) {
    std::string_view seq = run.substr(at, run.find('m', at) - at + 1);
    if (seq == "\x1b[m" || seq == "\x1b[0m") {
      from = at;  // the reset itself too: the pen before the run is not the default
      break;
    }
  }
  for (std::size_t at = run.find('\x1b', from); at != std::string_view::npos; at = run.find('\x1b', at + 1))
    pen.append(run.substr(at, run.find('m', at) - at + 1));
  // The text: only the last lines can still be in the scrollback.
  std::size_t text_from = 0;
  if (!alt_screen_ && scrollback_max_ > 0) {
    std::size_t lf = run.size() - 1, wanted = scrollback_max_ + 1;
    while (wanted-- > 0 && lf > 0) {
      std::size_t prev = run.rfind('\n', lf - 1);
      if (prev == std::string_view::npos) {
        lf = 0;
        break;
      }
      lf = prev;
    }
    text_from = lf == 0 ? 0 : lf + 1;
  } else {
    text_from = run.size();
  }
  std::vector<std::string> lines(1);
  for (std::size_t i = text_from; i < run.size(); ++i) {
    // Most lines are plain ASCII that fits: taken whole.
    if (lines.back().empty()) {
      std::size_t j = i;
      while (j < run.size() && run[j] >= 0x20 && run[j] < 0x7f) ++j;
      if (j + 1 < run.size() && run[j] == '\r' && run[j + 1] == '\n' && j - i <= static_cast<std::size_t>(size_.cols)) {
        lines.back().assign(run.substr(i, j - i));
        lines.emplace_back();
        i = j + 1;
        continue;
      }
    }
    char c = run[i];
    if (c == 0x1b) {
      i = run.find('m', i);
    } else if (c == '\r') {
      if (i + 1 < run.size() && run[i + 1] == '\n') {
        lines.emplace_back();
        ++i;
      } else {
        lines.back().clear();
      }
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      // Only valid UTF-8, without C1 controls, reaches the scrollback (and so a repaint).
      utf8proc_int32_t cp = -1;
      auto len = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(run.data() + i),
                                  static_cast<utf8proc_ssize_t>(run.size() - i), &cp);
      if (len < 1) {
        len = 1;
        cp = 0xFFFD;
      }
      if (cp >= 0xA0 && lines.back().size() < kMaxScrollbackLine) put_utf8(lines.back(), static_cast<std::uint32_t>(cp));
      i += static_cast<std::size_t>(len) - 1;
    } else if (c >= 0x20 && c != 0x7f) {
      if (lines.back().size() < kMaxScrollbackLine) lines.back() += c;
    } else if (c == '\t') {
      lines.back() += ' ';
    }
  }
  lines.pop_back();  // the run ends with CRLF
  if (!alt_screen_ && scrollback_max_ > 0) {
    if (text_from > 0 && lines.size() >= scrollback_max_) scrollback_.clear();
    Cursor cur = cursor();
    for (int r = 0; r < cur.row; ++r) push_scrollback(row_text(r));
    // Only the last scrollback_max_ rows can survive; wrapped at the width (utf8proc's widths).
    std::vector<std::string> rows_out;
    for (auto it = lines.rbegin(); it != lines.rend() && rows_out.size() < scrollback_max_; ++it) {
      if (it->size() <= static_cast<std::size_t>(size_.cols) &&
          std::all_of(it->begin(), it->end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x80; })) {
        rtrim(*it);
        rows_out.push_back(std::move(*it));
        continue;
      }
      std::vector<std::string> pieces;
      std::string cur_piece;
      int cols = 0;
      const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(it->data());
      utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(it->size());
      while (left > 0) {
        utf8proc_int32_t cp = *p;
        utf8proc_ssize_t len = 1;
        if (cp >= 0x80) len = utf8proc_iterate(p, left, &cp);
        if (len < 1) break;  // cannot happen: the text was made valid above
        int w = cp < 0x80 ? 1 : utf8proc_charwidth(cp);
        if (w > 0 && cols + w > size_.cols) {
          pieces.push_back(std::move(cur_piece));
          cur_piece.clear();
          cols = 0;
        }
        cols += w;
        cur_piece.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(len));
        p += len;
        left -= len;
      }
      pieces.push_back(std::move(cur_piece));
      for (auto piece = pieces.rbegin(); piece != pieces.rend(); ++piece) {
        rtrim(*piece);
        rows_out.push_back(std::move(*piece));
      }
    }
    for (auto it = rows_out.rbegin(); it != rows_out.rend(); ++it) push_scrollback(std::move(*it));
  }
  std::string reset = fmt::format("\x1b[2J\x1b[{};1H", size_.rows);
  vterm_input_write(impl_->vt, reset.data(), reset.size());
  write_vt(pen);
  // The rows this reset blanked scroll away first under the lines drawn next: not history.
  drop_blank_pushes_ = size_.rows - 1;
}

void Screen::resize(base::PtySize size) {
  base::PtySize s{clamp_dim(size.rows), clamp_cols(size.cols)};
  if (s == size_) return;
  size_ = s;
  vterm_set_size(impl_->vt, s.rows, s.cols);
  // Terminals (xterm.js too) reset the margins on a resize; libvterm 0.1 keeps them, and a
  // kept region (or cursor) outside the new screen crashes it. Reset them and put the
  // cursor back inside the screen.
  VTermPos pos;
  vterm_state_get_cursorpos(vterm_obtain_state(impl_->vt), &pos);
  std::string fix = fmt::format("\x1b[r\x1b[{};{}H", std::clamp(pos.row, 0, s.rows - 1) + 1, std::clamp(pos.col, 0, s.cols - 1) + 1);
  vterm_input_write(impl_->vt, fix.data(), fix.size());
  modes_.top = modes_.bottom = 0;
}

std::string Screen::row_text(int row) const {
  std::string line;
  for (int c = 0; c < size_.cols; ++c) {
    VTermScreenCell cell = impl_->cell(row, c);
    if (cell.chars[0] == kWideContinuation) continue;
    cell_text(line, cell);
    if (cell.width == 2) ++c;
  }
  rtrim(line);
  return line;
}

Cursor Screen::cursor() const {
  VTermPos pos;
  vterm_state_get_cursorpos(vterm_obtain_state(impl_->vt), &pos);
  return {pos.row, pos.col, cursor_visible_};
}

std::string Screen::ansi() const {
  std::string out = "\x1b[0m\x1b[H\x1b[2J";
  // Scrollback first, each line pushed past the top so it lands in the viewer's history.
  if (!scrollback_.empty()) {
    out += "\x1b[?7l";  // a line a little too wide for the viewer is cut, never spread over two rows
    for (const auto& line : scrollback_) {
      out += line;
      out += "\r\n";
    }
    out += "\x1b[?7h";
    out.append(static_cast<std::size_t>(size_.rows - 1), '\n');
    out += "\x1b[H";
  }
  auto paint = [&out](int rows, int cols, auto&& get) {
    Pen pen;
    bool pen_set = false;
    for (int r = 0; r < rows; ++r) {
      int last = -1;
      for (int c = 0; c < cols; ++c) {
        VTermScreenCell cell = get(r, c);
        if ((cell.chars[0] != 0 && cell.chars[0] != kWideContinuation) || visible_blank(cell)) last = c;
      }
      if (last < 0) continue;
      out += fmt::format("\x1b[{};1H", r + 1);
      for (int c = 0; c <= last; ++c) {
        VTermScreenCell cell = get(r, c);
        if (cell.chars[0] == kWideContinuation) continue;
        Pen p{cell.attrs, cell.fg, cell.bg};
        if (!pen_set || !same_pen(p, pen)) {
          pen_sgr(out, p);
          pen = p;
          pen_set = true;
        }
        if (c == cols - 1 && cell.chars[0] != 0 && utf8proc_charwidth(static_cast<utf8proc_int32_t>(cell.chars[0])) == 2)
          out += ' ';  // a wide character cropped into the last column by a resize: it would wrap
        else cell_text(out, cell);
        if (cell.width == 2) ++c;
      }
    }
  };
  if (alt_screen_) {
    // The main screen under the alternate one, and the cursor 1049 saved, so that leaving
    // the alternate screen shows what the model shows.
    if (!impl_->primary.empty()) {
      int rows = std::min<int>(size_.rows, impl_->primary_rows), cols = std::min<int>(size_.cols, impl_->primary_cols);
      paint(rows, cols, [this](int r, int c) { return impl_->primary[static_cast<std::size_t>(r) * impl_->primary_cols + c]; });
      out += fmt::format("\x1b[0m\x1b[{};{}H", std::min<int>(impl_->primary_cursor.row, size_.rows - 1) + 1,
                         std::min<int>(impl_->primary_cursor.col, size_.cols - 1) + 1);
    }
    out += "\x1b[?1049h\x1b[H\x1b[2J";
  }
  paint(size_.rows, size_.cols, [this](int r, int c) { return impl_->cell(r, c); });
  // The program's current pen, so what it writes next keeps its attributes.
  {
    VTermState* st = vterm_obtain_state(impl_->vt);
    VTermValue v;
    Pen cur;
    vterm_state_get_penattr(st, VTERM_ATTR_BOLD, &v), cur.attrs.bold = v.boolean ? 1 : 0;
    vterm_state_get_penattr(st, VTERM_ATTR_UNDERLINE, &v), cur.attrs.underline = static_cast<unsigned>(v.number) & 3u;
    vterm_state_get_penattr(st, VTERM_ATTR_ITALIC, &v), cur.attrs.italic = v.boolean ? 1 : 0;
    vterm_state_get_penattr(st, VTERM_ATTR_BLINK, &v), cur.attrs.blink = v.boolean ? 1 : 0;
    vterm_state_get_penattr(st, VTERM_ATTR_REVERSE, &v), cur.attrs.reverse = v.boolean ? 1 : 0;
    vterm_state_get_penattr(st, VTERM_ATTR_STRIKE, &v), cur.attrs.strike = v.boolean ? 1 : 0;
    vterm_state_get_penattr(st, VTERM_ATTR_FOREGROUND, &v), cur.fg = v.color;
    vterm_state_get_penattr(st, VTERM_ATTR_BACKGROUND, &v), cur.bg = v.color;
    pen_sgr(out, cur);
  }
  // Modes, then the cursor (margins and origin mode change what a cursor address means).
  if (modes_.top || modes_.bottom) out += fmt::format("\x1b[{};{}r", modes_.top ? modes_.top : 1, modes_.bottom ? modes_.bottom : size_.rows);
  if (modes_.app_cursor) out += "\x1b[?1h";
  if (!modes_.autowrap) out += "\x1b[?7l";
  if (modes_.mouse) out += fmt::format("\x1b[?{}h", modes_.mouse);
  if (modes_.mouse_sgr) out += "\x1b[?1006h";
  if (modes_.focus_events) out += "\x1b[?1004h";
  if (modes_.bracketed_paste) out += "\x1b[?2004h";
  if (!title_.empty()) out += "\x1b]2;" + title_ + "\x07";
  Cursor cur = cursor();
  if (modes_.origin) {
    out += "\x1b[?6h";
    int top = modes_.top ? modes_.top : 1;
    out += fmt::format("\x1b[{};{}H", std::max(1, cur.row + 2 - top), cur.col + 1);
  } else {
    out += fmt::format("\x1b[{};{}H", cur.row + 1, cur.col + 1);
  }
  out += cur.visible ? "\x1b[?25h" : "\x1b[?25l";
  // What the program is in the middle of writing (a sequence or a character split by a read).
  out += pending_seq_;
  out += utf8_hold_;
  return out;
}

#else  // no libvterm: the feature is off and says so

struct Screen::Impl {};

bool Screen::available() noexcept { return false; }

Result<std::unique_ptr<Screen>> Screen::create(base::PtySize, std::size_t) {
  return Error{base::Errc::kUnsupported, 0, "the screen model needs libvterm, and this uexec was built without it"};
}
Screen::Screen(base::PtySize size, std::size_t n) : size_(size), scrollback_max_(n) {}
Screen::~Screen() = default;
void Screen::feed(std::string_view) {}
void Screen::resize(base::PtySize) {}
std::string Screen::row_text(int) const { return {}; }
Cursor Screen::cursor() const { return {}; }
std::string Screen::ansi() const { return {}; }

#endif

std::vector<std::string> Screen::lines() const {
  std::vector<std::string> out;
  out.reserve(size_.rows);
  for (int r = 0; r < size_.rows; ++r) out.push_back(row_text(r));
  return out;
}

std::string Screen::text() const {
  auto ls = lines();
  while (!ls.empty() && ls.back().empty()) ls.pop_back();
  std::string out;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    if (i) out += '\n';
    out += ls[i];
  }
  return out;
}

void Screen::push_scrollback(std::string line) {
  if (scrollback_max_ == 0) return;
  if (scrollback_.size() >= scrollback_max_) scrollback_.pop_front();
  scrollback_.push_back(std::move(line));
}

// The mode scanner: ESC, CSI and string (OSC/DCS/APC/PM/SOS) framing, enough to see the
// DEC private modes and margins that libvterm 0.1 keeps to itself.
void Screen::scan(std::string_view bytes) {
  for (unsigned char c : bytes) scan_byte(c);
}

void Screen::scan_byte(unsigned char c) {
  {
    switch (scan_) {
      case ScanState::kGround:
        if (c == 0x1b) scan_ = ScanState::kEsc;
        break;
      case ScanState::kEsc:
        if (c == '[') {
          scan_ = ScanState::kCsi;
          csi_.clear();
        } else if (c == ']' || c == 'P' || c == '_' || c == '^' || c == 'X') {
          scan_ = ScanState::kString;
          osc_ = c == ']';
          str_.clear();
        } else if (c == 'c') {  // RIS: a full reset
          modes_ = Modes{};
          scan_ = ScanState::kGround;
        } else if (c == 0x1b || (c >= 0x20 && c <= 0x2f)) {
          // another ESC restarts; intermediates (charset designations) wait for their final
        } else {
          scan_ = ScanState::kGround;
        }
        break;
      case ScanState::kCsi:
        if (c >= 0x40 && c <= 0x7e) {
          if (csi_.size() < kMaxCsi) {
            csi_ += static_cast<char>(c);
            csi_done();
          }
          scan_ = ScanState::kGround;
        } else if (c == 0x1b) {
          scan_ = ScanState::kEsc;  // an aborted sequence
        } else if (c == 0x18 || c == 0x1a) {
          scan_ = ScanState::kGround;  // CAN, SUB cancel
        } else if (c >= 0x20 && csi_.size() < kMaxCsi) {
          csi_ += static_cast<char>(c);
        } else if (c >= 0x20) {
          csi_.assign(kMaxCsi, '\0');  // too long to be ours: ignored at its final byte
        }
        break;
      case ScanState::kString:
        if (c == 0x07) {
          string_done();
          scan_ = ScanState::kGround;
        } else if (c == 0x18 || c == 0x1a) {
          scan_ = ScanState::kGround;
        } else if (c == 0x1b) {
          scan_ = ScanState::kStringEsc;
        } else if (osc_ && str_.size() <= kMaxTitle + 2) {
          str_ += static_cast<char>(c);
        }
        break;
      case ScanState::kStringEsc:  // ST is ESC '\'; any other ESC also ends the string
        scan_ = ScanState::kGround;
        string_done();
        if (c != '\\') {
          scan_ = ScanState::kEsc;
          scan_byte(c);
        }
        break;
    }
  }
}

// OSC 0 and 2 set the title (bounded; control characters are dropped).
void Screen::string_done() {
  if (!osc_) return;
  osc_ = false;
  if (str_.size() < 2 || (str_[0] != '0' && str_[0] != '2') || str_[1] != ';') return;
  title_.clear();
  for (std::size_t i = 2; i < str_.size() && title_.size() < kMaxTitle; ++i)
    if (static_cast<unsigned char>(str_[i]) >= 0x20 && str_[i] != 0x7f) title_ += str_[i];
}

void Screen::csi_done() {
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
    modes_.bottom = size_.rows;
  } else if (final == 's' && modes_.lr_margins) {
    modes_.top = 1;  // DECSLRM: left/right margins; the fast path stays off
    modes_.bottom = size_.rows;
  } else if (final == 'r' && body.find_first_not_of("0123456789;") == std::string_view::npos) {
    auto n = numbers(body);
    int top = n.empty() ? 0 : n[0];
    int bottom = n.size() > 1 ? n[1] : 0;
    if (top <= 1 && (bottom == 0 || bottom >= size_.rows)) top = bottom = 0;  // the full screen
    else if (bottom != 0 && bottom <= top) return;  // invalid: terminals ignore it
    modes_.top = top;
    modes_.bottom = bottom;
  } else if (final == 'p' && body == "!") {  // DECSTR, a soft reset (libvterm 0.1 keeps the margins)
    modes_.app_cursor = modes_.origin = false;
    modes_.autowrap = true;
  }
}

}  // namespace uexec::term
