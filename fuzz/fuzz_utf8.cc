// fuzz_utf8.cc: the text helpers between raw PTY bytes and what people and models read:
// session/utf8_cut (lossy_decode, incomplete_tail, unit_length, cut_back, cut_forward),
// agent::render_body over arbitrary bytes and gaps, agent::strip_ansi, and rpc's base64.
//
// The input is a few parameters (FuzzedDataProvider, from the end) and the raw bytes (the
// rest). A reference decoder written here from Unicode's Table 3-7 ("maximal subpart":
// each maximal invalid subpart is one U+FFFD) is the oracle:
//   lossy_decode     equals the reference; valid input comes back unchanged
//   incomplete_tail  equals the reference's trailing truncated prefix (0-3 bytes)
//   unit_length      equals the reference unit at any index
//   cut_back/forward land on a unit boundary of the whole buffer, on the right side of
//                    `pos`, within 32 bytes of it; decoding the two halves equals decoding
//                    the whole (a cut never splits a character)
//   render_body      body_check.h
//   strip_ansi       no ESC or CR survives; the output is a subsequence of the input
//   base64           decode(encode(x)) == x; whatever decodes re-encodes to the same length
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <string>
#include <vector>

#include "agent/probes.h"
#include "fuzz/body_check.h"
#include "fuzz/fuzz_common.h"
#include "rpc/base64.h"
#include "session/utf8_cut.h"

namespace {

using uexec::fuzz::excerpt;

// Length of the well-formed sequence or of the maximal invalid subpart at raw[i] (Table 3-7).
struct Unit {
  std::size_t len;
  bool valid;
};

Unit ref_unit(std::string_view raw, std::size_t i) {
  struct Row {
    unsigned lo, hi;            // lead byte range
    unsigned second_lo, second_hi;
    int trail;                  // continuation bytes after the lead
  };
  static constexpr Row kRows[] = {
      {0xC2, 0xDF, 0x80, 0xBF, 1}, {0xE0, 0xE0, 0xA0, 0xBF, 2}, {0xE1, 0xEC, 0x80, 0xBF, 2},
      {0xED, 0xED, 0x80, 0x9F, 2}, {0xEE, 0xEF, 0x80, 0xBF, 2}, {0xF0, 0xF0, 0x90, 0xBF, 3},
      {0xF1, 0xF3, 0x80, 0xBF, 3}, {0xF4, 0xF4, 0x80, 0x8F, 3},
  };
  unsigned c = static_cast<unsigned char>(raw[i]);
  if (c < 0x80) return {1, true};
  for (const Row& r : kRows) {
    if (c < r.lo || c > r.hi) continue;
    std::size_t k = 1;
    for (int t = 0; t < r.trail; ++t, ++k) {
      if (i + k >= raw.size()) return {k, false};
      unsigned x = static_cast<unsigned char>(raw[i + k]);
      unsigned lo = t == 0 ? r.second_lo : 0x80, hi = t == 0 ? r.second_hi : 0xBF;
      if (x < lo || x > hi) return {k, false};
    }
    return {k, true};
  }
  return {1, false};
}

std::string ref_decode(std::string_view raw, std::vector<std::size_t>* starts = nullptr) {
  std::string out;
  for (std::size_t i = 0; i < raw.size();) {
    Unit u = ref_unit(raw, i);
    if (starts) starts->push_back(i);
    out += u.valid ? std::string(raw.substr(i, u.len)) : std::string("\xEF\xBF\xBD");
    i += u.len;
  }
  return out;
}

std::size_t ref_incomplete_tail(std::string_view raw, const std::vector<std::size_t>& starts) {
  if (starts.empty()) return 0;
  std::size_t last = starts.back();
  Unit u = ref_unit(raw, last);
  unsigned c = static_cast<unsigned char>(raw[last]);
  // Invalid only because the buffer ended: every byte it has matched the table.
  if (!u.valid && last + u.len == raw.size() && c >= 0xC2 && c <= 0xF4) {
    // ...and a longer buffer could complete it: the unit is shorter than its row needs.
    return u.len;
  }
  return 0;
}

bool is_boundary(const std::vector<std::size_t>& starts, std::size_t n, std::size_t at) {
  return at == n || std::binary_search(starts.begin(), starts.end(), at);
}

void check_cuts(std::string_view raw, const std::vector<std::size_t>& starts, const std::string& whole,
                std::size_t pos) {
  using uexec::session::cut_back;
  using uexec::session::cut_forward;
  using uexec::session::lossy_decode;
  std::size_t n = raw.size();
  std::size_t b = cut_back(raw, pos);
  std::size_t f = cut_forward(raw, pos);
  if (pos >= n) {
    FUZZ_CHECK("utf8-cut-end", b == n && f == n, "cut_back/forward({}) past the end ({}): {} {}", pos, n, b, f);
    return;
  }
  FUZZ_CHECK("utf8-cut-back", b <= pos && pos - b <= 32 && is_boundary(starts, n, b),
             "cut_back(pos {}) = {} in {} bytes: {}", pos, b, n, excerpt(raw.substr(pos > 40 ? pos - 40 : 0, 80)));
  FUZZ_CHECK("utf8-cut-forward", f >= pos && f - pos <= 32 && f <= n && is_boundary(starts, n, f),
             "cut_forward(pos {}) = {} in {} bytes: {}", pos, f, n, excerpt(raw.substr(pos > 40 ? pos - 40 : 0, 80)));
  for (std::size_t c : {b, f}) {
    std::string joined = lossy_decode(raw.substr(0, c)) + lossy_decode(raw.substr(c));
    FUZZ_CHECK("utf8-cut-split", joined == whole, "decoding the halves cut at {} differs from the whole", c);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace uexec;
  FuzzedDataProvider in(data, size);
  // Parameters come from the end of the input; the raw bytes are whatever is left.
  std::size_t budget = in.ConsumeIntegralInRange<std::size_t>(0, 300);
  std::size_t pos1 = in.ConsumeIntegral<std::uint16_t>();
  std::size_t pos2 = in.ConsumeIntegral<std::uint16_t>();
  std::size_t gap_at = in.ConsumeIntegral<std::uint16_t>();
  std::uint64_t gap = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint64_t>(0, 1u << 20) : 0;
  std::uint64_t start = in.ConsumeIntegralInRange<std::uint64_t>(0, 1u << 30);
  long bpt = in.ConsumeIntegralInRange<long>(-1, 6);
  bool ext = in.ConsumeBool();
  std::string raw = in.ConsumeRemainingBytesAsString();
  std::string_view rv(raw);

  // lossy_decode against the reference.
  std::vector<std::size_t> starts;
  std::string want = ref_decode(rv, &starts);
  std::string got = session::lossy_decode(rv);
  FUZZ_CHECK("utf8-lossy", got == want, "lossy_decode differs from the maximal-subpart reference on {}", excerpt(rv));
  FUZZ_CHECK("utf8-lossy-valid", fuzz::valid_utf8(got), "lossy_decode output is not UTF-8: {}", excerpt(got));
  if (fuzz::valid_utf8(rv)) FUZZ_CHECK("utf8-lossy-identity", got == raw, "valid UTF-8 changed by lossy_decode");

  std::size_t k = session::incomplete_tail(rv);
  std::size_t want_k = ref_incomplete_tail(rv, starts);
  FUZZ_CHECK("utf8-incomplete-tail", k == want_k && k <= 3, "incomplete_tail = {}, reference {} on {}", k, want_k,
             excerpt(rv.substr(rv.size() > 8 ? rv.size() - 8 : 0)));

  if (!raw.empty()) {
    for (std::size_t i : {pos1 % raw.size(), pos2 % raw.size()}) {
      std::size_t ul = session::unit_length(rv, i);
      FUZZ_CHECK("utf8-unit-length", ul == ref_unit(rv, i).len, "unit_length({}) = {}, reference {}", i, ul,
                 ref_unit(rv, i).len);
    }
  }
  for (std::size_t p : {pos1 % (raw.size() + 2), pos2 % (raw.size() + 2), raw.size() / 2, budget})
    check_cuts(rv, starts, want, p);

  // render_body over these bytes as if collected from a ring, with an evicted span inside.
  agent::Collected c;
  c.start = start;
  c.raw = raw;
  c.gap = gap;
  c.gap_at = gap ? gap_at % (raw.size() + 1) : 0;
  c.end = start + raw.size() + gap;
  fuzz::check_body(c, budget, bpt, ext);

  // strip_ansi: nothing of an escape sequence or a CR survives, nothing is invented.
  std::string plain = agent::strip_ansi(rv);
  FUZZ_CHECK("ansi-strip", plain.find('\x1b') == std::string::npos && plain.find('\r') == std::string::npos,
             "strip_ansi left ESC or CR: {}", excerpt(plain));
  std::size_t j = 0;
  for (char ch : raw)
    if (j < plain.size() && plain[j] == ch) ++j;
  FUZZ_CHECK("ansi-subsequence", j == plain.size(), "strip_ansi output is not a subsequence of its input");

  // base64 round trip, and whatever decodes is canonical in length.
  std::string enc = rpc::base64_encode(rv);
  auto dec = rpc::base64_decode(enc);
  FUZZ_CHECK("base64-roundtrip", dec && *dec == raw, "base64 round trip failed for {} bytes", raw.size());
  FUZZ_CHECK("base64-length", enc.size() == (raw.size() + 2) / 3 * 4, "encoded length {} for {} bytes", enc.size(),
             raw.size());
  if (auto d = rpc::base64_decode(rv))
    FUZZ_CHECK("base64-decode", rpc::base64_encode(*d).size() == raw.size(), "decoded {} into {} bytes",
               excerpt(rv), d->size());
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  uexec::fuzz::quiet_logs();
  return 0;
}
