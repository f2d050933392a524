// screen.h: the server-side terminal model of one tty session (libvterm behind a small API).
//
// A Screen is fed the same bytes as the session's OutputRing and holds what a terminal of
// that size would show: the text grid with colours and attributes, the cursor, the
// alternate screen, the title, and a bounded scrollback of plain lines that scrolled off the
// main screen. It answers three questions:
//
//   lines()/text()  what a person would read: `rows` strings, trailing blanks trimmed, a
//                   wide character once, half of one as a blank (libvterm keeps a left
//                   half whose right half was written over or cut off by a resize; a
//                   terminal shows a blank) (agents get TUIs such as top, less, vim as text)
//   ansi()          the bytes that repaint this state on a *fresh* terminal of the same size
//                   (xterm.js on attach): scrollback first, so it lands in the viewer's
//                   history, then the grid cell by cell with SGR, then the modes a program
//                   set (alternate screen, cursor keys, mouse, bracketed paste, margins,
//                   cursor visibility, title) and the cursor position
//   cursor()/...    the details, for process/snapshot
//
// Every byte passes a filter before libvterm 0.1.4, which crashes or hangs on some output
// (fuzz_screen's findings). The filter is a parser of its own, shaped like libvterm's and
// keeping its state across feeds, and libvterm only ever gets:
//   - text as well-formed UTF-8, each character whole in one write, never a C1 control
//     (U+0080-U+009F: dropped) and U+FFFD for ill-formed bytes (one per maximal subpart).
//     A character cut by a C0 control or an escape sequence waits and is completed after
//     it, as libvterm's own decoder would do; printable ASCII interrupts it (U+FFFD);
//   - complete escape sequences and CSIs, in one piece, after the C0 controls inside them
//     (which a terminal executes where they stand). A CSI with more than 16 parameters
//     (libvterm's array), or more than one leader or intermediate byte (which libvterm
//     ignores), is dropped; a parameter above 99999 becomes 99999. An unfinished one waits;
//   - REP (CSI b) only right after a printable ASCII character, the only case where
//     libvterm 0.1.4 knows a previous character of width 1 (otherwise it loops forever);
//   - no strings: OSC, DCS, APC, PM and SOS are swallowed whole (the filter takes the title
//     from OSC 0/2; libvterm's string handling loses split strings and prints APC bodies).
// What the filter holds back when a feed ends (half a character, an open sequence, bounded)
// is exactly what ansi() appends for a viewer to finish: none of it has been executed.
// After it, two more guards: DECRC (ESC 8) is followed by a clamp when it put the cursor
// outside the screen (a position saved before a shrinking resize), and a resize resets the
// margins and puts the cursor back inside.
// libvterm 0.1 does not report every DEC private mode it follows, so a small scanner beside
// it tracks the ones a repaint must restore, on the filtered bytes.
// Memory is bounded: the grid is rows×cols cells, the scrollback at most `scrollback_lines`
// lines of at most 4 KiB each. Widths are libvterm's (its wcwidth); the tests compare them
// with utf8proc's. Pure: no libuv, no JSON; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/config.h"
#include "base/result.h"

namespace uexec::term {

struct Cursor {
  int row = 0;  // 0-based
  int col = 0;
  bool visible = true;
};

class Screen {
 public:
  static constexpr std::size_t kDefaultScrollback = 1000;  // lines

  // Whether this build has the model (libvterm).
  static bool available() noexcept;
  // kUnsupported when uexec was built without libvterm.
  static base::Result<std::unique_ptr<Screen>> create(base::PtySize size,
                                                      std::size_t scrollback_lines = kDefaultScrollback);
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // Applies output bytes as a terminal would; a UTF-8 sequence may straddle two calls.
  void feed(std::string_view bytes);
  // Resizes the grid (rows and cols 1-1000); libvterm reflows nothing, it crops and pads.
  void resize(base::PtySize size);

  base::PtySize size() const noexcept { return size_; }
  std::vector<std::string> lines() const;  // `rows` lines, trailing blanks trimmed
  // The screen as text: lines() joined by '\n', trailing empty lines dropped.
  std::string text() const;
  Cursor cursor() const;
  bool alt_screen() const noexcept { return alt_screen_; }
  const std::string& title() const noexcept { return title_; }
  bool app_cursor_keys() const noexcept { return modes_.app_cursor; }
  const std::deque<std::string>& scrollback() const noexcept { return scrollback_; }
  // Repaints this state on a fresh terminal of size() (see the essay).
  std::string ansi() const;

  // Internal, for libvterm's callbacks.
  struct Callbacks;

 private:
  // DEC private modes and margins that a repaint restores (the scanner's view).
  struct Modes {
    bool app_cursor = false;      // ?1 DECCKM
    bool origin = false;          // ?6 DECOM
    bool autowrap = true;         // ?7 DECAWM
    bool bracketed_paste = false; // ?2004
    bool focus_events = false;    // ?1004
    bool lr_margins = false;      // ?69 DECLRMM (not repainted; keeps the fast path off)
    int mouse = 0;                // ?1000 / ?1002 / ?1003 (0: off)
    bool mouse_sgr = false;       // ?1006
    int top = 0, bottom = 0;      // DECSTBM, 1-based; 0: the full screen
  };
  enum class ScanState { kGround, kEsc, kCsi };
  // The filter's parser state (libvterm's, plus the strings it swallows).
  enum class FilterState { kGround, kEsc, kCsiLeader, kCsiParam, kCsiInter, kString, kStringEsc };

  Screen(base::PtySize size, std::size_t scrollback_lines);
  // Appends to `out` what of `in` may reach libvterm (the essay's filter).
  void filter(std::string_view in, std::string& out);
  void filter_byte(unsigned char c, std::string& out);
  void filter_utf8(unsigned char c, std::string& out);
  void filter_csi_final(unsigned char c, std::string& out);
  void filter_reset_seq();
  void feed_whole(std::string_view bytes);
  void write_vt(std::string_view bytes);
  void scan_byte(unsigned char c);
  void skip_lines(std::string_view run);
  void csi_done();
  void string_done();
  void push_scrollback(std::string line);
  std::string row_text(int row) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  base::PtySize size_;
  std::size_t scrollback_max_;
  std::deque<std::string> scrollback_;
  std::string title_;
  bool alt_screen_ = false;
  bool cursor_visible_ = true;
  Modes modes_;
  ScanState scan_ = ScanState::kGround;
  std::string csi_;  // parameter and intermediate bytes of the CSI being scanned (bounded)
  // The filter (filter()): all of it persists across feeds.
  FilterState fstate_ = FilterState::kGround;
  std::string fseq_;       // the open ESC sequence or CSI as libvterm will get it (bounded)
  std::string fraw_;       // the open sequence or string as the program wrote it, minus C0s (ansi())
  bool fraw_whole_ = true; // fraw_ holds all of it (a huge string is not replayed)
  bool fdrop_ = false;     // the open sequence is dropped at its final byte
  int fseps_ = 0;          // CSI: parameter separators so far
  std::size_t fnum_at_ = 0;     // CSI: where the current parameter's digits start in fseq_
  std::uint32_t fnum_ = 0;      // and their value, saturated
  bool frep_ok_ = false;   // the last byte libvterm got was a printable ASCII character
  bool fseq_rep_ok_ = false;    // frep_ok_ when the open sequence began
  std::string u8_;         // a UTF-8 character begun and not finished (not given to libvterm)
  std::size_t u8_need_ = 0;     // continuation bytes it still needs
  unsigned char u8_lo_ = 0x80, u8_hi_ = 0xBF;  // the range of the next one (Unicode Table 3-7)
  bool osc_ = false; // the string being filtered is an OSC
  std::string str_;  // its bytes (bounded)
  std::vector<std::size_t> crlf_ends_;  // feed(): where the last rows+2 CRLFs of a run end
  int drop_blank_pushes_ = 0;  // blank rows a skip left, not to be pushed as history
  bool alt_enter_ = false;  // the scanner just saw ?47h, ?1047h or ?1049h
  bool cursor_restore_ = false;  // the scanner just saw DECRC (ESC 8)
  void capture_primary();
};

}  // namespace uexec::term
