#include "agent/deltas.h"

#include "session/utf8_cut.h"

namespace uexec::agent {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length a lead byte announces (0: not a lead byte).
std::size_t announced(unsigned char b) noexcept {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

}  // namespace

void DeltaSplitter::emit_piece(std::string_view piece, const Emit& emit) {
  if (piece.empty() || exhausted()) return;
  ++pieces_;
  emit(piece);
}

void DeltaSplitter::feed(std::string_view raw, const Emit& emit) {
  if (exhausted() || raw.empty()) return;
  std::string joined;
  if (!hold_.empty()) {  // the held sequence and its continuation, decoded as one
    joined = std::move(hold_);
    hold_.clear();
    joined.append(raw);
    raw = joined;
  }
  const std::size_t tail = session::incomplete_tail(raw);
  const std::size_t end = raw.size() - tail;
  std::size_t start = 0, i = 0;  // the piece being built is raw[start, i)
  while (i < end && !exhausted()) {
    std::size_t len = session::unit_length(raw, i);
    if (i + len > end) len = end - i;
    bool valid = len == announced(static_cast<unsigned char>(raw[i]));
    if (!valid) {
      emit_piece(raw.substr(start, i - start), emit);
      emit_piece(kReplacement, emit);  // a maximal invalid subpart goes alone
      i += len;
      start = i;
      continue;
    }
    if (i + len - start > max_bytes_ && i > start) {
      emit_piece(raw.substr(start, i - start), emit);
      start = i;
    }
    i += len;
  }
  if (!exhausted()) emit_piece(raw.substr(start, i - start), emit);
  if (!exhausted()) hold_.assign(raw.substr(end));
}

void DeltaSplitter::close(const Emit& emit) {
  if (hold_.empty()) return;
  hold_.clear();
  emit_piece(kReplacement, emit);
}

}  // namespace uexec::agent
