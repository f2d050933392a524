// envelope.h: what an agent reads back: the body (head+tail truncation) and the Codex text
// envelope around it (docs/agent.md §2.6, §3.3).
//
// The body is cut in raw byte space, so every range it names (the truncation marker's
// offset/length, `omitted`) is a raw range that read_output can fetch byte-exact; cuts land
// on grapheme cluster boundaries (utf8_cut.h) and each piece is decoded lossily. Pure, but
// for collect(), which reads what a session's OutputRing retains.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace uexec::session {
class OutputRing;
}

namespace uexec::agent {

// Output collected for one response: raw bytes of [start, end), with at most one evicted
// span of `gap` bytes sitting before raw[gap_at].
struct Collected {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::string raw;
  std::size_t gap_at = 0;
  std::uint64_t gap = 0;
};

// Everything `ring` retains in [from, total), with a gap note if evicted bytes were skipped.
// `hold_partial`: an incomplete UTF-8 sequence at the end stays for the next read (the
// process may still write the rest of it).
Collected collect(const session::OutputRing& ring, std::uint64_t from, bool hold_partial);

// Cuts `c` to end at the absolute offset `to` (nothing when it ends there or before): the raw
// bytes past `to` go, and of the evicted span only the part before `to` stays, so a range
// that ends before the gap reports none and one that ends inside it reports what it covers.
void trim_collected(Collected& c, std::uint64_t to);

// `all` (what collect() gave from the first retained byte) from the absolute offset `from` on,
// as collect(ring, from) answers: a start inside the evicted span keeps the rest of the span as
// the gap, a start before the first retained byte makes a gap of what it skips.
Collected from_offset(const Collected& all, std::uint64_t from);

struct Omitted {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string kind;  // "truncated" or "evicted"
};

struct Body {
  std::string text;
  std::uint64_t original_tokens = 0;
  bool truncated = false;
  std::vector<Omitted> omitted;
};

// tokens(b) = ceil(b / bytes_per_token).
std::uint64_t tokens_for(std::uint64_t bytes, long bytes_per_token = 4) noexcept;

// Renders `c` within `budget` bytes. `session_id` names the session in the marker; without
// `extensions` the marker is Codex's bare "…N tokens truncated…".
Body render_body(const Collected& c, std::size_t budget, long session_id, bool extensions,
                 long bytes_per_token = 4);

struct Envelope {
  std::string chunk_id;            // 6 lowercase hex digits
  double wall_time_seconds = 0;
  std::optional<int> exit_code;    // set: "Process exited with code N"
  long session_id = 0;             // otherwise: "Process running with session ID N"
  std::vector<std::string> extra;  // ‡ lines between the status line and the token count
  std::uint64_t original_tokens = 0;
  std::string body;
};

// The text form, lines joined by '\n'.
std::string render_envelope(const Envelope& e);

// A random 6-hex-digit chunk id.
std::string new_chunk_id();

}  // namespace uexec::agent
