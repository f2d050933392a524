#include "term/vt_filter.h"

#include <algorithm>

namespace uexec::term {

namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

}  // namespace

void VtFilter::filter(std::string_view in, std::string& out) {
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (state_ == State::kGround) {
      // The hot path: a run of printable ASCII goes through as it is.
      std::size_t j = i;
      while (j < n && static_cast<unsigned char>(in[j]) >= 0x20 && static_cast<unsigned char>(in[j]) < 0x7f) ++j;
      if (j > i) {
        if (!u8_.empty()) {  // printable ASCII interrupts a character
          out += kReplacement;
          drop_partial_char();
        }
        out.append(in.substr(i, j - i));
        rep_ok_ = true;
        i = j - 1;
        continue;
      }
    }
    byte(static_cast<unsigned char>(in[i]), out);
  }
}

std::string VtFilter::pending() const {
  // The character began first: within a sequence or a string no byte reaches the decoder.
  std::string out = u8_;
  if (state_ != State::kGround && raw_whole_) out += raw_;
  return out;
}

void VtFilter::drop_partial_char() noexcept {
  u8_.clear();
  u8_need_ = 0;
}

void VtFilter::start_seq() {
  seq_.assign("\x1b");
  raw_.assign("\x1b");
  raw_whole_ = true;
  drop_ = false;
}

void VtFilter::keep_raw(unsigned char c) {
  if (!raw_whole_) return;
  if (raw_.size() >= kMaxPendingSeq) {
    raw_whole_ = false;
    raw_.clear();
    return;
  }
  raw_ += static_cast<char>(c);
}

void VtFilter::byte(unsigned char c, std::string& out) {
  // Bytes with the same meaning in every state.
  if (c == 0x00 || c == 0x7f) return;
  if (c == 0x18 || c == 0x1a) {  // CAN, SUB: the sequence or string is abandoned
    state_ = State::kGround;
    rep_ok_ = false;
    return;
  }
  if (c == 0x1b) {
    if (state_ == State::kString) {
      state_ = State::kStringEsc;
      keep_raw(c);
      return;
    }
    if (state_ == State::kStringEsc) string_done();  // ESC ESC: the string ends
    seq_rep_ok_ = state_ == State::kGround && rep_ok_;
    rep_ok_ = false;
    state_ = State::kEsc;
    start_seq();
    return;
  }
  if (state_ == State::kString || state_ == State::kStringEsc) {
    if (state_ == State::kStringEsc) {  // ST is ESC '\'; any other ESC also ends the string
      string_done();
      state_ = State::kGround;
      if (c == '\\') return;
      state_ = State::kEsc;
      seq_rep_ok_ = false;
      start_seq();
      byte(c, out);
      return;
    }
    if (c == 0x07) {  // BEL ends a string too
      string_done();
      state_ = State::kGround;
      return;
    }
    if (c < 0x20) return;  // C0 controls inside a string: ignored, as xterm does
    if (osc_ && str_.size() <= kMaxTitle + 2) str_ += static_cast<char>(c);
    keep_raw(c);
    return;
  }
  if (c < 0x20) {  // a C0 control: executed now, wherever it stands
    out += static_cast<char>(c);
    rep_ok_ = seq_rep_ok_ = false;
    return;
  }
  switch (state_) {
    case State::kGround:
      rep_ok_ = false;
      utf8(c, out);  // (printable ASCII took the hot path)
      return;
    case State::kEsc: {
      if (c >= 0x80) return;  // ignored; the sequence goes on
      keep_raw(c);
      const bool inter = seq_.size() > 1;  // intermediates so far
      if (c == '[') {
        state_ = State::kCsiLeader;
        seq_.assign("\x1b[");  // libvterm forgets intermediates here
        seps_ = 0;
        num_at_ = seq_.size();
        num_ = 0;
      } else if (c == ']' || c == 'P' || (!inter && (c == '_' || c == '^' || c == 'X'))) {
        state_ = State::kString;  // OSC, DCS, APC, PM, SOS: swallowed
        osc_ = c == ']';
        str_.clear();
      } else if (c >= 0x20 && c <= 0x2f) {  // an intermediate
        if (seq_.size() >= 3) drop_ = true;  // more than two: nobody's
        else seq_ += static_cast<char>(c);
      } else {  // a final byte (0x30-0x7E; 0x40-0x5F alone is a 7-bit C1 control)
        state_ = State::kGround;
        if (drop_) return;
        seq_ += static_cast<char>(c);
        out += seq_;
        if (seq_ == "\x1b" "c") drop_partial_char();  // RIS: libvterm's decoders start again
      }
      return;
    }
    case State::kCsiLeader:
      if (c >= 0x3c && c <= 0x3f) {
        keep_raw(c);
        if (seq_.size() > 2) drop_ = true;  // a second leader byte: libvterm ignores the CSI
        else seq_ += static_cast<char>(c);
        num_at_ = seq_.size();
        return;
      }
      state_ = State::kCsiParam;
      [[fallthrough]];
    case State::kCsiParam:
      if (c >= '0' && c <= '9') {
        keep_raw(c);
        if (drop_) return;
        num_ = std::min<std::uint32_t>(num_ * 10 + (c - '0'), 99999);
        if (seq_.size() - num_at_ < 5) {
          seq_ += static_cast<char>(c);
        } else {  // a sixth digit: the value, saturated at 99999
          seq_.resize(num_at_);
          seq_ += std::to_string(num_);
        }
        return;
      }
      if (c == ';' || c == ':') {
        keep_raw(c);
        // libvterm 0.1.4 has room for 16 parameters and writes past them (CSI_ARGS_MAX).
        if (++seps_ > 15) drop_ = true;
        if (drop_) return;
        seq_ += static_cast<char>(c);
        num_at_ = seq_.size();
        num_ = 0;
        return;
      }
      state_ = State::kCsiInter;
      [[fallthrough]];
    case State::kCsiInter:
      if (c >= 0x20 && c <= 0x2f) {
        keep_raw(c);
        if (seq_.size() > 0 && static_cast<unsigned char>(seq_.back()) >= 0x20 &&
            static_cast<unsigned char>(seq_.back()) <= 0x2f)
          drop_ = true;  // a second intermediate byte: libvterm ignores the CSI
        else if (!drop_)
          seq_ += static_cast<char>(c);
        return;
      }
      state_ = State::kGround;
      if (c >= 0x40 && c <= 0x7e) {
        csi_final(c, out);
        return;
      }
      // Anything else ends the CSI unexecuted and is lost with it (a byte of 0x80 or more too).
      return;
    case State::kString:
    case State::kStringEsc:
      return;  // handled above
  }
}

void VtFilter::csi_final(unsigned char c, std::string& out) {
  if (drop_) return;
  // REP repeats libvterm's last character, looping forever when it knows none of width 1.
  if (c == 'b' && !seq_rep_ok_) return;
  rep_ok_ = c == 'b';  // REP leaves the last character as it was
  // SM/RM and DECSET/DECRST with several modes: libvterm 0.1.4 sets only the first (state.c
  // reads args[0]), terminals set each. One sequence per mode, so libvterm, the screen's
  // mode scanner and a viewer's terminal agree; a missing mode is none.
  std::size_t body = seq_.size() > 2 && seq_[2] == '?' ? 3 : 2;
  if ((c == 'h' || c == 'l') && seq_.find(';', body) != std::string::npos &&
      seq_.find_first_not_of("0123456789:;", body) == std::string::npos) {
    std::string_view params(seq_);
    params.remove_prefix(body);
    while (true) {
      std::size_t semi = params.find(';');
      std::string_view mode = params.substr(0, semi);
      if (!mode.empty()) {
        out.append(seq_, 0, body);
        out += mode;
        out += static_cast<char>(c);
      }
      if (semi == std::string_view::npos) break;
      params.remove_prefix(semi + 1);
    }
    return;
  }
  seq_ += static_cast<char>(c);
  out += seq_;
}

// Text bytes of 0x80 and above: well-formed UTF-8 (Unicode Table 3-7) goes through whole, a
// C1 control is dropped, each maximal ill-formed subpart becomes one U+FFFD.
void VtFilter::utf8(unsigned char c, std::string& out) {
  if (u8_need_ > 0) {
    if (c >= u8_lo_ && c <= u8_hi_) {
      u8_ += static_cast<char>(c);
      u8_lo_ = 0x80;
      u8_hi_ = 0xBF;
      if (--u8_need_ > 0) return;
      bool c1 = u8_.size() == 2 && u8_[0] == '\xc2' && static_cast<unsigned char>(u8_[1]) <= 0x9f;
      if (!c1) out += u8_;
      u8_.clear();
      return;
    }
    out += kReplacement;  // cut short; `c` starts afresh
    drop_partial_char();
  }
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) need = 2, lo = 0xA0;
  else if (c == 0xED) need = 2, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF) need = 2;
  else if (c == 0xF0) need = 3, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else if (c == 0xF4) need = 3, hi = 0x8F;
  if (need == 0) {  // a lone continuation byte, C0/C1 (overlong) or F5-FF
    out += kReplacement;
    return;
  }
  u8_.assign(1, static_cast<char>(c));
  u8_need_ = need;
  u8_lo_ = lo;
  u8_hi_ = hi;
}

// OSC 0 and 2 set the title (bounded; control characters are dropped).
void VtFilter::string_done() {
  if (!osc_) return;
  osc_ = false;
  if (str_.size() < 2 || (str_[0] != '0' && str_[0] != '2') || str_[1] != ';') return;
  title_.clear();
  for (std::size_t i = 2; i < str_.size() && title_.size() < kMaxTitle; ++i)
    if (static_cast<unsigned char>(str_[i]) >= 0x20 && str_[i] != 0x7f) title_ += str_[i];
}

}  // namespace uexec::term
