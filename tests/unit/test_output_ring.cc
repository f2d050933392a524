// Unit tests for session::OutputRing: retention, gaps, readers, notifiers, bounded memory.
#include <doctest/doctest.h>

#include <string>

#include "session/output_ring.h"

using uexec::session::OutputRing;
using uexec::session::Stream;

namespace {
std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}
void push(OutputRing& r, uint64_t& seq, const std::string& s, Stream st = Stream::kPty) {
  r.append(seq++, st, bytes_of(s));
}
}  // namespace

TEST_CASE("cap 10 keeps head and tail with the exact omission marker") {
  OutputRing r(10);
  uint64_t seq = 1;
  push(r, seq, "0123456789ab");
  CHECK(r.render() == "01234\n... 2 bytes omitted ...\n789ab");
  CHECK(r.total() == 12);
  CHECK(r.evicted() == 2);
  CHECK(r.retained() == 10);
}

TEST_CASE("cap 0 keeps nothing; cap 1 keeps the last byte") {
  OutputRing zero(0);
  uint64_t seq = 1;
  push(zero, seq, "abc");
  CHECK(zero.retained() == 0);
  CHECK(zero.total() == 3);
  CHECK(zero.memory_bytes() == 0);
  auto r0 = zero.read_from(0, 100);
  CHECK(r0.gap == 3);
  CHECK(r0.bytes() == 0);

  OutputRing one(1);
  push(one, seq, "abc");
  CHECK(one.render() == "\n... 2 bytes omitted ...\nc");
}

TEST_CASE("a chunk longer than the tail budget leaves its last T bytes; head fills across chunks") {
  OutputRing r(10);  // H = 5, T = 5
  uint64_t seq = 1;
  push(r, seq, "012");
  push(r, seq, "34");  // head exactly full
  CHECK(r.render() == "01234");
  push(r, seq, "abcdefgh");  // 8 bytes >= T: keeps "defgh"
  CHECK(r.render() == "01234\n... 3 bytes omitted ...\ndefgh");
  push(r, seq, "X");  // one more byte evicts the oldest tail byte
  CHECK(r.render() == "01234\n... 4 bytes omitted ...\nefghX");
}

TEST_CASE("a chunk crossing the head boundary is split and both halves keep its seq") {
  OutputRing r(8);  // H = 4, T = 4
  uint64_t seq = 7;
  push(r, seq, "abcdef");
  auto rr = r.read_from(0, 100);
  REQUIRE(rr.pieces.size() == 2);
  CHECK(rr.pieces[0].seq == 7);
  CHECK(rr.pieces[1].seq == 7);
  CHECK(rr.text() == "abcdef");
}

TEST_CASE("a silent session holds no pages; tiny pushes keep metadata bounded") {
  OutputRing r(1024 * 1024);
  CHECK(r.memory_bytes() == 0);
  uint64_t seq = 1;
  for (int i = 0; i < 10000; ++i) r.append(seq++, Stream::kPty, {});
  CHECK(r.memory_bytes() == 0);
  for (int i = 0; i < 100000; ++i) push(r, seq, "x");
  std::size_t after_100k = r.memory_bytes();
  for (int i = 0; i < 100000; ++i) push(r, seq, "y");
  // Index entries are capped, pages hold bytes: 200k bytes stay well under 1 MiB of pages
  // plus two capped indexes.
  CHECK(r.memory_bytes() <= 200000 / 4096 * 4096 + 2 * 4096 + 2 * OutputRing::kMaxIndexEntries * 40);
  CHECK(after_100k <= r.memory_bytes());
  CHECK(r.total() == 200000);
  auto all = r.read_from(0, 300000);
  CHECK(all.bytes() == 200000);
  CHECK(all.text().substr(99998, 4) == "xxyy");
}

TEST_CASE("memory stays bounded by retention whatever the child writes") {
  OutputRing r(64 * 1024);
  std::string chunk(4096, 'z');
  uint64_t seq = 1;
  for (int i = 0; i < 16 * 1024; ++i) push(r, seq, chunk);  // 64 MiB
  CHECK(r.total() == 64ull * 1024 * 1024);
  CHECK(r.memory_bytes() <= 64 * 1024 + 3 * 4096 + 2 * OutputRing::kMaxIndexEntries * 40);
}

TEST_CASE("after 3 MiB a reader at 0 gets the head, the gap, then the tail") {
  OutputRing r(1024 * 1024);
  uint64_t seq = 1;
  std::string chunk(4096, '\0');
  for (int i = 0; i < 768; ++i) {  // 3 MiB, each chunk tagged with its index
    chunk.assign(4096, static_cast<char>('a' + i % 26));
    push(r, seq, chunk);
  }
  CHECK(r.head_end() == 512 * 1024);
  CHECK(r.tail_start() == 2560 * 1024);
  uexec::session::Offset cursor = 0;
  auto head = r.read_from(cursor, 512 * 1024);
  CHECK(head.gap == 0);
  CHECK(head.bytes() == 512 * 1024);
  cursor = head.next;
  auto rest = r.read_from(cursor, 1024 * 1024);
  CHECK(rest.gap == 2048 * 1024);
  CHECK(rest.bytes() == 512 * 1024);
  CHECK(rest.pieces.front().offset == 2560 * 1024);
  CHECK(rest.pieces.front().seq == 641);  // chunk index 640 starts at 2.5 MiB
  CHECK(rest.next == 3 * 1024 * 1024);
}

TEST_CASE("two readers each receive every byte independently") {
  OutputRing r(1024);
  uint64_t seq = 1;
  uexec::session::Offset a = 0, b = 0;
  std::string got_a, got_b;
  push(r, seq, "hello ");
  auto ra = r.read_from(a, 1000);
  got_a += ra.text();
  a = ra.next;
  push(r, seq, "world");
  ra = r.read_from(a, 1000);
  got_a += ra.text();
  auto rb = r.read_from(b, 1000);
  got_b += rb.text();
  CHECK(got_a == "hello world");
  CHECK(got_b == "hello world");
}

TEST_CASE("a UTF-8 character split across two chunks reads back whole") {
  OutputRing r(1024);
  uint64_t seq = 1;
  std::string euro = "\xE2\x82\xAC";
  for (std::size_t cut = 0; cut <= euro.size(); ++cut) {
    push(r, seq, euro.substr(0, cut));
    push(r, seq, euro.substr(cut));
  }
  CHECK(r.render() == euro + euro + euro + euro);
}

TEST_CASE("pipe streams keep their tags") {
  OutputRing r(1024);
  uint64_t seq = 1;
  push(r, seq, "out", Stream::kStdout);
  push(r, seq, "err", Stream::kStderr);
  auto rr = r.read_from(0, 100);
  REQUIRE(rr.pieces.size() == 2);
  CHECK(rr.pieces[0].stream == Stream::kStdout);
  CHECK(rr.pieces[1].stream == Stream::kStderr);
  CHECK(rr.pieces[1].seq == 2);
}

TEST_CASE("notifiers wake once per append and survive unsubscribing during a round") {
  auto ring = std::make_unique<OutputRing>(1024);
  int a = 0, b = 0;
  std::unique_ptr<uexec::session::Subscription> sa, sb;
  sa = ring->subscribe([&] {
    ++a;
    sb.reset();  // drops the other subscriber mid-round
  });
  sb = ring->subscribe([&] { ++b; });
  uint64_t seq = 1;
  push(*ring, seq, "x");
  CHECK(a == 1);
  CHECK(b == 0);
  push(*ring, seq, "y");
  CHECK(a == 2);
  CHECK(ring->subscribers() == 1);
  // The ring may die first: the subscription detaches and its destructor is a no-op.
  ring.reset();
  sa.reset();
}

TEST_CASE("read_from never returns more than max, also across the head/tail boundary (fuzz regression)") {
  uexec::session::OutputRing ring(20);  // head 10, tail 10
  std::string data = "0123456789abcdef";  // 16 bytes: head full, 6 in the tail, nothing evicted
  ring.append(1, uexec::pty::Stream::kPty, std::as_bytes(std::span(data.data(), data.size())));
  auto r = ring.read_from(4, 8);
  CHECK(r.text() == "456789ab");
  CHECK(r.next == 12);
  CHECK(ring.render() == data);  // the tail is not repeated
}

TEST_CASE("offset_after_seq: a reader that stopped in what is now evicted resumes exactly there") {
  OutputRing r(8192);  // head 4096, tail 4096
  uint64_t seq = 1;
  for (int i = 0; i < 40; ++i) push(r, seq, std::string(1024, static_cast<char>('a' + i % 26)));  // chunk k at (k-1) KiB
  CHECK(r.total() == 40 * 1024);
  CHECK(r.evicted() == 32 * 1024);
  // A reader that saw chunks 1-10 (10 KiB): it missed chunks 11-36, 26 KiB; not the 32 KiB evicted.
  auto cursor = r.offset_after_seq(10);
  CHECK(cursor == 10 * 1024);
  auto rd = r.read_from(cursor, SIZE_MAX);
  CHECK(rd.gap == 26 * 1024);
  CHECK(rd.pieces.front().seq == 37);
  // One that saw everything up to the head's end misses the whole middle.
  CHECK(r.read_from(r.offset_after_seq(4), SIZE_MAX).gap == 32 * 1024);
  // One that saw chunk 36, the last evicted: nothing missed.
  CHECK(r.offset_after_seq(36) == r.tail_start());
  CHECK(r.read_from(r.offset_after_seq(36), SIZE_MAX).gap == 0);
  // In the head and in the tail, as before.
  CHECK(r.offset_after_seq(2) == 2048);
  CHECK(r.offset_after_seq(38) == 38 * 1024);
  CHECK(r.offset_after_seq(40) == r.total());
}

TEST_CASE("offset_after_seq: a chunk cut by eviction and one longer than the tail resume at their starts") {
  OutputRing r(8192);  // head 4096, tail 4096
  uint64_t seq = 1;
  push(r, seq, std::string(4096, 'h'));  // 1: the head
  push(r, seq, std::string(3000, 'a'));  // 2: [4096, 7096)
  push(r, seq, std::string(3000, 'b'));  // 3: [7096, 10096): cuts 2's first 2904 bytes
  CHECK(r.tail_start() == 10096 - 4096);
  CHECK(r.offset_after_seq(1) == 4096);  // 2's start, though evicted: the gap is what 1's reader missed
  CHECK(r.read_from(r.offset_after_seq(1), SIZE_MAX).gap == r.tail_start() - 4096);
  push(r, seq, std::string(10000, 'c'));  // 4: [10096, 20096), only its last 4096 bytes kept
  CHECK(r.offset_after_seq(3) == 10096);
  CHECK(r.read_from(r.offset_after_seq(3), SIZE_MAX).gap == 20096 - 4096 - 10096);
  CHECK(r.offset_after_seq(2) == 7096);
}

TEST_CASE("offset_after_seq: a reader behind every evicted start still known gets the head's end") {
  OutputRing r(2048);  // head 1024, tail 1024
  uint64_t seq = 1;
  push(r, seq, std::string(1024, 'h'));
  const auto n = OutputRing::kMaxIndexEntries + 100;
  for (std::size_t i = 0; i < n; ++i) push(r, seq, std::string(64, 'x'));
  // Chunk 2's start was forgotten: the cursor is the head's end, the gap an upper bound.
  CHECK(r.offset_after_seq(50) == r.head_end());
  // A recent one is still exact.
  auto recent = static_cast<uint64_t>(n - 20);  // its chunk starts at 1024 + (recent - 1) * 64
  CHECK(r.offset_after_seq(recent) == 1024 + (recent - 1) * 64);
  CHECK(r.memory_bytes() <= 2048 + 2 * 4096 + 2 * OutputRing::kMaxIndexEntries * 40);
}

TEST_CASE("each chunk keeps when it was read: pieces carry it across head, tail and the index cap") {
  OutputRing r(20);  // head 10, tail 10
  r.append(1, Stream::kPty, bytes_of("aaaa"), 5);
  r.append(2, Stream::kPty, bytes_of("bbbbbbbb"), 70);   // crosses into the tail
  r.append(3, Stream::kPty, bytes_of("cccccc"), 1200);
  // Pieces of one chunk in both regions (seq 2) carry the same time.
  r.append(4, Stream::kPty, bytes_of("dddddddd"), 4000);  // evicts the start of the tail
  auto head = r.read_from(0, SIZE_MAX);
  REQUIRE(head.pieces.size() == 2);
  CHECK(head.pieces[0].at_ms == 5);
  CHECK(head.pieces[1].seq == 2);
  CHECK(head.pieces[1].at_ms == 70);
  auto tail = r.read_from(head.next, SIZE_MAX);
  CHECK(tail.gap > 0);
  REQUIRE(tail.pieces.size() >= 2);
  CHECK(tail.pieces.front().seq == 3);
  CHECK(tail.pieces.front().at_ms == 1200);
  CHECK(tail.pieces.back().seq == 4);
  CHECK(tail.pieces.back().at_ms == 4000);
  // Past the index cap the oldest entries merge and keep the older time.
  OutputRing big(1 << 20);
  uint64_t seq = 1;
  for (std::uint32_t i = 0; i < OutputRing::kMaxIndexEntries + 10; ++i) big.append(seq++, Stream::kPty, bytes_of("x"), 1000 + i);
  auto all = big.read_from(0, SIZE_MAX);
  REQUIRE(!all.pieces.empty());
  CHECK(all.pieces.front().at_ms == 1000);
  CHECK(all.pieces.back().at_ms == 1000 + OutputRing::kMaxIndexEntries + 9);
}

// A ring that continues a session whose daemon died (holder/holder.h): offsets and seqs go on
// from the mirrored counters; everything before is one gap; a reader that saw the last chunk
// loses nothing, an older one is told it lost everything before (an over-count).
TEST_CASE("resume_after_loss continues offsets, reports the loss as a gap, keeps the whole budget as tail") {
  OutputRing r(16);
  r.resume_after_loss(/*total=*/10000, /*newlines=*/42, /*last_seq=*/99);
  CHECK(r.total() == 10000);
  CHECK(r.newlines() == 42);
  CHECK(r.retained() == 0);
  CHECK(r.offset_after_seq(99) == 10000);
  CHECK(r.offset_after_seq(120) == 10000);
  CHECK(r.offset_after_seq(50) == 0);
  uint64_t seq = 100;
  push(r, seq, "hello\n");
  CHECK(r.total() == 10006);
  CHECK(r.newlines() == 43);
  CHECK(r.offset_after_seq(99) == 10000);  // exactly what followed the last chunk seen
  auto from_seen = r.read_from(r.offset_after_seq(99), SIZE_MAX);
  CHECK(from_seen.gap == 0);
  CHECK(from_seen.text() == "hello\n");
  CHECK(from_seen.pieces.front().seq == 100);
  auto from_start = r.read_from(0, SIZE_MAX);
  CHECK(from_start.gap == 10000);
  CHECK(from_start.text() == "hello\n");
  // The whole budget is tail: 16 bytes kept, the rest joins the gap.
  push(r, seq, "0123456789abcdefXYZ");
  CHECK(r.retained() == 16);
  CHECK(r.read_from(r.tail_start(), SIZE_MAX).text() == "3456789abcdefXYZ");
  CHECK(r.render().find("bytes omitted") != std::string::npos);
  CHECK(r.memory_bytes() <= 2 * OutputRing::kPageSize + 4 * 32 + 64);  // no pages for the lost span
}

TEST_CASE("resume_after_loss of a session that had printed nothing is an ordinary empty ring") {
  OutputRing r(8);
  r.resume_after_loss(0, 0, 3);
  uint64_t seq = 4;
  push(r, seq, "ab");
  CHECK(r.read_from(0, SIZE_MAX).gap == 0);
  CHECK(r.offset_after_seq(3) == 0);
  CHECK(r.render() == "ab");
}

// image() and restore() (an upgrade carries rings to the next daemon, holder/carry_file.h):
// the restored ring answers every question as the original does, and goes on the same way.
namespace {
void check_same(const OutputRing& a, const OutputRing& b, uint64_t max_seq) {
  CHECK(a.total() == b.total());
  CHECK(a.newlines() == b.newlines());
  CHECK(a.head_end() == b.head_end());
  CHECK(a.tail_start() == b.tail_start());
  CHECK(a.retained() == b.retained());
  CHECK(a.render() == b.render());
  for (uint64_t s = 0; s <= max_seq + 1; ++s) CHECK(a.offset_after_seq(s) == b.offset_after_seq(s));
  for (uint64_t at = 0; at <= a.total(); at += 3) {
    auto x = a.read_from(at, 7), y = b.read_from(at, 7);
    CHECK(x.gap == y.gap);
    CHECK(x.next == y.next);
    CHECK(x.text() == y.text());
    REQUIRE(x.pieces.size() == y.pieces.size());
    for (std::size_t i = 0; i < x.pieces.size(); ++i) {
      CHECK(x.pieces[i].seq == y.pieces[i].seq);
      CHECK(x.pieces[i].stream == y.pieces[i].stream);
      CHECK(x.pieces[i].at_ms == y.pieces[i].at_ms);
    }
  }
}
}  // namespace

TEST_CASE("a ring restored from its image reads, maps seqs and reports gaps as the original") {
  for (std::size_t retain : {0, 1, 16, 64, 100000}) {
    for (int evict : {0, 1}) {
      CAPTURE(retain);
      CAPTURE(evict);
      OutputRing a(retain);
      uint64_t seq = 1;
      for (int i = 0; i < (evict ? 40 : 3); ++i)
        a.append(seq++, i % 3 ? Stream::kStdout : Stream::kStderr, bytes_of("line " + std::to_string(i) + "\n"),
                 static_cast<uint32_t>(10 * i));
      OutputRing b(999);  // the new daemon's budget: the image's wins
      REQUIRE(b.restore(a.image()));
      check_same(a, b, seq);
      uint64_t seq_b = seq;
      push(a, seq, "after the upgrade\n");
      push(b, seq_b, "after the upgrade\n");
      check_same(a, b, seq);
    }
  }
}

TEST_CASE("a ring resumed after a crash, then carried by an upgrade, keeps its gap") {
  OutputRing a(32);
  a.resume_after_loss(5000, 7, 41);
  uint64_t seq = 42;
  push(a, seq, "abc\n");
  OutputRing b(32);
  REQUIRE(b.restore(a.image()));
  check_same(a, b, seq);
  OutputRing empty(32);
  empty.resume_after_loss(100, 1, 5);
  OutputRing c(32);
  REQUIRE(c.restore(empty.image()));
  check_same(empty, c, 6);
}

TEST_CASE("restore refuses an image that does not hold together") {
  OutputRing a(64);
  uint64_t seq = 1;
  push(a, seq, "one\n");
  push(a, seq, "two\n");
  uexec::session::RingImage im = a.image();
  std::swap(im.chunks[0], im.chunks[1]);  // out of order
  OutputRing b(64);
  CHECK_FALSE(b.restore(im));
  CHECK(b.total() == 0);
  im = a.image();
  im.total += 5;  // a hole at the end
  CHECK_FALSE(b.restore(im));
  im = a.image();
  im.chunks[1].offset += 2;  // a hole in the head
  CHECK_FALSE(b.restore(im));
  im = a.image();
  im.bytes.pop_back();  // fewer bytes than the chunks say
  CHECK_FALSE(b.restore(im));
}
