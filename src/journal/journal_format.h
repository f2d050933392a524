// journal_format.h: the output journal on disk, and reading it back.
//
// The journal keeps, per process a daemon ran, a bounded copy of its output and how it ended,
// in files, so that `uexec logs` still answers after the daemon (or the machine) restarted.
// The daemon writes it (journal_writer.h, fed by session_journal.h); any process of the user
// reads it with the functions below. Layout:
//
//   <root>/                                 0700; default $XDG_STATE_HOME/uexec/journal
//     <key>/                                0700; one per process, key = "<ms>-<pid>-<n>": the
//                                           start (Unix ms, 13 digits), the daemon's pid, a count
//       meta.json                           who it was; gains "end" when it finished
//       000000.out                          the head segment: the first records
//       000001.out, 000002.out, ...         tail segments; only the newest two are kept
//
// A segment is a run of records, each a 32-byte header (RecordHeader, little-endian as the
// machine) and then `length` output bytes. A record holds one read of the process's output:
// its seq, the offset of its first byte in everything the process wrote, the stream and when
// it was read (ms after the start). Offsets make every loss visible: a record whose offset is
// past the end of the previous one says how many bytes are missing (a tail segment deleted,
// the writer fell behind), so a reader never presents a cut as continuous output.
// A record cut short (the daemon killed mid-write) ends its segment's reading; a header
// without the magic too (zeros a crash left).
//
// meta.json is replaced whole (written to meta.json.tmp, renamed). It holds the process's
// ids (processId, sessionId; agentSessionId for an agent tool's session), name, argv, cwd,
// tty, pid, startedAtMs, the daemon (pid, startTime) and, once it finished, "end": exitCode
// or signal, reason, exitedAtMs, endedBy (a limit), denied, totalBytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace uexec::journal {

inline constexpr std::uint32_t kRecordMagic = 0x314a5855;  // "UXJ1"
inline constexpr const char* kMetaFile = "meta.json";

struct RecordHeader {
  std::uint32_t magic = kRecordMagic;
  std::uint32_t length = 0;   // output bytes after the header
  std::uint64_t seq = 0;      // the session's seq of this read
  std::uint64_t offset = 0;   // of its first byte, counted from the process's first output
  std::uint32_t at_ms = 0;    // when it was read, ms after the start
  std::uint8_t stream = 0;    // pty::Stream
  std::uint8_t pad[3] = {};
};
static_assert(sizeof(RecordHeader) == 32);

// One record's output larger than this is not a record (a read is at most 64 KiB).
inline constexpr std::uint32_t kMaxRecordBytes = 1u << 20;

// $XDG_STATE_HOME/uexec/journal when XDG_STATE_HOME is absolute, else
// ~/.local/state/uexec/journal (policy::default_journal_root: beside the daemons' registry).
std::string default_root();
// "000007.out".
std::string segment_name(std::uint64_t n);
// The segment number of a file name ("000007.out" -> 7), or -1.
long long segment_number(const std::string& file);

struct Chunk {
  std::uint64_t seq = 0;
  std::uint64_t offset = 0;
  std::uint32_t at_ms = 0;
  std::uint8_t stream = 0;
  std::string bytes;
  std::uint64_t missing_before = 0;  // bytes lost between the previous chunk (or 0) and this one
};

struct Contents {
  std::string dir;
  nlohmann::json meta;          // meta.json as written (an object)
  std::vector<Chunk> chunks;    // in offset order
  std::uint64_t missing = 0;    // sum of the chunks' missing_before, and output after the last
                                // chunk that the end's totalBytes counts but no record holds
  bool torn = false;            // a record was cut short (the writer stopped mid-record)
};

// `dir`/meta.json, or nullopt when it cannot be read or is not a JSON object.
std::optional<nlohmann::json> read_meta(const std::string& dir);
// Whether the daemon that meta.json names (pid and start time) still runs.
bool daemon_alive(const nlohmann::json& meta);

// One process's journal at `dir`. kIo/kInvalidArgument when meta.json cannot be read or parsed.
[[nodiscard]] base::Result<Contents> read_journal(const std::string& dir);

// Every journal under `root` with its meta (unreadable ones skipped), newest first.
struct Listed {
  std::string dir;
  nlohmann::json meta;
};
std::vector<Listed> list_journals(const std::string& root);

// The agent session id meta.json names (agentSessionId), or nullopt.
std::optional<long> agent_session_id(const nlohmann::json& meta);
// The newest journal of the agent tool's session `id`, or nullopt.
std::optional<Listed> find_agent_journal(const std::string& root, long id);

// The newest journal that `id` names: "SESSION/PROCESS" (a prefix of the session id will do),
// a processId, an agent session id, or a name. nullopt when none does.
std::optional<Listed> find_journal(const std::string& root, const std::string& id);

// How it ended, for people: "exited with code 3", "killed by signal 9 (a lifetime timeout of
// 2000 ms)", or, with no end recorded, why there is none (its daemon is gone, or still runs it).
std::string ending_text(const nlohmann::json& meta);

}  // namespace uexec::journal
