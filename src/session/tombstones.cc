#include "session/tombstones.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "base/check.h"
#include "session/utf8_cut.h"

namespace uexec::session {

Tombstones::Key Tombstones::key_of(std::string_view text) noexcept { return std::hash<std::string_view>{}(text); }

Tombstones::Tombstones(std::size_t capacity, std::size_t note_bytes)
    : slots_(capacity),
      note_bytes_(std::min<std::size_t>(note_bytes, std::numeric_limits<std::uint16_t>::max())),
      // Default-initialised, not zeroed: the pages stay untouched until entries fill them.
      notes_(capacity && note_bytes_ ? std::make_unique_for_overwrite<char[]>(capacity * note_bytes_) : nullptr) {}

std::size_t Tombstones::slot_back(std::size_t i) const noexcept {
  return (next_ + slots_.size() - i) % slots_.size();
}

void Tombstones::add(Key key, const Ending& ending, std::initializer_list<std::string_view> notes) {
  if (slots_.empty()) return;
  UEXEC_CHECK(ending.reason != nullptr);
  UEXEC_CHECK(notes.size() <= kMaxNotes);
  Slot& s = slots_[next_];
  s.key = key;
  s.ending = ending;
  s.note_len.fill(0);
  char* out = notes_.get() + next_ * note_bytes_;
  std::size_t room = note_bytes_, i = 0;
  for (std::string_view n : notes) {
    std::size_t len = n.size() <= room ? n.size() : cut_back(n, room);
    if (len) std::memcpy(out, n.data(), len);
    out += len;
    room -= len;
    s.note_len[i++] = static_cast<std::uint16_t>(len);
  }
  next_ = (next_ + 1) % slots_.size();
  size_ = std::min(size_ + 1, slots_.size());
}

Tombstones::Entry Tombstones::entry(std::size_t slot) const {
  const Slot& s = slots_[slot];
  Entry e{s.key, s.ending, {}};
  const char* p = notes_.get() + slot * note_bytes_;
  for (std::size_t i = 0; i < kMaxNotes; ++i) {
    e.notes[i] = std::string_view(s.note_len[i] ? p : "", s.note_len[i]);
    p += s.note_len[i];
  }
  return e;
}

std::optional<Tombstones::Entry> Tombstones::find(Key key) const {
  for (std::size_t i = 1; i <= size_; ++i)
    if (slots_[slot_back(i)].key == key) return entry(slot_back(i));
  return std::nullopt;
}

}  // namespace uexec::session
