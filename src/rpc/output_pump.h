// output_pump.h: a process's output on the native protocol (docs/protocol.md §3.6, §4.7 and §7):
// pushed to each subscribing protocol session from its own cursor, and replayed by
// process/read.
//
//   ring wakes ─► push(p) ─► push_to(p, each connected subscriber)
//     cursor ─► ring.read_from ─► [process/gap] ─► process/output (one chunk per seq, base64)
//            ─► process/exited (may precede trailing output) ─► process/closed (last)
//
// Flow control: when a subscriber's connection is above its high watermark the push stops
// there (the cursor stays), the connection stops reading requests, and the owner's child is
// paused instead of letting its ring evict output; on_drained() resumes everything the
// session watches once the queue is below the low watermark. Bytes evicted before a cursor
// reached them are reported as a `process/gap` (extensions only). The ring is never copied:
// each push encodes straight from its pages into one outbound line.
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "rpc/process_table.h"

namespace uexec::rpc {

class OutputPump {
 public:
  explicit OutputPump(ProcessTable& table) noexcept : table_(table) {}

  // Pushes what each connected subscriber of `p` has not had yet.
  void push(ProtocolProcess& p);
  // `session`'s connection drained below the low watermark: resumes the children its pushes
  // paused, and pushes every process it subscribes to (its own and other sessions').
  void on_drained(ProtocolSession& session);

  // process/read's result: the chunks after `after_seq`, up to about `max_bytes`, with the
  // evicted middle (`omitted`), the state and the verdict.
  // `timestamps` (process/read's uexec extension): each chunk also carries `atMs`, when it
  // was read in ms after the process started.
  static nlohmann::json read(const session::Session& s, session::Seq after_seq, std::size_t max_bytes,
                             bool timestamps = false);

 private:
  void push_to(ProtocolProcess& p, ProtocolSession& to, SubscriberCursor& cursor);

  ProcessTable& table_;
};

}  // namespace uexec::rpc
