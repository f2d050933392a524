// tombstones.h: what is left of ended sessions once their records went: a bounded store
// that answers "why did key K end?" for the last `capacity` ends, newest first.
//
// Both front doors keep one. The native protocol (rpc/exec_server.h) keys it by a hash of
// "<sessionId>/<processId>" and needs only the reason; the agent tools (agent/registry.h)
// key it by the numeric session id and keep the exit, the times and a few texts (name,
// command, who killed it, the last output: docs/agent.md §5.3). The store is laid out once,
// in the constructor, as two arrays:
//
//   slots   [capacity]               key, reason, exit status, when, note lengths
//   notes   [capacity x note_bytes]  each slot's texts, packed, cut to fit
//
// so an entry costs the same fixed bytes whatever it holds, and thousands of ended sessions
// never scatter small long-lived blocks over the heap (docs/reliability.md, defect 8 (b):
// such blocks pin pages malloc_trim cannot give back). The notes array is allocated without
// being written, so its pages are touched only as entries fill them.
//
// add() overwrites the oldest slot once the ring is full. Lookups scan the slots newest
// first: at most `capacity` key compares over one contiguous array, done on error paths and
// once per spawn, never per output byte. A key added twice answers with its last end.
// Keys are 64-bit: the agent's numeric ids are exact; a string key is hashed (key_of), and a
// collision between two of them is accepted (it would name the wrong reason, never crash).
// Not thread-safe; its owners use it on the loop thread only.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "pty/exit_status.h"

namespace uexec::session {

// How an entry ended, as every owner records it.
struct Ending {
  // A string with static storage ("exited", "killed", "pruned", "denied", …): never freed,
  // never copied. Must not be null.
  const char* reason = "";
  std::optional<pty::ExitStatus> status;                // the exit, when there was one
  std::chrono::steady_clock::time_point at{};           // for "N ago"
  std::chrono::system_clock::time_point wall{};         // for "at HH:MM:SS"
};

class Tombstones {
 public:
  using Key = std::uint64_t;
  static constexpr std::size_t kMaxNotes = 8;

  // One remembered end: a copy of the slot, its notes viewing the store's memory (valid
  // until the next add()).
  struct Entry {
    Key key = 0;
    Ending ending;
    std::array<std::string_view, kMaxNotes> notes{};  // as given to add(), cut to fit
  };

  // The key of a string (std::hash): for owners whose ids are strings.
  static Key key_of(std::string_view text) noexcept;

  // Room for `capacity` entries (0: remembers nothing), each with `note_bytes` of notes.
  explicit Tombstones(std::size_t capacity, std::size_t note_bytes = 0);

  // Remembers that `key` ended; when full, the oldest entry is forgotten. At most kMaxNotes
  // notes, packed in order: each is cut (at a UTF-8 code point boundary, keeping its start)
  // to what the earlier ones left of note_bytes, so put the ones that must survive first.
  void add(Key key, const Ending& ending, std::initializer_list<std::string_view> notes = {});
  // The newest entry for `key`, or nullopt when none is remembered.
  [[nodiscard]] std::optional<Entry> find(Key key) const;
  bool contains(Key key) const { return find(key).has_value(); }
  // Calls fn(entry) from the newest entry to the oldest until it returns false.
  template <class Fn>
  void newest_first(Fn&& fn) const {
    for (std::size_t i = 1; i <= size_; ++i)
      if (!fn(entry(slot_back(i)))) return;
  }

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return slots_.size(); }

 private:
  struct Slot {
    Key key = 0;
    Ending ending;
    std::array<std::uint16_t, kMaxNotes> note_len{};
  };
  std::size_t slot_back(std::size_t i) const noexcept;  // the i-th newest slot's index, 1-based
  Entry entry(std::size_t slot) const;

  std::vector<Slot> slots_;
  std::size_t note_bytes_;
  std::unique_ptr<char[]> notes_;  // slots_.size() * note_bytes_, written only by add()
  std::size_t next_ = 0;           // the slot add() writes next
  std::size_t size_ = 0;
};

}  // namespace uexec::session
