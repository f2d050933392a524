#include "term/screen.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "term/mode_scanner.h"
#include "term/vt_filter.h"

#ifdef UEXEC_HAVE_VTERM
#include <vterm.h>

#include "term/cells.h"
#include "term/flood.h"
#include "term/repaint.h"
#endif

namespace uexec::term {

using base::Error;
using base::Result;

namespace {

unsigned short clamp_dim(unsigned short v) { return static_cast<unsigned short>(std::clamp<int>(v, 1, 1000)); }
// libvterm 0.1.4 writes outside the grid for a wide character on a one-column screen.
unsigned short clamp_cols(unsigned short v) { return static_cast<unsigned short>(std::clamp<int>(v, 2, 1000)); }

}  // namespace

// The model behind Screen's API: libvterm and what stands around it (screen.h's essay).
struct Screen::Impl {
  Impl(base::PtySize size, std::size_t scrollback_lines) : size_(size), scrollback_max_(scrollback_lines) {}
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Screen's API (screen.h).
  void feed(std::string_view bytes);
  void resize(base::PtySize size);
  std::string row_text(int row) const;  // one of lines()
  Cursor cursor() const;
  std::string ansi() const;

  // Feeds filtered bytes to libvterm and the scanner, skipping floods and guarding DECRC.
  void feed_whole(std::string_view bytes);
  // Every byte reaches libvterm here, in writes of at most 64 KiB.
  void write_vt(std::string_view bytes);
  // Applies a skipped plain run at once (flood.h) instead of drawing it.
  void skip_lines(std::string_view run);
  // Appends one line to the scrollback, dropping the oldest beyond scrollback_max_.
  void push_scrollback(std::string line);
  // Saves the main screen and cursor before the alternate screen covers them.
  void capture_primary();

#ifdef UEXEC_HAVE_VTERM
  VTerm* vt = nullptr;
  VTermScreen* vs = nullptr;
  // The main screen as it was when the alternate screen was entered (libvterm keeps it
  // but does not expose it), and the cursor then (the one 1049 saves).
  std::vector<VTermScreenCell> primary;
  int primary_rows = 0, primary_cols = 0;
  VTermPos primary_cursor{0, 0};
  // libvterm's screen callbacks; `user` is the Impl.
  static int on_settermprop(VTermProp prop, VTermValue* val, void* user);
  static int on_sb_pushline(int cols, const VTermScreenCell* cells, void* user);
  Pen pen() const;
  VTermScreenCell cell(int row, int col) const {
    VTermScreenCell c;
    std::memset(&c, 0, sizeof c);
    vterm_screen_get_cell(vs, VTermPos{row, col}, &c);
    return c;
  }
#endif
  base::PtySize size_;
  std::size_t scrollback_max_;
  std::deque<std::string> scrollback_;
  bool alt_screen_ = false;
  bool cursor_visible_ = true;
  VtFilter filter_;  // every byte passes it first
  ModeScanner scanner_;  // beside libvterm, on the same bytes
  std::vector<std::size_t> crlf_ends_;  // feed(): where the last rows+2 CRLFs of a run end
  int drop_blank_pushes_ = 0;  // blank rows a skip left, not to be pushed as history
};

#ifdef UEXEC_HAVE_VTERM

int Screen::Impl::on_settermprop(VTermProp prop, VTermValue* val, void* user) {
  auto* self = static_cast<Screen::Impl*>(user);
  switch (prop) {
    case VTERM_PROP_ALTSCREEN:
      self->alt_screen_ = val->boolean != 0;
      if (!self->alt_screen_) std::vector<VTermScreenCell>().swap(self->primary);  // needed no more
      break;
    case VTERM_PROP_CURSORVISIBLE:
      self->cursor_visible_ = val->boolean != 0;
      break;
    // VTERM_PROP_TITLE: libvterm 0.1 loses an OSC split across two writes; the filter keeps it.
    default:
      break;
  }
  return 1;
}

int Screen::Impl::on_sb_pushline(int cols, const VTermScreenCell* cells, void* user) {
  auto* self = static_cast<Screen::Impl*>(user);
  std::string line;
  row_chars(line, cols, [cells](int c) { return cells[c]; }, kMaxScrollbackLine);
  rtrim(line);
  if (self->drop_blank_pushes_ > 0) {
    --self->drop_blank_pushes_;
    if (line.empty()) return 1;
  }
  self->push_scrollback(std::move(line));
  return 1;
}

namespace {

void discard_output(const char*, std::size_t, void*) {}  // answers to DA/DSR: the real terminal's job

}  // namespace

bool Screen::available() noexcept { return true; }

Result<std::unique_ptr<Screen>> Screen::create(base::PtySize size, std::size_t scrollback_lines) {
  auto impl = std::make_unique<Impl>(base::PtySize{clamp_dim(size.rows), clamp_cols(size.cols)}, scrollback_lines);
  static const VTermScreenCallbacks kCallbacks = {
      nullptr, nullptr, nullptr, &Impl::on_settermprop, nullptr, nullptr, &Impl::on_sb_pushline, nullptr};
  impl->vt = vterm_new(impl->size_.rows, impl->size_.cols);
  if (!impl->vt) return Error{base::Errc::kSystem, ENOMEM, "vterm_new"};
  vterm_set_utf8(impl->vt, 1);
  vterm_output_set_callback(impl->vt, &discard_output, nullptr);
  impl->vs = vterm_obtain_screen(impl->vt);
  vterm_screen_enable_altscreen(impl->vs, 1);
  vterm_screen_set_callbacks(impl->vs, &kCallbacks, impl.get());
  vterm_screen_set_damage_merge(impl->vs, VTERM_DAMAGE_SCROLL);
  vterm_screen_reset(impl->vs, 1);
  return std::unique_ptr<Screen>(new Screen(std::move(impl)));
}

Screen::Impl::~Impl() {
  if (vt) vterm_free(vt);
}

// Every byte reaches libvterm here, after the VtFilter. Writes are cut into pieces of at most
// 64 KiB at a line or character boundary: libvterm's stack use grows with the size of one
// write.
void Screen::Impl::write_vt(std::string_view b) {
  constexpr std::size_t kMaxWrite = 64 * 1024;
  while (!b.empty()) {
    std::size_t n = b.size();
    if (n > kMaxWrite) {
      std::size_t nl = b.rfind('\n', kMaxWrite - 1);
      n = nl != std::string_view::npos && nl >= kMaxWrite / 2 ? nl + 1 : kMaxWrite;
      while (n > 1 && (static_cast<unsigned char>(b[n]) & 0xC0) == 0x80) --n;  // not inside a character
    }
    vterm_input_write(vt, b.data(), n);
    b.remove_prefix(n);
  }
}

void Screen::Impl::feed(std::string_view bytes) {
  std::string clean;
  clean.reserve(bytes.size() + 8);
  filter_.filter(bytes, clean);
  feed_whole(clean);
}

void Screen::Impl::feed_whole(std::string_view b) {
  if (b.empty()) return;
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
  const Modes& modes = scanner_.modes();
  auto fast_ok = [&] { return modes.top == 0 && modes.bottom == 0 && !modes.origin && !modes.lr_margins; };
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
    if (scanner_.state() == ModeScanner::State::kGround && static_cast<unsigned char>(b[i]) >= 0x20) {
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
    const ModeScanner::State before = scanner_.state();
    scanner_.scan(c, size_.rows);
    if (before == ModeScanner::State::kGround) {
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
      if (scanner_.state() == ModeScanner::State::kGround) {
        if (!scanner_.sgr_ended()) close_run(esc);
      } else if (scanner_.state() != ModeScanner::State::kCsi || c < 0x20) {
        close_run(esc);
      }
    }
    if (scanner_.take_alt_enter()) {
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
    if (scanner_.take_cursor_restore()) {
      // libvterm 0.1.4's DECRC puts the saved position back as it is, also one that a
      // resize has since left outside the screen, where the next character is written out
      // of bounds, or one outside the margins in origin mode, which no repaint can address
      // (CSIs that restore it, ?1048l and ?1049l, clamp it, and so does any CSI after).
      // Up to here, then a CSI that libvterm handles by doing nothing but clamping the
      // cursor (an unknown DEC mode: `?0h`), when the cursor is out.
      write_vt(b.substr(fed, i + 1 - fed));
      fed = i + 1;
      VTermPos pos;
      vterm_state_get_cursorpos(vterm_obtain_state(vt), &pos);
      if (modes.origin || pos.row < 0 || pos.row >= size_.rows || pos.col < 0 || pos.col >= size_.cols)
        vterm_input_write(vt, "\x1b[?0h", 5);
    }
  }
  if (active) close_run(scanner_.state() == ModeScanner::State::kGround ? n : esc);
  write_vt(b.substr(fed));
}

void Screen::Impl::capture_primary() {
  primary_rows = size_.rows;
  primary_cols = size_.cols;
  primary.resize(static_cast<std::size_t>(size_.rows) * size_.cols);
  for (int r = 0; r < size_.rows; ++r)
    for (int c = 0; c < size_.cols; ++c) primary[static_cast<std::size_t>(r) * size_.cols + c] = cell(r, c);
  vterm_state_get_cursorpos(vterm_obtain_state(vt), &primary_cursor);
}

// The effect of a plain run that ends with CRLF and holds at least `rows` of them, without
// drawing it: the cursor ends on the bottom row, column 0, every row above it came from
// this text and scrolls away under the `rows + 1` CRLFs drawn next, and the pen is the last
// SGR's. What a person could still scroll back to is kept: the rows above the cursor, then
// the run's lines (SGR removed, a lone CR keeps what follows it, wrapped at the width).
void Screen::Impl::skip_lines(std::string_view run) {
  SkippedRun skipped = read_skipped_run(run, size_.cols, alt_screen_ ? 0 : scrollback_max_);
  if (!alt_screen_ && scrollback_max_ > 0) {
    if (skipped.replaces_history) scrollback_.clear();
    Cursor cur = cursor();
    for (int r = 0; r < cur.row; ++r) push_scrollback(row_text(r));
    for (auto& row : skipped.rows) push_scrollback(std::move(row));
  }
  std::string reset = fmt::format("\x1b[2J\x1b[{};1H", size_.rows);
  vterm_input_write(vt, reset.data(), reset.size());
  write_vt(skipped.pen);
  // The rows this reset blanked scroll away first under the lines drawn next: not history.
  drop_blank_pushes_ = size_.rows - 1;
}

void Screen::Impl::resize(base::PtySize size) {
  base::PtySize s{clamp_dim(size.rows), clamp_cols(size.cols)};
  if (s == size_) return;
  size_ = s;
  vterm_set_size(vt, s.rows, s.cols);
  // Terminals (xterm.js too) reset the margins on a resize; libvterm 0.1 keeps them, and a
  // kept region (or cursor) outside the new screen crashes it. Reset them and put the
  // cursor back inside the screen.
  VTermPos pos;
  vterm_state_get_cursorpos(vterm_obtain_state(vt), &pos);
  std::string fix = fmt::format("\x1b[r\x1b[{};{}H", std::clamp(pos.row, 0, s.rows - 1) + 1, std::clamp(pos.col, 0, s.cols - 1) + 1);
  vterm_input_write(vt, fix.data(), fix.size());
  scanner_.reset_margins();
  filter_.forget_last_character();  // a REP from now on needs a character first
}

std::string Screen::Impl::row_text(int row) const {
  std::string line;
  row_chars(line, size_.cols, [this, row](int c) { return cell(row, c); }, std::string::npos);
  rtrim(line);
  return line;
}

Cursor Screen::Impl::cursor() const {
  VTermPos pos;
  vterm_state_get_cursorpos(vterm_obtain_state(vt), &pos);
  return {pos.row, pos.col, cursor_visible_};
}

std::string Screen::Impl::ansi() const {
  const std::string pending = filter_.pending();
  auto at = [this](int r, int c) { return cell(r, c); };
  RepaintView view{.size = size_,
                   .scrollback = scrollback_,
                   .grid = {size_.rows, size_.cols, at},
                   .alt_screen = alt_screen_,
                   .main_screen = nullptr,
                   .main_cursor = {primary_cursor.row, primary_cursor.col},
                   .pen = pen(),
                   .modes = scanner_.modes(),
                   .title = filter_.title(),
                   .cursor = cursor(),
                   .pending = pending};
  Grid main;
  if (alt_screen_ && !primary.empty()) {
    main = {std::min<int>(size_.rows, primary_rows), std::min<int>(size_.cols, primary_cols),
            [this](int r, int c) { return primary[static_cast<std::size_t>(r) * primary_cols + c]; }};
    view.main_screen = &main;
  }
  return repaint(view);
}

// The pen libvterm writes with now (the last SGR's).
Pen Screen::Impl::pen() const {
  VTermState* st = vterm_obtain_state(vt);
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
  return cur;
}

#else  // no libvterm: the feature is off and says so

bool Screen::available() noexcept { return false; }

Result<std::unique_ptr<Screen>> Screen::create(base::PtySize, std::size_t) {
  return Error{base::Errc::kUnsupported, 0, "the screen model needs libvterm, and this uexec was built without it"};
}
Screen::Impl::~Impl() = default;
void Screen::Impl::feed(std::string_view) {}
void Screen::Impl::resize(base::PtySize) {}
std::string Screen::Impl::row_text(int) const { return {}; }
Cursor Screen::Impl::cursor() const { return {}; }
std::string Screen::Impl::ansi() const { return {}; }

#endif

Screen::Screen(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Screen::~Screen() = default;

void Screen::feed(std::string_view bytes) { impl_->feed(bytes); }
void Screen::resize(base::PtySize size) { impl_->resize(size); }
base::PtySize Screen::size() const noexcept { return impl_->size_; }
Cursor Screen::cursor() const { return impl_->cursor(); }
bool Screen::alt_screen() const noexcept { return impl_->alt_screen_; }
const std::string& Screen::title() const noexcept { return impl_->filter_.title(); }
bool Screen::app_cursor_keys() const noexcept { return impl_->scanner_.modes().app_cursor; }
const std::deque<std::string>& Screen::scrollback() const noexcept { return impl_->scrollback_; }
std::string Screen::ansi() const { return impl_->ansi(); }

std::vector<std::string> Screen::lines() const {
  std::vector<std::string> out;
  out.reserve(impl_->size_.rows);
  for (int r = 0; r < impl_->size_.rows; ++r) out.push_back(impl_->row_text(r));
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

void Screen::Impl::push_scrollback(std::string line) {
  if (scrollback_max_ == 0) return;
  if (scrollback_.size() >= scrollback_max_) scrollback_.pop_front();
  scrollback_.push_back(std::move(line));
}

}  // namespace uexec::term
