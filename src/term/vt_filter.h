// vt_filter.h: the byte filter in front of libvterm 0.1.4 (term::Screen feeds every byte
// through one).
//
// libvterm 0.1.4 crashes or hangs on some output (fuzz_screen's findings under
// fuzz/regressions/fuzz_screen/). A VtFilter takes the program's bytes as they come, in
// pieces of any size, and gives back only what libvterm can take:
//   - text as well-formed UTF-8, each character whole in one piece, never a C1 control
//     (U+0080-U+009F: dropped) and U+FFFD for ill-formed bytes (one per maximal subpart).
//     A character cut by a C0 control or an escape sequence waits and is completed after
//     it, as libvterm's own decoder would do; printable ASCII interrupts it (U+FFFD); RIS
//     (ESC c) forgets it, as libvterm's decoders are reset;
//   - complete escape sequences and CSIs, in one piece, after the C0 controls inside them
//     (which a terminal executes where they stand). A CSI with more than 16 parameters
//     (libvterm's array), or more than one leader or intermediate byte (which libvterm
//     ignores), is dropped; a parameter above 99999 becomes 99999. An unfinished one waits;
//   - SM/RM and DECSET/DECRST naming several modes as one sequence per mode: libvterm
//     0.1.4 sets only the first, terminals (xterm.js too) set each;
//   - REP (CSI b) only right after a printable ASCII character, the only case where
//     libvterm 0.1.4 knows a previous character of width 1 (otherwise it loops forever);
//   - no strings: OSC, DCS, APC, PM and SOS are swallowed whole. The filter takes the title
//     from OSC 0 and 2 itself (libvterm's string handling loses split strings and prints
//     APC bodies).
//
// Its parser follows libvterm 0.1.4's (parser.c), so the two agree on where a sequence
// starts and ends:
//
//   ground ──ESC──► esc ──'['──► csi leader ─► csi param ─► csi inter ──final──► ground
//                    │  └─final──► ground                      (any other byte: lost)
//                    └─']' 'P' '_' '^' 'X'──► string ──BEL / ESC \──► ground
//
// NUL and DEL are ignored everywhere; CAN and SUB abandon a sequence; ESC starts one
// anywhere (in a string it may be ST); other C0 controls are executed wherever they stand;
// after ESC a byte of 0x80 or more is ignored.
//
// State across calls: the open sequence or string, half a UTF-8 character, the title, and
// whether the last byte libvterm got was a printable ASCII character (REP). What it holds
// back when a call ends (pending(): bounded, none of it executed) is exactly what a repaint
// appends for a viewer to finish. Memory is bounded (kMaxPendingSeq, kMaxTitle). Pure: no
// libvterm, no libuv; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace uexec::term {

class VtFilter {
 public:
  static constexpr std::size_t kMaxTitle = 1024;        // bytes of an OSC 0/2 title kept
  static constexpr std::size_t kMaxPendingSeq = 4096;   // an open sequence kept for pending()

  // Appends to `out` what of `in` may reach libvterm; the rest waits for the next call.
  void filter(std::string_view in, std::string& out);
  // What is held back, as the program wrote it: half a character, then the open sequence or
  // string minus the C0 controls inside it (they ran); a sequence longer than
  // kMaxPendingSeq is not replayed (empty instead).
  std::string pending() const;
  // The last title set by OSC 0 or 2 (control characters dropped, at most kMaxTitle bytes);
  // empty until one came.
  const std::string& title() const noexcept { return title_; }
  // Forgets the last printed character: a REP needs a new one first (after a resize).
  void forget_last_character() noexcept { rep_ok_ = seq_rep_ok_ = false; }

 private:
  // libvterm's parser states, plus the strings it swallows (see the diagram).
  enum class State { kGround, kEsc, kCsiLeader, kCsiParam, kCsiInter, kString, kStringEsc };

  void byte(unsigned char c, std::string& out);
  void utf8(unsigned char c, std::string& out);
  void csi_final(unsigned char c, std::string& out);
  void start_seq();
  void keep_raw(unsigned char c);
  void string_done();
  void drop_partial_char() noexcept;

  State state_ = State::kGround;
  std::string seq_;         // the open ESC sequence or CSI as libvterm will get it (bounded)
  std::string raw_;         // the open sequence or string as the program wrote it, minus C0s
  bool raw_whole_ = true;   // raw_ holds all of it (a huge string is not replayed)
  bool drop_ = false;       // the open sequence is dropped at its final byte
  int seps_ = 0;            // CSI: parameter separators so far
  std::size_t num_at_ = 0;  // CSI: where the current parameter's digits start in seq_
  std::uint32_t num_ = 0;   // and their value, saturated
  bool rep_ok_ = false;     // the last byte libvterm got was a printable ASCII character
  bool seq_rep_ok_ = false; // rep_ok_ when the open sequence began
  std::string u8_;          // a UTF-8 character begun and not finished (not given to libvterm)
  std::size_t u8_need_ = 0; // continuation bytes it still needs
  unsigned char u8_lo_ = 0x80, u8_hi_ = 0xBF;  // the range of the next one (Unicode Table 3-7)
  bool osc_ = false;        // the string being filtered is an OSC
  std::string str_;         // its bytes (bounded)
  std::string title_;
};

}  // namespace uexec::term
