// deltas.h: a session's output as a stream of small text pieces while a call waits
// (docs/agent.md §3.6), for MCP progress notifications and exec/outputDelta.
//
// Each piece is valid UTF-8 of at most `max_bytes`, cut at code point boundaries (one code
// point always fits, whatever the limit). A maximal invalid subpart goes alone, as one
// U+FFFD, so the stream moves on in O(1) per byte; a trailing incomplete but valid sequence
// waits for the next bytes, or becomes U+FFFD at close(). After `max_pieces` pieces nothing
// more is emitted for this call (the transcript still has every byte).
// Pure: no libuv, no JSON.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace uexec::agent {

class DeltaSplitter {
 public:
  using Emit = std::function<void(std::string_view piece)>;
  explicit DeltaSplitter(std::size_t max_bytes = 8192, std::size_t max_pieces = 10000) noexcept
      : max_bytes_(max_bytes == 0 ? 1 : max_bytes), max_pieces_(max_pieces) {}

  // Splits `raw` (following whatever came before) and emits the pieces it completes.
  void feed(std::string_view raw, const Emit& emit);
  // The output closed: a held incomplete sequence is emitted as U+FFFD.
  void close(const Emit& emit);
  std::size_t pieces() const noexcept { return pieces_; }
  bool exhausted() const noexcept { return pieces_ >= max_pieces_; }

 private:
  void emit_piece(std::string_view piece, const Emit& emit);

  std::size_t max_bytes_, max_pieces_;
  std::size_t pieces_ = 0;
  std::string hold_;  // an incomplete sequence at the end of the last feed (≤ 3 bytes)
};

}  // namespace uexec::agent
