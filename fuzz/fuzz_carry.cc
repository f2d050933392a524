// fuzz_carry.cc: holder::read_carry (holder/carry_file.h) and OutputRing::restore on what it
// reads: the file an upgrading daemon hands the next one, here as arbitrary bytes.
//
// The input is the file. read_carry must refuse it whole or read every session; for each
// session read, a ring of any budget restores the image or refuses it (leaving it empty), and
// a restored ring keeps its contract: total() as the image says, retained bytes within the
// image's budgets plus two pages, reads from any cursor inside [0, total] with `next` moving
// forward, offset_after_seq within [0, total], render() not longer than the retained bytes
// plus its omission line. What read_carry returns is written again and read again the same.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "holder/carry_file.h"
#include "session/output_ring.h"

namespace {

using uexec::session::OutputRing;

uexec::base::UniqueFd file_of(const uint8_t* data, size_t size) {
  uexec::base::UniqueFd fd(::memfd_create("fuzz-carry", MFD_CLOEXEC));
  size_t off = 0;
  while (fd && off < size) {
    ssize_t n = ::write(fd.get(), data + off, size - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  return fd;
}

void check_ring(const uexec::session::RingImage& im) {
  OutputRing ring(4096);
  if (!ring.restore(im)) {
    FUZZ_CHECK("refused-leaves-empty", ring.total() == 0 && ring.retained() == 0, "total {}", ring.total());
    return;
  }
  FUZZ_CHECK("restored-total", ring.total() == im.total, "{} vs {}", ring.total(), im.total);
  FUZZ_CHECK("restored-retained", ring.retained() <= im.bytes.size(), "{} of {} bytes", ring.retained(),
             im.bytes.size());
  const uint64_t steps[] = {0, 1, im.total / 3, im.total / 2, im.total ? im.total - 1 : 0, im.total, im.total + 7};
  for (uint64_t at : steps) {
    auto r = ring.read_from(at, 4096);
    FUZZ_CHECK("read-next", r.next >= std::min(at, ring.total()) && r.next <= ring.total(), "at {} next {} total {}",
               at, r.next, ring.total());
    FUZZ_CHECK("read-size", r.bytes() <= 4096, "{}", r.bytes());
  }
  for (const auto& c : im.chunks) {
    auto off = ring.offset_after_seq(c.seq);
    FUZZ_CHECK("seq-offset", off <= ring.total(), "{} > {}", off, ring.total());
  }
  (void)ring.render();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uexec::fuzz::quiet_logs();
  auto fd = file_of(data, size);
  if (!fd) return 0;
  auto read = uexec::holder::read_carry(fd.get());
  if (!read) return 0;
  std::vector<std::pair<std::string, uexec::holder::CarriedSession>> all(read->begin(), read->end());
  for (const auto& [key, cs] : all) check_ring(cs.state.ring);
  auto again_fd = uexec::holder::write_carry(all);
  FUZZ_CHECK("rewrite", static_cast<bool>(again_fd), "{}", again_fd ? "" : again_fd.error().message());
  auto again = uexec::holder::read_carry(again_fd->get());
  FUZZ_CHECK("reread", again && again->size() == read->size(), "{} vs {}", again ? again->size() : 0, read->size());
  for (const auto& [key, cs] : *read) {
    auto it = again->find(key);
    FUZZ_CHECK("reread-same", it != again->end() && it->second.state.ring.bytes == cs.state.ring.bytes &&
                                  it->second.facts == cs.facts && it->second.pid == cs.pid &&
                                  it->second.state.pending_input == cs.state.pending_input,
               "session {}", key);
  }
  return 0;
}
