// seq_mirror.h: a session's output counters, copied where another process can read them after
// this one died (the holder's shared table, holder/holder.h).
//
// A daemon that dies takes its rings with it; the next one continues each session's output
// from these counters, so that seqs and offsets never go back and what was lost is counted as
// a gap (OutputRing::resume_after_loss). The next seq and the total are stored before a chunk
// is appended: a death in between counts that chunk as lost, never hands its seq out twice.
// The line count is stored after, and can miss the lines of that one chunk.
#pragma once

#include <atomic>
#include <cstdint>

namespace uexec::session {

struct SeqMirror {
  std::atomic<std::uint64_t> next_seq{0};
  std::atomic<std::uint64_t> total{0};     // output bytes ever appended
  std::atomic<std::uint64_t> newlines{0};  // '\n' bytes among them
  std::atomic<std::uint64_t> in_use{0};    // 1 while a session is mirrored here
};
static_assert(sizeof(SeqMirror) == 32 && std::atomic<std::uint64_t>::is_always_lock_free,
              "a plain shared-memory layout");

}  // namespace uexec::session
