// fuzz_ring.cc: session::OutputRing against a model that keeps every byte, plus the agent's
// head+tail body (agent::render_body) over what the ring retained.
//
// The input is a retention budget, then a script of operations (FuzzedDataProvider):
//   append    one chunk: a few literal bytes, or a long synthesized run (each byte a function
//             of its offset, so a misplaced page shows) of up to several retention budgets;
//             seqs strictly increase with holes (exited/closed take seqs too); any stream
//   read      read_from(cursor, max) with any cursor (past the end too) and max (0, small,
//             SIZE_MAX)
//   seq       offset_after_seq(any seq): the first later chunk's start, evicted or not
//   render    render()
//   subs      subscribe / drop / notify: each live subscriber is woken exactly once
//   body      the agent's collect (agent/envelope.h) from any cursor, then
//             render_body with any budget
//
// The model is the whole stream plus its chunk table. Retained = the first floor(R/2) bytes
// and the last R - floor(R/2) bytes; everything the ring reports is checked against it:
// bytes, offsets, gaps, the `next` cursor, seq/stream tags (relaxed once the index may have
// merged entries), totals, newline counts and the memory bound of output_ring.h. The body
// checks: valid UTF-8, ranges inside what was collected, and the cut no larger than the
// budget demands (plus the grapheme windows of utf8_cut.h).
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/envelope.h"
#include "fuzz/body_check.h"
#include "fuzz/fuzz_common.h"
#include "session/output_ring.h"
#include "session/utf8_cut.h"

namespace {

using uexec::session::Offset;
using uexec::session::OutputRing;
using uexec::session::Seq;
using uexec::session::Stream;

constexpr std::size_t kMaxModelBytes = 512u << 10;  // bounds the cost of one input

struct Chunk {
  Seq seq;
  Stream stream;
  Offset off;
  std::uint64_t len;
};

struct Model {
  std::uint64_t head = 0, tail = 0;
  std::string bytes;
  std::vector<Chunk> chunks;  // non-empty chunks only, in offset order
  std::uint64_t newlines = 0;

  Offset total() const { return bytes.size(); }
  Offset head_end() const { return std::min<Offset>(total(), head); }
  Offset tail_start() const {
    if (total() <= head) return total();
    return std::max<Offset>(head, total() > tail ? total() - tail : 0);
  }
  const Chunk& chunk_at(Offset off) const {
    auto it = std::upper_bound(chunks.begin(), chunks.end(), off, [](Offset o, const Chunk& c) { return o < c.off; });
    return *std::prev(it);
  }
  // Could the ring's index have merged entries (more than kMaxIndexEntries chunks in a region)?
  bool merged() const { return chunks.size() > OutputRing::kMaxIndexEntries; }
};

std::string render_model(const Model& m) {
  std::string s = m.bytes.substr(0, m.head_end());
  Offset ts = m.tail_start();
  if (ts > m.head_end()) s += fmt::format("\n... {} bytes omitted ...\n", ts - m.head_end());
  s += m.bytes.substr(ts);
  return s;
}

void check_accessors(const OutputRing& r, const Model& m, std::size_t retain) {
  FUZZ_CHECK("ring-total", r.total() == m.total(), "total {} != model {}", r.total(), m.total());
  FUZZ_CHECK("ring-newlines", r.newlines() == m.newlines, "newlines {} != model {}", r.newlines(), m.newlines);
  FUZZ_CHECK("ring-bounds", r.head_end() == m.head_end() && r.tail_start() == m.tail_start(),
             "head_end {} tail_start {} != model {} {} (total {}, retain {})", r.head_end(), r.tail_start(),
             m.head_end(), m.tail_start(), m.total(), retain);
  FUZZ_CHECK("ring-evicted", r.evicted() == m.tail_start() - m.head_end(), "evicted {} != {}", r.evicted(),
             m.tail_start() - m.head_end());
  FUZZ_CHECK("ring-retained", r.retained() == m.head_end() + m.total() - m.tail_start() && r.retained() <= retain,
             "retained {} (retain {})", r.retained(), retain);
  // output_ring.h: memory is bounded by `retain` plus a few pages, whatever the child writes,
  // and the index by kMaxIndexEntries per region.
  std::size_t bound = retain + 4 * OutputRing::kPageSize + 2 * (OutputRing::kMaxIndexEntries + 1) * 64;
  FUZZ_CHECK("ring-memory-bound", r.memory_bytes() <= bound, "memory_bytes {} > bound {} (retain {})",
             r.memory_bytes(), bound, retain);
}

void check_read(const OutputRing& r, const Model& m, Offset cursor, std::size_t max) {
  auto res = r.read_from(cursor, max);
  Offset c = std::min<Offset>(cursor, m.total());
  Offset he = m.head_end(), ts = m.tail_start(), total = m.total();
  auto cap = [&](Offset from) { return max > total - from ? total : from + max; };
  Offset from = c, end;
  std::uint64_t gap = 0;
  if (c < he) {
    // The contract (output_ring.h): at most `max` bytes; a read stops at the end of the head
    // when the middle was evicted, and otherwise runs on into the tail.
    end = ts > he ? std::min<Offset>(he, cap(c)) : cap(c);
  } else if (c < ts) {
    gap = ts - c;
    from = ts;
    end = cap(ts);
  } else {
    end = cap(c);
  }
  FUZZ_CHECK("ring-read-gap", res.gap == gap, "read_from({}, {}): gap {} != {} (head_end {} tail_start {} total {})",
             cursor, max, res.gap, gap, he, ts, total);
  FUZZ_CHECK("ring-read-max", res.bytes() <= max, "read_from({}, {}) returned {} bytes (head_end {} tail_start {} total {})",
             cursor, max, res.bytes(), he, ts, total);
  FUZZ_CHECK("ring-read-next", res.next == end, "read_from({}, {}): next {} != {} (head_end {} tail_start {} total {})",
             cursor, max, res.next, end, he, ts, total);
  Offset pos = from;
  Seq last_seq = 0;
  for (const auto& p : res.pieces) {
    FUZZ_CHECK("ring-piece", !p.bytes.empty() && p.offset == pos, "piece at {} (len {}), expected offset {}", p.offset,
               p.bytes.size(), pos);
    FUZZ_CHECK("ring-piece-bytes",
               p.offset + p.bytes.size() <= total &&
                   std::string_view(reinterpret_cast<const char*>(p.bytes.data()), p.bytes.size()) ==
                       std::string_view(m.bytes).substr(p.offset, p.bytes.size()),
               "bytes at [{}, {}) differ from what was appended", p.offset, p.offset + p.bytes.size());
    const Chunk& ch = m.chunk_at(p.offset);
    if (!m.merged()) {
      FUZZ_CHECK("ring-piece-tag",
                 p.seq == ch.seq && p.stream == ch.stream && p.offset + p.bytes.size() <= ch.off + ch.len,
                 "piece at {} len {}: seq {} stream {} but chunk [{}, +{}) has seq {} stream {}", p.offset,
                 p.bytes.size(), p.seq, static_cast<int>(p.stream), ch.off, ch.len, ch.seq, static_cast<int>(ch.stream));
    } else {
      // Merged index entries report a later chunk's seq, never an earlier one.
      FUZZ_CHECK("ring-piece-tag", p.seq >= ch.seq, "piece at {}: seq {} below its chunk's {}", p.offset, p.seq, ch.seq);
    }
    FUZZ_CHECK("ring-piece-order", p.seq >= last_seq, "piece seqs go back: {} after {}", p.seq, last_seq);
    last_seq = p.seq;
    pos += p.bytes.size();
  }
  // The pieces cover [from, next) exactly: a byte skipped here is lost to this reader.
  FUZZ_CHECK("ring-read-cover", pos == res.next, "read_from({}, {}): pieces end at {} but next is {}", cursor, max, pos,
             res.next);
  FUZZ_CHECK("ring-read-text", res.text().size() == res.bytes(), "text() {} != bytes() {}", res.text().size(),
             res.bytes());
}

void check_after_seq(const OutputRing& r, const Model& m, Seq after) {
  Offset got = r.offset_after_seq(after);
  Offset he = m.head_end(), total = m.total();
  // output_ring.h: the start of the first chunk with a seq above `after`, evicted or not, so
  // that a read from there counts what followed `after` and is gone as its gap; a seq older
  // than the evicted starts the ring still knows maps to the head's end (an over-count).
  FUZZ_CHECK("ring-after-seq-range", got <= total, "offset_after_seq({}) = {} is past the end {}", after, got, total);
  if (m.merged()) {
    // Merged entries report a later chunk's seq and forgotten starts the head's end: never a
    // position past the exact one inside the head.
    return;
  }
  Offset want = total;
  for (const auto& c : m.chunks) {
    if (m.tail == 0) break;  // a ring that keeps nothing (retain 0) keeps no starts: the end
    if (c.seq > after) {
      want = c.off;
      break;
    }
  }
  FUZZ_CHECK("ring-after-seq", got == want, "offset_after_seq({}) = {}, expected {} (head_end {} tail_start {} total {})",
             after, got, want, he, m.tail_start(), total);
}

void check_collect(const OutputRing& r, const Model& m, Offset from, bool hold, std::size_t budget, long bpt, bool ext) {
  auto c = uexec::agent::collect(r, from, hold);
  // What was collected is exactly what the model retained from `from` on.
  Offset s = std::min<Offset>(from, m.total()), he = m.head_end(), ts = m.tail_start();
  std::string want;
  std::uint64_t want_gap = 0;
  if (s < he) want += m.bytes.substr(s, he - s);
  if (std::max(s, he) < ts) want_gap = ts - std::max(s, he);
  want += m.bytes.substr(std::max(s, ts));
  FUZZ_CHECK("ring-collect-gap", c.gap == want_gap, "collect from {}: gap {} != {}", from, c.gap, want_gap);
  std::size_t held = want.size() - c.raw.size();
  FUZZ_CHECK("ring-collect-bytes", c.raw.size() <= want.size() && held <= 3 && want.compare(0, c.raw.size(), c.raw) == 0,
             "collect from {}: {} bytes, model retained {}", from, c.raw.size(), want.size());
  FUZZ_CHECK("ring-collect-end", c.end + held == m.total(), "collect end {} + held {} != total {}", c.end, held, m.total());

  uexec::fuzz::check_body(c, budget, bpt, ext);
}

struct Notifier {
  std::unique_ptr<uexec::session::Subscription> sub;
  int woken = 0;
  bool drop_self = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  std::size_t retain;
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: retain = in.ConsumeIntegralInRange<std::size_t>(0, 8); break;
    case 1: retain = in.ConsumeIntegralInRange<std::size_t>(0, 300); break;
    case 2: retain = 2 * OutputRing::kPageSize - 4 + in.ConsumeIntegralInRange<std::size_t>(0, 8); break;
    default: retain = in.ConsumeIntegralInRange<std::size_t>(0, 6 * OutputRing::kPageSize); break;
  }
  OutputRing ring(retain);
  Model m;
  m.head = retain / 2;
  m.tail = retain - retain / 2;
  Seq seq = 0;
  std::vector<std::unique_ptr<Notifier>> subs;

  for (int ops = 0; ops < 4000 && in.remaining_bytes() > 0; ++ops) {
    switch (in.ConsumeIntegralInRange<int>(0, 9)) {
      case 0:
      case 1:
      case 2: {  // append
        std::string chunk;
        if (in.ConsumeBool()) {
          chunk = in.ConsumeBytesAsString(in.ConsumeIntegralInRange<std::size_t>(0, 64));
        } else {
          std::size_t len = in.ConsumeIntegralInRange<std::size_t>(0, 2 * retain + 9000);
          len = std::min(len, kMaxModelBytes - std::min(kMaxModelBytes, m.bytes.size()));
          auto salt = in.ConsumeIntegral<std::uint8_t>();
          bool lines = in.ConsumeBool();
          chunk.resize(len);
          for (std::size_t i = 0; i < len; ++i) {
            Offset o = m.bytes.size() + i;
            chunk[i] = lines && o % 61 == 60 ? '\n' : static_cast<char>((o * 131 + salt) & 0xFF);
          }
        }
        seq += 1 + in.ConsumeIntegralInRange<Seq>(0, 2);
        auto stream = static_cast<Stream>(in.ConsumeIntegralInRange<int>(0, 2));
        for (auto& n : subs) n->woken = 0;
        ring.append(seq, stream, std::as_bytes(std::span(chunk.data(), chunk.size())));
        if (!chunk.empty()) {
          m.chunks.push_back({seq, stream, m.bytes.size(), chunk.size()});
          m.bytes += chunk;
          m.newlines += static_cast<std::uint64_t>(std::count(chunk.begin(), chunk.end(), '\n'));
          for (auto& n : subs)
            FUZZ_CHECK("ring-wake-once", n->woken == 1 || (n->drop_self && n->woken <= 1),
                       "a subscriber was woken {} times by one append", n->woken);
        }
        std::erase_if(subs, [](const auto& n) { return n->drop_self && !n->sub; });
        break;
      }
      case 3:
      case 4: {  // read
        Offset cursor;
        switch (in.ConsumeIntegralInRange<int>(0, 3)) {
          case 0: cursor = m.head_end(); break;
          case 1: cursor = m.tail_start(); break;
          default: cursor = in.ConsumeIntegralInRange<Offset>(0, m.total() + 16); break;
        }
        std::size_t max;
        switch (in.ConsumeIntegralInRange<int>(0, 3)) {
          case 0: max = SIZE_MAX; break;
          case 1: max = 0; break;
          default: max = in.ConsumeIntegralInRange<std::size_t>(1, retain + 64); break;
        }
        check_read(ring, m, cursor, max);
        break;
      }
      case 5:
        check_after_seq(ring, m, in.ConsumeIntegralInRange<Seq>(0, seq + 2));
        break;
      case 6: {
        std::string got = ring.render(), want = render_model(m);
        FUZZ_CHECK("ring-render", got == want,
                   "render() gives {} bytes, expected {} (head_end {} tail_start {} total {}, retain {})", got.size(),
                   want.size(), m.head_end(), m.tail_start(), m.total(), retain);
        break;
      }
      case 7: {  // subscriptions
        int what = in.ConsumeIntegralInRange<int>(0, 3);
        if (what == 0 && subs.size() < 16) {
          auto n = std::make_unique<Notifier>();
          Notifier* raw = n.get();
          raw->drop_self = in.ConsumeBool();
          raw->sub = ring.subscribe([raw] {
            ++raw->woken;
            if (raw->drop_self) raw->sub.reset();  // allowed: "it may drop its own Subscription"
          });
          subs.push_back(std::move(n));
        } else if (what == 1 && !subs.empty()) {
          subs.erase(subs.begin() + static_cast<std::ptrdiff_t>(in.ConsumeIntegralInRange<std::size_t>(0, subs.size() - 1)));
        } else {
          for (auto& n : subs) n->woken = 0;
          ring.notify();
          for (auto& n : subs)
            FUZZ_CHECK("ring-wake-once", n->woken == 1 || (n->drop_self && n->woken <= 1),
                       "a subscriber was woken {} times by one notify", n->woken);
          std::erase_if(subs, [](const auto& n) { return n->drop_self && !n->sub; });
        }
        std::size_t live = static_cast<std::size_t>(std::count_if(subs.begin(), subs.end(), [](const auto& n) { return n->sub != nullptr; }));
        FUZZ_CHECK("ring-subscribers", ring.subscribers() == live, "subscribers() {} != {}", ring.subscribers(), live);
        break;
      }
      default: {  // the agent's body
        Offset from = in.ConsumeBool() ? 0 : in.ConsumeIntegralInRange<Offset>(0, m.total() + 4);
        bool hold = in.ConsumeBool();
        std::size_t budget = in.ConsumeIntegralInRange<std::size_t>(0, retain + 64);
        long bpt = in.ConsumeIntegralInRange<long>(-1, 8);
        check_collect(ring, m, from, hold, budget, bpt, in.ConsumeBool());
        break;
      }
    }
    check_accessors(ring, m, retain);
  }
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  uexec::fuzz::quiet_logs();
  return 0;
}
