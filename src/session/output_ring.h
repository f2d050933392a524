// output_ring.h: everything we keep of one session's output.
//
// The first `head` = floor(retain/2) bytes and the last `tail` = retain - head bytes are kept;
// the middle is counted, not stored (Codex's head+tail retention). Offsets are absolute and
// never go back (tmux's offsets), so an agent poll, an RPC stream and a web terminal each
// keep their own cursor and never steal from each other; a cursor that fell into the
// evicted middle gets a gap report first, never silent loss.
//
//   offset 0          head             tail_start                 total
//   |=== head pages ===|···· evicted ····|====== tail pages ========|
//
// Storage is 4 KiB pages allocated on first use (a silent session holds none; the first page
// grows from 256 bytes, so a prompt costs little), so page memory is bounded by `retain` plus
// two pages whatever the child writes, and the chunk indexes by 2 x kMaxIndexEntries entries
// (32 bytes each) plus kMaxIndexEntries evicted starts (16 bytes each) when chunks are tiny.
// Each read(2) is one chunk
// with the session's seq; a chunk index per region maps offsets back to (seq, stream), and
// is capped (kMaxIndexEntries) by merging its oldest entries, so metadata stays bounded
// too. The cost of the cap: when more than that many chunks are retained in a region, the
// oldest merged entries report the later chunk's seq (and, for pipes, the first one's stream).
//
// A chunk that leaves the tail keeps its (seq, start offset), the newest kMaxIndexEntries of
// them (16 bytes each), so that a reader that names the last seq it saw (process/read's
// afterSeq) gets a cursor exactly where it stopped, and a read from there counts as its gap
// the bytes that reader missed, not everything evicted so far. A reader further behind than
// those entries gets the head's end: its gap then counts at most what was evicted before it
// stopped too (an over-count, never an under-count).
//
// Each chunk also keeps when it was read, in milliseconds after the session started (a
// uint32 in the index entry's padding, so the entry stays 32 bytes: 49 days, then it stays at
// the maximum). Merged entries keep the older time. Recordings (`uexec logs --asciicast`)
// play the output back with these times.
//
// Subscriptions are notifiers: append() and notify() wake each subscriber once; the
// subscriber then reads from its own cursor. A Subscription is RAII and safe whichever of it
// and the ring dies first. Loop thread only; knows nothing of libuv or JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/lazy_deque.h"
#include "pty/pty_process.h"

namespace uexec::session {

using Seq = std::uint64_t;
using Offset = std::uint64_t;
using pty::Stream;

// A contiguous run of retained bytes from one chunk. `bytes` is valid until the next append.
struct Piece {
  Seq seq = 0;
  Stream stream = Stream::kPty;
  std::uint32_t at_ms = 0;  // when its chunk was read, in ms after the session started
  Offset offset = 0;
  std::span<const std::byte> bytes;
};

struct ReadResult {
  std::uint64_t gap = 0;      // evicted bytes skipped before the pieces (a read never spans two)
  Offset next = 0;            // the cursor to read from next time
  std::vector<Piece> pieces;  // in offset order
  std::size_t bytes() const noexcept;
  std::string text() const;   // the pieces' bytes concatenated (the gap is not rendered)
};

// Everything a ring holds, as plain data: what a daemon that hands over for an upgrade
// carries to the next one (holder/carry_file.h), which restores it byte for byte.
struct RingImage {
  struct Chunk {  // one index entry: its retained bytes are the next `size` of `bytes`
    Seq seq = 0;
    Stream stream = Stream::kPty;
    std::uint32_t at_ms = 0;
    Offset offset = 0;
    std::uint64_t size = 0;
  };
  std::uint64_t head_budget = 0, tail_budget = 0;
  Offset total = 0;
  Offset tail_start = 0;  // the first retained offset past the head (the evicted middle's end)
  std::uint64_t newlines = 0;
  std::vector<std::pair<Seq, Offset>> evicted_starts;  // oldest first
  bool evicted_starts_dropped = false;
  std::vector<Chunk> chunks;  // head, then tail, in offset order
  std::string bytes;          // every chunk's bytes, in that order
};

class OutputRing;

class Subscription {
 public:
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

 private:
  friend class OutputRing;
  Subscription(OutputRing* ring, std::function<void()> fn) : ring_(ring), fn_(std::move(fn)) {}
  OutputRing* ring_;
  std::function<void()> fn_;
};

class OutputRing {
 public:
  static constexpr std::size_t kPageSize = 4096;
  static constexpr std::size_t kMaxIndexEntries = 8192;  // per region (head, tail)

  explicit OutputRing(std::size_t retain_bytes);
  ~OutputRing();
  // A fresh ring continues a session whose earlier output is gone (a daemon that died; the
  // holder, holder/holder.h): offsets resume at `total` with `newlines` counted, everything
  // before is the evicted middle (no head: the whole budget is tail), and a reader that saw
  // chunk `last_seq` reads on from `total` with no gap; an older seq maps to 0 (its gap then
  // counts everything lost, an over-count). Only before the first append.
  void resume_after_loss(Offset total, std::uint64_t newlines, Seq last_seq);
  // The ring as plain data, and back: a ring restored from image() reads, maps seqs and
  // reports gaps as this one does, with this one's budgets. restore: only before the first
  // append; false (the ring left empty) for an image that does not hold together.
  RingImage image() const;
  [[nodiscard]] bool restore(const RingImage& image);
  OutputRing(const OutputRing&) = delete;
  OutputRing& operator=(const OutputRing&) = delete;

  // Appends one chunk with its seq, read `at_ms` after the session started; wakes each
  // subscriber once. Empty chunks store nothing.
  void append(Seq seq, Stream stream, std::span<const std::byte> bytes, std::uint32_t at_ms = 0);
  // Wakes each subscriber once (exited, closed and other state changes).
  void notify();

  // Bytes at or after `cursor`, at most `max` (SIZE_MAX: all); `gap` counts evicted bytes
  // skipped before them. A read stops at the end of the head when the middle was evicted.
  ReadResult read_from(Offset cursor, std::size_t max) const;
  // Where the output after chunk `after` starts: the offset of the first byte whose chunk seq
  // is > `after` (total() if none), also when that byte was evicted, so a read from there
  // reports exactly what followed `after` and is gone as its gap. A seq older than the evicted
  // chunks still known (see above) maps to the head's end. A ring that keeps nothing
  // (retain 0) keeps no starts either: every seq maps to total().
  Offset offset_after_seq(Seq after) const noexcept;
  // The retained output as text: head, then "\n... N bytes omitted ...\n" when the middle
  // was evicted, then the tail.
  std::string render() const;

  Offset total() const noexcept { return total_; }         // bytes ever appended
  std::uint64_t newlines() const noexcept { return newlines_; }  // '\n' bytes ever appended
  Offset head_end() const noexcept { return total_ < head_ ? total_ : head_; }
  Offset tail_start() const noexcept;                      // first retained offset past the head
  std::uint64_t evicted() const noexcept { return tail_start() - head_end(); }
  std::size_t retained() const noexcept { return static_cast<std::size_t>(head_end() + total_ - tail_start()); }
  // Heap bytes held by pages and indexes: what the retention costs right now.
  std::size_t memory_bytes() const noexcept;

  // Registers a notifier. It must not destroy the ring; it may drop its own Subscription.
  [[nodiscard]] std::unique_ptr<Subscription> subscribe(std::function<void()> fn);
  std::size_t subscribers() const noexcept;

 private:
  friend class Subscription;
  struct Entry {
    Seq seq;
    Offset offset;
    std::uint64_t len;
    Stream stream;
    std::uint32_t at_ms;
  };
  static_assert(sizeof(Entry) == 32, "the time rides in the padding");
  using Page = std::unique_ptr<std::byte[]>;
  struct EvictedStart {  // a chunk whose first byte was evicted
    Seq seq;
    Offset offset;
  };

  Page take_page();
  void write_head(Offset off, std::span<const std::byte> bytes);
  void write_tail(Offset off, std::span<const std::byte> bytes);
  void evict_tail_before(Offset new_tail_start);
  static void push_entry(base::LazyDeque<Entry>& index, const Entry& e);
  void note_evicted_start(Seq seq, Offset offset);
  void collect(const base::LazyDeque<Entry>& index, Offset from, Offset to, ReadResult& out) const;
  const std::byte* byte_at(Offset off) const noexcept;
  void remove(Subscription* sub) noexcept;

  std::uint64_t head_;   // head budget H
  std::uint64_t tail_;   // tail budget T
  Offset total_ = 0;
  Offset floor_ = 0;  // nothing before it is stored (resume_after_loss)
  std::uint64_t newlines_ = 0;
  std::vector<Page> head_pages_;
  std::size_t head0_cap_ = 0;     // head_pages_[0] grows to kPageSize (see write_head)
  base::LazyDeque<Page> tail_pages_;
  std::uint64_t tail_page0_ = 0;  // page number (counted from offset H) of tail_pages_[0]
  Page spare_;                    // one evicted page kept for reuse: no malloc churn in a flood
  base::LazyDeque<Entry> head_index_, tail_index_;
  base::LazyDeque<EvictedStart> evicted_starts_;  // oldest first, at most kMaxIndexEntries
  bool evicted_starts_dropped_ = false;            // older ones were forgotten
  std::vector<Subscription*> subs_;
  int notifying_ = 0;
  bool subs_dirty_ = false;
};

}  // namespace uexec::session
