#include "holder/carry_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <type_traits>

namespace uexec::holder {

using base::Error;
using base::Result;
using base::UniqueFd;
using session::Carried;
using session::RingImage;

namespace {

constexpr char kMagic[] = "uexec-carry\n";
constexpr std::size_t kFlushAt = 1 << 20;

// Buffered writes to the memfd: a session at a time, never the whole file in memory.
class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) {}
  template <class T>
  void num(T v) {
    static_assert(std::is_integral_v<T>);
    buf_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void bytes(const std::string& s) {
    num<std::uint64_t>(s.size());
    buf_.append(s);
    if (buf_.size() >= kFlushAt) flush();
  }
  bool flush() {
    std::size_t off = 0;
    while (ok_ && off < buf_.size()) {
      ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok_ = false;
      else off += static_cast<std::size_t>(n);
    }
    buf_.clear();
    return ok_;
  }

 private:
  int fd_;
  std::string buf_;
  bool ok_ = true;
};

// Reads from the mapped file; every read checks the bounds, and a failure sticks.
class Reader {
 public:
  Reader(const char* p, std::size_t n) : p_(p), end_(p + n) {}
  template <class T>
  T num() {
    T v{};
    if (!take(sizeof v)) return v;
    std::memcpy(&v, p_ - sizeof v, sizeof v);
    return v;
  }
  std::string bytes() {
    auto n = num<std::uint64_t>();
    if (!take(n)) return {};
    return std::string(p_ - n, n);
  }
  bool take(std::uint64_t n) {
    if (!ok_ || n > static_cast<std::uint64_t>(end_ - p_)) return ok_ = false;
    p_ += n;
    return true;
  }
  // A count of records of at least `each` bytes: never more than the file could hold.
  std::size_t count(std::size_t each) {
    auto n = num<std::uint32_t>();
    if (n > static_cast<std::uint64_t>(end_ - p_) / each) ok_ = false;
    return ok_ ? n : 0;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

void write_one(Writer& w, const std::string& key, const CarriedSession& cs) {
  const Carried& c = cs.state;
  w.bytes(key);
  w.num<std::int64_t>(cs.pid);
  w.bytes(cs.facts);
  w.num(c.next_seq);
  w.num<std::uint8_t>(c.exit.has_value());
  const pty::ExitStatus st = c.exit.value_or(pty::ExitStatus{});
  w.num<std::int32_t>(st.code);
  w.num<std::int32_t>(st.signal);
  w.num<std::uint8_t>(st.core_dumped);
  w.num<std::uint16_t>(c.size.rows);
  w.num<std::uint16_t>(c.size.cols);
  const RingImage& r = c.ring;
  w.num(r.head_budget);
  w.num(r.tail_budget);
  w.num(r.total);
  w.num(r.tail_start);
  w.num(r.newlines);
  w.num<std::uint8_t>(r.evicted_starts_dropped);
  w.num<std::uint32_t>(static_cast<std::uint32_t>(r.evicted_starts.size()));
  for (const auto& [seq, off] : r.evicted_starts) {
    w.num(seq);
    w.num(off);
  }
  w.num<std::uint32_t>(static_cast<std::uint32_t>(r.chunks.size()));
  for (const auto& ch : r.chunks) {
    w.num(ch.seq);
    w.num<std::uint8_t>(static_cast<std::uint8_t>(ch.stream));
    w.num(ch.at_ms);
    w.num(ch.offset);
    w.num(ch.size);
  }
  w.bytes(r.bytes);
  w.num<std::uint8_t>(c.screen.has_value());
  w.bytes(c.screen.value_or(std::string()));
  w.num(c.screen_seq);
  w.num<std::uint8_t>(c.screen_exact);
  w.bytes(c.pending_input);
}

CarriedSession read_one(Reader& r) {
  CarriedSession cs;
  cs.pid = static_cast<pid_t>(r.num<std::int64_t>());
  cs.facts = r.bytes();
  Carried& c = cs.state;
  c.next_seq = r.num<std::uint64_t>();
  const bool has_exit = r.num<std::uint8_t>() != 0;
  pty::ExitStatus st;
  st.code = r.num<std::int32_t>();
  st.signal = r.num<std::int32_t>();
  st.core_dumped = r.num<std::uint8_t>() != 0;
  if (has_exit) c.exit = st;
  c.size.rows = r.num<std::uint16_t>();
  c.size.cols = r.num<std::uint16_t>();
  RingImage& im = c.ring;
  im.head_budget = r.num<std::uint64_t>();
  im.tail_budget = r.num<std::uint64_t>();
  im.total = r.num<std::uint64_t>();
  im.tail_start = r.num<std::uint64_t>();
  im.newlines = r.num<std::uint64_t>();
  im.evicted_starts_dropped = r.num<std::uint8_t>() != 0;
  for (std::size_t i = 0, n = r.count(16); i < n; ++i) {
    auto seq = r.num<std::uint64_t>();
    im.evicted_starts.emplace_back(seq, r.num<std::uint64_t>());
  }
  for (std::size_t i = 0, n = r.count(33); i < n && r.ok(); ++i) {
    RingImage::Chunk ch;
    ch.seq = r.num<std::uint64_t>();
    ch.stream = static_cast<session::Stream>(r.num<std::uint8_t>());
    ch.at_ms = r.num<std::uint32_t>();
    ch.offset = r.num<std::uint64_t>();
    ch.size = r.num<std::uint64_t>();
    im.chunks.push_back(ch);
  }
  im.bytes = r.bytes();
  const bool has_screen = r.num<std::uint8_t>() != 0;
  std::string screen = r.bytes();
  if (has_screen) c.screen = std::move(screen);
  c.screen_seq = r.num<std::uint64_t>();
  c.screen_exact = r.num<std::uint8_t>() != 0;
  c.pending_input = r.bytes();
  return cs;
}

}  // namespace

Result<UniqueFd> write_carry(const std::vector<std::pair<std::string, CarriedSession>>& sessions) {
  UniqueFd fd(::memfd_create("uexec-carry", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return Error::sys("memfd_create carry");
  Writer w(fd.get());
  for (const char* c = kMagic; *c; ++c) w.num(*c);
  w.num(kCarryVersion);
  w.num<std::uint32_t>(static_cast<std::uint32_t>(sessions.size()));
  for (const auto& [key, c] : sessions) write_one(w, key, c);
  if (!w.flush()) return Error::sys("write carry");
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
    return Error::sys("seal carry");
  return fd;
}

Result<std::unordered_map<std::string, CarriedSession>> read_carry(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) < 0) return Error::sys("fstat carry");
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < sizeof kMagic) return Error::invalid("the carried state is too short");
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) return Error::sys("mmap carry");
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size};
  Reader r(static_cast<const char*>(map), size);
  std::string magic;
  for (std::size_t i = 0; i + 1 < sizeof kMagic; ++i) magic.push_back(r.num<char>());
  if (magic != kMagic) return Error::invalid("the carried state is not uexec's");
  if (auto version = r.num<std::uint32_t>(); version != kCarryVersion)
    return Error::invalid("the carried state is version " + std::to_string(version) + ", this uexec reads " +
                          std::to_string(kCarryVersion));
  std::unordered_map<std::string, CarriedSession> out;
  for (std::size_t i = 0, n = r.count(8); i < n && r.ok(); ++i) {
    std::string key = r.bytes();
    CarriedSession c = read_one(r);
    if (r.ok()) out.emplace(std::move(key), std::move(c));
  }
  if (!r.ok() || !r.at_end()) return Error::invalid("the carried state is cut short or malformed");
  return out;
}

}  // namespace uexec::holder
