#include "journal/journal_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "base/log.h"
#include "policy/control_registry.h"

namespace uexec::journal {

using base::Error;
using base::Result;

namespace {

constexpr std::uint64_t kMinProcessBytes = 64 * 1024;
// What a journal costs the disk beyond its files' sizes: the blocks of its directory, its
// meta.json and its first segment. Counted in every journal's bytes, so that many short
// processes (an agent's commands) are bounded by journal_max as a few long ones are.
constexpr std::uint64_t kJournalOverhead = 12 * 1024;

// Writes all of `iov` (EINTR and short writes retried); false with errno set on failure.
bool write_all(int fd, iovec* iov, int count) {
  while (count > 0) {
    ssize_t n = ::writev(fd, iov, count);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    auto left = static_cast<std::size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

// Bytes of the regular files directly in `dir` (a journal holds nothing else).
std::uint64_t dir_bytes(int dirfd) {
  std::uint64_t sum = 0;
  int fd = ::dup(dirfd);
  if (fd < 0) return 0;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return 0;
  }
  while (dirent* e = ::readdir(d)) {
    struct stat st {};
    if (e->d_name[0] != '.' && ::fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      sum += static_cast<std::uint64_t>(st.st_size);
  }
  ::closedir(d);
  return sum;
}

// Deletes the journal directory `root`/`key` (its files, then itself); a name that is not a
// directory of ours is left alone.
void remove_journal(const std::string& root, const std::string& key) {
  std::string path = root + "/" + key;
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return;
  }
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ::unlinkat(fd, e->d_name, 0);
  ::closedir(d);
  ::rmdir(path.c_str());
}

}  // namespace

Result<std::unique_ptr<JournalWriter>> JournalWriter::open(std::string root, Limits limits) {
  if (root.empty() || root.front() != '/') return Error::invalid("the journal needs an absolute directory, not \"" + root + "\"");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (auto r = policy::private_dir(root); !r) return std::move(r).error();
  limits.process_bytes = std::max(limits.process_bytes, kMinProcessBytes);
  return std::unique_ptr<JournalWriter>(new JournalWriter(std::move(root), limits));
}

JournalWriter::JournalWriter(std::string root, Limits limits)
    : root_(std::move(root)),
      limits_(limits),
      head_bytes_(limits.process_bytes / 4),
      tail_bytes_(limits.process_bytes * 3 / 8) {
  thread_ = std::thread([this] {
    scan();
    run();
  });
}

JournalWriter::~JournalWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

JournalWriter::Id JournalWriter::begin(std::uint64_t started_ms, std::string meta) {
  Id id = next_id_++;
  std::string key = fmt::format("{:013}-{}-{}", started_ms, ::getpid(), keys_made_++);
  push(Op{OpKind::kBegin, id, {}, key + "\n" + meta}, 0);
  return id;
}

bool JournalWriter::append(Id id, const RecordHeader& header, std::span<const std::byte> bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_bytes_ + bytes.size() > limits_.queue_bytes) {
      dropped_ += bytes.size();
      return false;
    }
  }
  push(Op{OpKind::kAppend, id, header, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())},
       bytes.size());
  return true;
}

void JournalWriter::update_meta(Id id, std::string meta) { push(Op{OpKind::kMeta, id, {}, std::move(meta)}, 0); }

void JournalWriter::end(Id id, std::string meta) { push(Op{OpKind::kEnd, id, {}, std::move(meta)}, 0); }

void JournalWriter::push(Op op, std::size_t output_bytes) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The thread is woken when work arrives in an empty queue (it then gathers for up to
    // kGather), when the output waiting reaches kBatchBytes, and for anything but output;
    // not for every read, which would cost two context switches per 4 KiB of a flood.
    const bool was_empty = queue_.empty();
    const bool crossed = queued_bytes_ < kBatchBytes && queued_bytes_ + output_bytes >= kBatchBytes;
    if (op.kind != OpKind::kAppend) urgent_ = true;
    wake = was_empty || crossed || op.kind != OpKind::kAppend;
    queued_bytes_ += output_bytes;
    queue_.push_back(std::move(op));
  }
  if (wake) wake_.notify_one();
}

void JournalWriter::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  urgent_ = true;
  wake_.notify_one();
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

std::uint64_t JournalWriter::dropped_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

std::uint64_t JournalWriter::total_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

void JournalWriter::run() {
  std::unique_lock<std::mutex> lock(mu_);
  std::deque<Op> batch;
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stop_ and nothing left to write
    // Output alone can wait a little, so that one wake-up writes many reads.
    wake_.wait_for(lock, kGather, [this] { return stop_ || urgent_ || queued_bytes_ >= kBatchBytes; });
    batch.swap(queue_);
    urgent_ = false;
    busy_ = true;
    lock.unlock();
    std::size_t output = 0;
    for (const Op& op : batch)
      if (op.kind == OpKind::kAppend) output += op.data.size();
    perform_batch(batch);
    batch.clear();
    lock.lock();
    queued_bytes_ -= output;
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  idle_.notify_all();
}

void JournalWriter::perform_batch(std::deque<Op>& batch) {
  for (std::size_t i = 0; i < batch.size();) {
    Op& op = batch[i];
    if (op.kind != OpKind::kAppend) {
      perform_control(op);
      ++i;
      continue;
    }
    auto it = open_.find(op.id);
    if (it == open_.end() || it->second.broken) {  // never begun, or its files failed: dropped
      ++i;
      continue;
    }
    // A run of output for one journal: one writev for as many records as its segment takes.
    Open& j = it->second;
    if (!roll_if_full(j, sizeof(RecordHeader) + op.data.size())) {
      ++i;
      continue;
    }
    const std::uint64_t limit = j.segment_no == 0 ? head_bytes_ : tail_bytes_;
    iovec iov[kMaxIov];
    int count = 0;
    std::uint64_t bytes = 0;
    std::size_t k = i;
    for (; k < batch.size() && count + 2 <= kMaxIov; ++k) {
      Op& a = batch[k];
      if (a.kind != OpKind::kAppend || a.id != op.id) break;
      const std::uint64_t rec = sizeof(RecordHeader) + a.data.size();
      if (k > i && j.segment_bytes + bytes + rec > limit) break;
      iov[count++] = {&a.header, sizeof(RecordHeader)};
      if (!a.data.empty()) iov[count++] = {a.data.data(), a.data.size()};
      bytes += rec;
    }
    if (!write_all(j.segment.get(), iov, count)) {
      fail(j, "write");
    } else {
      j.segment_bytes += bytes;
      add_bytes(j.key, static_cast<std::int64_t>(bytes));
    }
    i = k;
  }
}

void JournalWriter::perform_control(Op& op) {
  if (op.kind == OpKind::kBegin) {
    const std::size_t nl = op.data.find('\n');
    do_begin(op.id, op.data.substr(0, nl), op.data.substr(nl + 1));
    prune();
    return;
  }
  auto it = open_.find(op.id);
  if (it == open_.end()) return;
  Open& j = it->second;
  switch (op.kind) {
    case OpKind::kMeta:
      if (!j.broken) write_meta(j, op.data);
      break;
    case OpKind::kEnd:
      if (!j.broken) write_meta(j, op.data);
      known_[j.key].prunable = true;
      open_.erase(it);
      prune();
      break;
    case OpKind::kBegin:
    case OpKind::kAppend:  // handled above and in perform_batch()
      break;
  }
}

void JournalWriter::scan() {
  DIR* d = ::opendir(root_.c_str());
  if (!d) return;
  std::vector<std::string> keys;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') keys.emplace_back(e->d_name);
  ::closedir(d);
  std::uint64_t sum = 0;
  for (const auto& key : keys) {
    base::UniqueFd dir(::open((root_ + "/" + key).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) continue;
    Known k;
    k.bytes = kJournalOverhead + dir_bytes(dir.get());
    // Finished, or left by a daemon that is gone (an unreadable one goes first); another live
    // daemon's running journal stays.
    auto meta = read_meta(root_ + "/" + key);
    k.prunable = !meta || meta->contains("end") || !daemon_alive(*meta);
    sum += k.bytes;
    known_[key] = k;
  }
  std::lock_guard<std::mutex> lock(mu_);
  total_ = sum;
}

void JournalWriter::do_begin(Id id, const std::string& key, const std::string& meta) {
  Open& j = open_[id];
  j.key = key;
  known_[key] = Known{};
  add_bytes(key, static_cast<std::int64_t>(kJournalOverhead));
  std::string path = root_ + "/" + key;
  if (::mkdir(path.c_str(), 0700) != 0) return fail(j, "mkdir");
  j.dir.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!j.dir) return fail(j, "open");
  if (!write_meta(j, meta)) return;
  open_segment(j, 0);
}

bool JournalWriter::open_segment(Open& j, std::uint64_t n) {
  const std::string name = segment_name(n);
  j.segment.reset(::openat(j.dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!j.segment) {
    fail(j, "create a segment");
    return false;
  }
  j.segment_no = n;
  j.segment_bytes = 0;
  if (n > 0) j.tails.push_back(n);
  // At most two tail segments: the oldest goes when a third begins.
  while (j.tails.size() > 2) {
    const std::string old = segment_name(j.tails.front());
    struct stat st {};
    if (::fstatat(j.dir.get(), old.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) add_bytes(j.key, -static_cast<std::int64_t>(st.st_size));
    ::unlinkat(j.dir.get(), old.c_str(), 0);
    j.tails.pop_front();
  }
  return true;
}

bool JournalWriter::roll_if_full(Open& j, std::uint64_t record_bytes) {
  if (!j.segment) return false;
  const std::uint64_t limit = j.segment_no == 0 ? head_bytes_ : tail_bytes_;
  if (j.segment_bytes > 0 && j.segment_bytes + record_bytes > limit) return open_segment(j, j.segment_no + 1);
  return true;
}

bool JournalWriter::write_meta(Open& j, const std::string& meta) {
  const std::string tmp = std::string(kMetaFile) + ".tmp";
  base::UniqueFd fd(::openat(j.dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    fail(j, "write meta.json");
    return false;
  }
  iovec iov{const_cast<char*>(meta.data()), meta.size()};
  if (!write_all(fd.get(), &iov, 1) || ::renameat(j.dir.get(), tmp.c_str(), j.dir.get(), kMetaFile) != 0) {
    fail(j, "write meta.json");
    return false;
  }
  return true;
}

void JournalWriter::fail(Open& j, const char* what) {
  if (!j.broken)
    UEXEC_LOG(kWarn, "journal {}/{}: {} failed: {}; this process is no longer journaled", root_, j.key, what,
              std::strerror(errno));
  j.broken = true;
  j.segment.reset();
}

void JournalWriter::add_bytes(const std::string& key, std::int64_t delta) {
  auto& k = known_[key];
  k.bytes = static_cast<std::uint64_t>(static_cast<std::int64_t>(k.bytes) + delta);
  std::lock_guard<std::mutex> lock(mu_);
  total_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(total_) + delta);
}

void JournalWriter::prune() {
  std::uint64_t total;
  {
    std::lock_guard<std::mutex> lock(mu_);
    total = total_;
  }
  for (auto it = known_.begin(); total > limits_.total_bytes && it != known_.end();) {
    if (!it->second.prunable) {
      ++it;
      continue;
    }
    remove_journal(root_, it->first);
    total -= std::min(total, it->second.bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      total_ = total;
    }
    it = known_.erase(it);
  }
}

}  // namespace uexec::journal
