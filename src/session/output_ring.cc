#include "session/output_ring.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace uexec::session {

std::size_t ReadResult::bytes() const noexcept {
  std::size_t n = 0;
  for (const auto& p : pieces) n += p.bytes.size();
  return n;
}

std::string ReadResult::text() const {
  std::string s;
  s.reserve(bytes());
  for (const auto& p : pieces) s.append(reinterpret_cast<const char*>(p.bytes.data()), p.bytes.size());
  return s;
}

Subscription::~Subscription() {
  if (ring_) ring_->remove(this);
}

OutputRing::OutputRing(std::size_t retain_bytes) : head_(retain_bytes / 2), tail_(retain_bytes - retain_bytes / 2) {}

OutputRing::~OutputRing() {
  for (auto* s : subs_)
    if (s) s->ring_ = nullptr;
}

Offset OutputRing::tail_start() const noexcept {
  if (total_ <= head_) return total_;
  return std::max<Offset>({head_, floor_, total_ > tail_ ? total_ - tail_ : 0});
}

void OutputRing::resume_after_loss(Offset total, std::uint64_t newlines, Seq last_seq) {
  UEXEC_CHECK(total_ == 0 && head_index_.empty() && tail_index_.empty());
  tail_ += head_;
  head_ = 0;
  total_ = floor_ = total;
  newlines_ = newlines;
  tail_page0_ = total / kPageSize;
  if (last_seq > 0 && total > 0) {
    evicted_starts_.push_back(EvictedStart{last_seq, 0});
    evicted_starts_dropped_ = true;  // seqs before it map to the start: all of the loss is their gap
  }
}

RingImage OutputRing::image() const {
  RingImage im;
  im.head_budget = head_;
  im.tail_budget = tail_;
  im.total = total_;
  im.tail_start = tail_start();
  im.newlines = newlines_;
  for (const auto& e : evicted_starts_) im.evicted_starts.emplace_back(e.seq, e.offset);
  im.evicted_starts_dropped = evicted_starts_dropped_;
  im.chunks.reserve(head_index_.size() + tail_index_.size());
  im.bytes.reserve(retained());
  auto add = [&](const base::LazyDeque<Entry>& index, Offset from, Offset to) {
    for (const Entry& e : index) {
      Offset a = std::max<Offset>(e.offset, from), b = std::min<Offset>(e.offset + e.len, to);
      if (a < b) im.chunks.push_back(RingImage::Chunk{e.seq, e.stream, e.at_ms, a, b - a});
    }
    // The region's bytes in one pass, page by page.
    for (Offset at = from; at < to;) {
      const std::byte* p = byte_at(at);
      std::uint64_t rel = at < head_ ? at : at - head_;
      std::uint64_t n = std::min<std::uint64_t>(kPageSize - rel % kPageSize, to - at);
      im.bytes.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
      at += n;
    }
  };
  add(head_index_, 0, head_end());
  add(tail_index_, tail_start(), total_);
  return im;
}

bool OutputRing::restore(const RingImage& im) {
  UEXEC_CHECK(total_ == 0 && head_index_.empty() && tail_index_.empty());
  // It must hold together: chunks in order and contiguous, inside the head or the tail, with
  // a hole only where the middle was evicted; the tail running to the end unless it keeps nothing.
  const Offset head_end = std::min(im.total, im.head_budget);
  if (im.tail_start < head_end || im.tail_start > im.total) return false;
  Offset at = 0;
  std::uint64_t sizes = 0;
  for (const auto& c : im.chunks) {
    const Offset end = c.offset + c.size;
    if (c.size == 0 || end < c.offset || end > im.total) return false;
    if (c.stream != Stream::kPty && c.stream != Stream::kStdout && c.stream != Stream::kStderr) return false;
    sizes += c.size;
    const bool jump = c.offset != at;
    if (c.offset < head_end ? (jump || end > head_end) : (c.offset < im.tail_start || (jump && (at != head_end ||
                                                                                             c.offset != im.tail_start))))
      return false;
    at = end;
  }
  if (at != im.total && !(at == head_end && im.tail_start == im.total)) return false;
  if (sizes != im.bytes.size()) return false;
  // Evicted starts: oldest first, inside what was evicted, at most as many as a ring keeps.
  if (im.evicted_starts.size() > kMaxIndexEntries) return false;
  for (std::size_t i = 0; i < im.evicted_starts.size(); ++i) {
    const auto& [seq, offset] = im.evicted_starts[i];
    if (offset > im.tail_start) return false;
    if (i > 0 && (seq <= im.evicted_starts[i - 1].first || offset < im.evicted_starts[i - 1].second)) return false;
  }
  head_ = im.head_budget;
  tail_ = im.tail_budget;
  const auto* bytes = reinterpret_cast<const std::byte*>(im.bytes.data());
  for (const auto& c : im.chunks) {
    if (c.offset > total_) {  // past the evicted middle: the tail starts here
      total_ = floor_ = c.offset;
      tail_page0_ = (c.offset - head_) / kPageSize;
    }
    append(c.seq, c.stream, std::span(bytes, static_cast<std::size_t>(c.size)), c.at_ms);
    bytes += c.size;
  }
  if (total_ < im.total) {  // everything past the head was evicted
    total_ = floor_ = im.total;
    tail_page0_ = im.total > head_ ? (im.total - head_) / kPageSize : 0;
  }
  newlines_ = im.newlines;
  evicted_starts_ = {};
  for (const auto& [seq, offset] : im.evicted_starts) evicted_starts_.push_back(EvictedStart{seq, offset});
  evicted_starts_dropped_ = im.evicted_starts_dropped;
  return true;
}

OutputRing::Page OutputRing::take_page() {
  if (spare_) return std::move(spare_);
  return Page(new std::byte[kPageSize]);
}

void OutputRing::write_head(Offset off, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    std::size_t page = static_cast<std::size_t>(off / kPageSize);
    std::size_t within = static_cast<std::size_t>(off % kPageSize);
    std::size_t n = std::min(bytes.size(), kPageSize - within);
    if (page == 0 && head0_cap_ < within + n) {
      // The first page grows from 256 bytes: a session that printed a prompt or a line costs
      // a few hundred bytes, not 4 KiB.
      std::size_t cap = std::max<std::size_t>(head0_cap_, 256);
      while (cap < within + n) cap *= 2;
      cap = std::min(cap, kPageSize);
      Page grown(new std::byte[cap]);
      if (!head_pages_.empty()) {
        std::memcpy(grown.get(), head_pages_[0].get(), within);
        head_pages_[0] = std::move(grown);
      } else {
        head_pages_.push_back(std::move(grown));
      }
      head0_cap_ = cap;
    }
    while (head_pages_.size() <= page) head_pages_.push_back(take_page());
    std::memcpy(head_pages_[page].get() + within, bytes.data(), n);
    bytes = bytes.subspan(n);
    off += n;
  }
}

void OutputRing::evict_tail_before(Offset new_tail_start) {
  std::uint64_t first_needed = (new_tail_start - head_) / kPageSize;
  while (!tail_pages_.empty() && tail_page0_ < first_needed) {
    spare_ = std::move(tail_pages_.front());
    tail_pages_.pop_front();
    ++tail_page0_;
  }
  if (tail_pages_.empty()) tail_page0_ = first_needed;
  while (!tail_index_.empty() && tail_index_.front().offset + tail_index_.front().len <= new_tail_start) {
    note_evicted_start(tail_index_.front().seq, tail_index_.front().offset);
    tail_index_.pop_front();
  }
  if (!tail_index_.empty() && tail_index_.front().offset < new_tail_start) {
    Entry& e = tail_index_.front();
    note_evicted_start(e.seq, e.offset);
    e.len -= new_tail_start - e.offset;
    e.offset = new_tail_start;
  }
}

void OutputRing::note_evicted_start(Seq seq, Offset offset) {
  // A chunk cut before (its start noted then) and now evicted whole is noted once.
  if (!evicted_starts_.empty() && evicted_starts_.back().seq == seq) return;
  evicted_starts_.push_back(EvictedStart{seq, offset});
  if (evicted_starts_.size() > kMaxIndexEntries) {
    evicted_starts_.pop_front();
    evicted_starts_dropped_ = true;
  }
}

void OutputRing::write_tail(Offset off, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    std::uint64_t rel = off - head_;
    std::uint64_t page = rel / kPageSize;
    std::size_t within = static_cast<std::size_t>(rel % kPageSize);
    while (tail_page0_ + tail_pages_.size() <= page) tail_pages_.push_back(take_page());
    std::size_t n = std::min(bytes.size(), kPageSize - within);
    std::memcpy(tail_pages_[static_cast<std::size_t>(page - tail_page0_)].get() + within, bytes.data(), n);
    bytes = bytes.subspan(n);
    off += n;
  }
}

void OutputRing::push_entry(base::LazyDeque<Entry>& index, const Entry& e) {
  index.push_back(e);
  if (index.size() <= kMaxIndexEntries) return;
  // Over the cap: merge the two oldest entries (contiguous within one region). O(1).
  Entry a = index.front();
  index.pop_front();
  Entry& b = index.front();
  b.len += b.offset - a.offset;
  b.offset = a.offset;
  b.stream = a.stream;
  b.at_ms = a.at_ms;
}

void OutputRing::append(Seq seq, Stream stream, std::span<const std::byte> bytes, std::uint32_t at_ms) {
  if (bytes.empty()) return;
  // Line numbers stay absolute after eviction: count newlines as they pass.
  for (const std::byte* p = bytes.data(), *end = p + bytes.size();
       (p = static_cast<const std::byte*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)))) != nullptr; ++p)
    ++newlines_;
  Offset off = total_;
  if (off < head_) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), head_ - off));
    write_head(off, bytes.first(n));
    push_entry(head_index_, Entry{seq, off, n, stream, at_ms});
    bytes = bytes.subspan(n);
    off += n;
    total_ = off;
  }
  if (bytes.empty()) return notify();
  Offset end = off + bytes.size();
  total_ = end;
  if (tail_ > 0) {
    Offset keep_from = std::max<Offset>({head_, floor_, end > tail_ ? end - tail_ : 0});
    evict_tail_before(keep_from);
    if (keep_from > off) {  // a chunk longer than the tail budget leaves its last T bytes
      note_evicted_start(seq, off);
      bytes = bytes.subspan(static_cast<std::size_t>(keep_from - off));
      off = keep_from;
    }
    write_tail(off, bytes);
    push_entry(tail_index_, Entry{seq, off, bytes.size(), stream, at_ms});
  }
  notify();
}

void OutputRing::notify() {
  ++notifying_;
  std::size_t n = subs_.size();  // subscribers added during the round wait for the next
  for (std::size_t i = 0; i < n; ++i) {
    if (Subscription* s = subs_[i]) {
      auto fn = s->fn_;  // the callback may destroy its own Subscription
      fn();
    }
  }
  if (--notifying_ == 0 && subs_dirty_) {
    subs_.erase(std::remove(subs_.begin(), subs_.end(), nullptr), subs_.end());
    subs_dirty_ = false;
  }
}

std::unique_ptr<Subscription> OutputRing::subscribe(std::function<void()> fn) {
  std::unique_ptr<Subscription> sub(new Subscription(this, std::move(fn)));
  subs_.push_back(sub.get());
  return sub;
}

std::size_t OutputRing::subscribers() const noexcept {
  return static_cast<std::size_t>(std::count_if(subs_.begin(), subs_.end(), [](auto* s) { return s != nullptr; }));
}

void OutputRing::remove(Subscription* sub) noexcept {
  auto it = std::find(subs_.begin(), subs_.end(), sub);
  if (it == subs_.end()) return;
  if (notifying_ > 0) {
    *it = nullptr;
    subs_dirty_ = true;
  } else {
    subs_.erase(it);
  }
}

const std::byte* OutputRing::byte_at(Offset off) const noexcept {
  if (off < head_) return head_pages_[static_cast<std::size_t>(off / kPageSize)].get() + off % kPageSize;
  std::uint64_t rel = off - head_;
  return tail_pages_[static_cast<std::size_t>(rel / kPageSize - tail_page0_)].get() + rel % kPageSize;
}

void OutputRing::collect(const base::LazyDeque<Entry>& index, Offset from, Offset to, ReadResult& out) const {
  if (from >= to) return;
  // The entry holding `from`: the last one whose offset is <= from.
  auto it = std::upper_bound(index.begin(), index.end(), from,
                             [](Offset o, const Entry& e) { return o < e.offset; });
  if (it != index.begin()) --it;
  for (; it != index.end() && from < to; ++it) {
    Offset e_end = std::min<Offset>(it->offset + it->len, to);
    if (e_end <= from) continue;
    Offset pos = std::max<Offset>(from, it->offset);
    while (pos < e_end) {
      // A piece ends at the entry's end or the page's end, whichever comes first.
      Offset rel = pos < head_ ? pos : pos - head_;
      std::uint64_t room = kPageSize - rel % kPageSize;
      std::uint64_t n = std::min<std::uint64_t>(room, e_end - pos);
      out.pieces.push_back(Piece{it->seq, it->stream, it->at_ms, pos, {byte_at(pos), static_cast<std::size_t>(n)}});
      pos += n;
    }
    from = e_end;
  }
}

ReadResult OutputRing::read_from(Offset cursor, std::size_t max) const {
  ReadResult out;
  cursor = std::min(cursor, total_);
  // Saturating: callers may pass SIZE_MAX for "everything".
  auto limit_from = [&](Offset from) { return max > total_ - from ? total_ : from + max; };
  Offset ts = tail_start();
  if (cursor < head_end()) {
    Offset to = std::min<Offset>(head_end(), limit_from(cursor));
    collect(head_index_, cursor, to, out);
    out.next = to;
    // One read never spans the evicted middle, so `gap` always lies before the pieces.
    if (to < head_end() || ts > head_end()) return out;
    max -= static_cast<std::size_t>(to - cursor);  // the tail part shares the same budget
    cursor = to;
  }
  if (cursor < ts) {
    out.gap = ts - cursor;
    cursor = ts;
  }
  Offset to = limit_from(cursor);
  collect(tail_index_, cursor, to, out);
  out.next = to;
  return out;
}

Offset OutputRing::offset_after_seq(Seq after) const noexcept {
  auto first_after = [after](const auto& index) {
    return std::upper_bound(index.begin(), index.end(), after, [](Seq s, const auto& e) { return s < e.seq; });
  };
  if (auto it = first_after(head_index_); it != head_index_.end()) return it->offset;
  if (auto it = first_after(evicted_starts_); it != evicted_starts_.end()) {
    // Older than every start still known: somewhere in the forgotten part, at most the head's end.
    if (it == evicted_starts_.begin() && evicted_starts_dropped_) return head_end();
    return it->offset;
  }
  auto it = first_after(tail_index_);
  return it == tail_index_.end() ? total_ : it->offset;
}

std::string OutputRing::render() const {
  ReadResult r = read_from(0, head_end());
  std::string s = r.text();
  if (evicted() > 0) s += fmt::format("\n... {} bytes omitted ...\n", evicted());
  ReadResult t = read_from(tail_start(), static_cast<std::size_t>(total_ - tail_start()));
  s += t.text();
  return s;
}

std::size_t OutputRing::memory_bytes() const noexcept {
  std::size_t pages = head_pages_.size() + tail_pages_.size() + (spare_ ? 1 : 0);
  std::size_t short_first = head_pages_.empty() ? 0 : kPageSize - head0_cap_;
  return pages * kPageSize - short_first + (head_index_.size() + tail_index_.size()) * sizeof(Entry) +
         evicted_starts_.size() * sizeof(EvictedStart);
}

}  // namespace uexec::session
