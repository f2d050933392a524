// journal_writer.h: the thread that writes the journal's files (journal_format.h), so that a
// slow or full disk never holds the event loop.
//
// The loop hands it operations (begin a process's journal, append one read of output, replace
// its meta.json, end it) through a queue; one thread performs them in order, waking for output
// at most every 10 ms or each 256 KiB (a flood costs one writev per batch of reads, not two
// context switches per read), at once for anything else. Bounds:
//   - the queue holds at most Limits::queue_bytes of output; an append past it is dropped and
//     counted (dropped_bytes()), and the next record's offset shows the hole to readers;
//   - a process's journal holds at most about Limits::process_bytes: the head segment takes
//     the first quarter, then tail segments of three eighths each, the oldest deleted when a
//     third begins (so the first and the last output are kept, as the ring keeps them);
//   - all journals under the root together stay under Limits::total_bytes, each counted as its
//     files' sizes plus 12 KiB for the blocks a small journal takes: when a journal
//     begins or ends and the sum is over, the oldest finished journals are deleted first
//     (another daemon's running ones are never touched; ours are bounded by the line above).
// A write error (disk full, EIO) stops that one journal and is logged once; output is never
// retried or buffered without bound. Nothing is fsync'ed: the journal survives a daemon that
// dies; after a machine crash it keeps what the kernel had written back (the last seconds can
// be missing, a record cut short is ignored by readers).
// The root is created 0700 and must be ours (policy::private_dir). Thread-safe: the calls are
// made from the loop thread, the files are touched only by the writer's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/result.h"
#include "base/unique_fd.h"
#include "journal/journal_format.h"

namespace uexec::journal {

struct Limits {
  std::uint64_t process_bytes = 8u << 20;   // per process
  std::uint64_t total_bytes = 256u << 20;   // under the root
  std::size_t queue_bytes = 16u << 20;      // waiting to be written
};

class JournalWriter {
 public:
  using Id = std::uint64_t;

  // Creates `root` (0700) if needed, counts what is there, and starts the thread.
  [[nodiscard]] static base::Result<std::unique_ptr<JournalWriter>> open(std::string root, Limits limits);
  // Writes what is queued, then stops the thread.
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // A new journal for a process that started at `started_ms` (Unix ms), with its meta.json.
  Id begin(std::uint64_t started_ms, std::string meta);
  // One read of output; false (and the bytes counted as dropped) when the queue is full.
  bool append(Id id, const RecordHeader& header, std::span<const std::byte> bytes);
  // Replaces the journal's meta.json.
  void update_meta(Id id, std::string meta);
  // The last meta.json; the journal is then closed and may be pruned.
  void end(Id id, std::string meta);
  // Waits until every queued operation was performed (tests, shutdown).
  void flush();

  const std::string& root() const noexcept { return root_; }
  std::uint64_t dropped_bytes() const;
  // Bytes of every journal under the root, as the writer counts them (after flush()).
  std::uint64_t total_bytes() const;

 private:
  enum class OpKind : unsigned char { kBegin, kAppend, kMeta, kEnd };
  struct Op {
    OpKind kind;
    Id id;
    RecordHeader header;
    std::string data;  // the meta, the key (begin: key '\n' meta) or the output bytes
  };
  struct Open {  // a journal being written (writer thread only)
    std::string key;
    base::UniqueFd dir, segment;
    std::uint64_t segment_no = 0, segment_bytes = 0;
    std::deque<std::uint64_t> tails;  // tail segment numbers on disk, oldest first
    bool broken = false;              // a write failed: nothing more is written
  };
  struct Known {  // every journal under the root (writer thread only)
    std::uint64_t bytes = 0;
    bool prunable = false;  // finished, or its daemon is gone
  };

  // The thread wakes for output at most every kGather, or once kBatchBytes wait.
  static constexpr std::chrono::milliseconds kGather{10};
  static constexpr std::size_t kBatchBytes = 256 * 1024;
  static constexpr int kMaxIov = 64;

  JournalWriter(std::string root, Limits limits);
  void push(Op op, std::size_t output_bytes);
  void run();
  void perform_batch(std::deque<Op>& batch);
  void perform_control(Op& op);  // begin, meta, end (output is perform_batch's)
  void scan();
  void do_begin(Id id, const std::string& key, const std::string& meta);
  // Starts the next segment when `record_bytes` more would not fit this one; false when the
  // journal cannot be written.
  bool roll_if_full(Open& j, std::uint64_t record_bytes);
  bool write_meta(Open& j, const std::string& meta);
  bool open_segment(Open& j, std::uint64_t n);
  void fail(Open& j, const char* what);
  void prune();
  void add_bytes(const std::string& key, std::int64_t delta);

  std::string root_;
  Limits limits_;
  std::uint64_t head_bytes_, tail_bytes_;  // segment sizes from limits_.process_bytes
  Id next_id_ = 1;
  std::uint64_t keys_made_ = 0;

  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Op> queue_;
  std::size_t queued_bytes_ = 0;
  std::uint64_t dropped_ = 0;
  bool busy_ = false;
  bool urgent_ = false;  // something other than output waits (or flush()): no gathering
  bool stop_ = false;
  std::uint64_t total_ = 0;  // under mu_: read by total_bytes()

  // Writer thread only.
  std::unordered_map<Id, Open> open_;
  std::map<std::string, Known> known_;  // by key: oldest first

  std::thread thread_;  // last: started when everything above exists
};

}  // namespace uexec::journal
