#include "rpc/output_pump.h"

#include <cstdint>
#include <string>

#include "pty/exit_status.h"
#include "pty/pty_process.h"
#include "rpc/agent_tools.h"
#include "rpc/base64.h"
#include "rpc/connection.h"
#include "rpc/verdict_json.h"

namespace uexec::rpc {

using nlohmann::json;

namespace {

// One output chunk: the ring's pieces of one seq (a read(2)), joined.
struct Chunk {
  session::Seq seq = 0;
  pty::Stream stream{};
  std::uint32_t at_ms = 0;
  std::string bytes;
};

// The chunk starting at piece `i` of `r`; `i` moves past it.
Chunk next_chunk(const session::ReadResult& r, std::size_t& i) {
  Chunk c{r.pieces[i].seq, r.pieces[i].stream, r.pieces[i].at_ms, {}};
  while (i < r.pieces.size() && r.pieces[i].seq == c.seq) {
    c.bytes.append(reinterpret_cast<const char*>(r.pieces[i].bytes.data()), r.pieces[i].bytes.size());
    ++i;
  }
  return c;
}

}  // namespace

void OutputPump::push(ProtocolProcess& p) {
  for (auto& [to, cursor] : p.subscribers)
    if (to->connection) push_to(p, *to, cursor);
}

void OutputPump::push_to(ProtocolProcess& p, ProtocolSession& to, SubscriberCursor& st) {
  Connection* c = to.connection;
  const session::Session& s = p.session;
  const auto& ring = s.output();
  session::Seq ex = s.exited_seq(), cl = s.closed_seq();
  // Notifications about another session's process name that session.
  auto params = [&](json j) {
    if (&to != p.owner) j["sessionId"] = p.owner->id;
    return j;
  };
  auto send_exited = [&] {
    json j = {{"processId", p.id}, {"seq", ex}};
    put_exit_status(j, s);
    put_denial(j, s);
    put_ended_by(j, s);
    c->notify("process/exited", params(std::move(j)));
    st.sent_exited = true;
  };
  while (st.cursor < ring.total()) {
    if (!c->writable()) {
      st.lagging = true;
      // Owner flow control (docs/protocol.md §7): a slow owner slows its child, as a slow terminal
      // would, instead of letting the ring evict output. Other subscribers never do.
      if (&to == p.owner && !p.reading_paused) {
        if (auto* proc = p.session.process()) proc->pause_reading();
        p.reading_paused = true;
      }
      return c->resume_when_drained();
    }
    auto r = ring.read_from(st.cursor, SIZE_MAX);
    // Bytes evicted before this subscriber got them: a slow consumer's when its pushes were
    // paused meanwhile, else retention's.
    if (r.gap > 0 && c->extensions())
      c->notify("process/gap", params({{"processId", p.id},
                                       {"fromSeq", st.last_seq ? json(st.last_seq + 1) : json()},
                                       {"toSeq", r.pieces.empty() ? json() : json(r.pieces.front().seq - 1)},
                                       {"bytes", r.gap},
                                       {"reason", st.lagging ? "slowConsumer" : "evicted"}}));
    std::size_t i = 0;
    while (i < r.pieces.size()) {
      Chunk chunk = next_chunk(r, i);
      if (!st.sent_exited && ex && chunk.seq > ex) send_exited();  // exited may precede trailing output
      // The hot path: built by hand (base64 needs no JSON escaping), not through json::dump.
      std::string line = R"({"jsonrpc":"2.0","method":"process/output","params":{"processId":)";
      line += p.id_json;
      if (&to != p.owner) line += R"(,"sessionId":)" + p.owner->id_json;
      line += R"(,"seq":)" + std::to_string(chunk.seq) + R"(,"stream":")" + pty::stream_name(chunk.stream) +
              R"(","chunk":")";
      base64_append(line, chunk.bytes);
      line += "\"}}";
      c->send_raw(std::move(line));
      st.last_seq = chunk.seq;
    }
    if (r.next == st.cursor) break;
    st.cursor = r.next;
  }
  st.lagging = false;  // caught up
  if (!st.sent_exited && ex) send_exited();
  if (st.sent_exited && !st.sent_closed && cl) {
    json closed = params({{"processId", p.id}, {"seq", cl}, {"outputEof", s.output_eof()}});
    if (!s.lingering().empty()) closed["lingering"] = AgentTools::lingering(s.lingering());
    if (s.limits().any()) closed["limitEvents"] = limit_events_json(s);
    c->notify("process/closed", std::move(closed));
    st.sent_closed = true;
  }
}

void OutputPump::on_drained(ProtocolSession& session) {
  for (auto& [pid, p] : session.processes) {
    if (p->reading_paused) {
      p->reading_paused = false;
      if (auto* proc = p->session.process()) proc->resume_reading();
    }
    push(*p);
  }
  // And what it watches of other sessions (a viewer): without this, a viewer that fell
  // behind at the end of a stream would never get the rest, `exited` or `closed`.
  for (auto& [sid, other] : table_.sessions()) {
    if (other.get() == &session) continue;
    for (auto& [pid, p] : other->processes)
      if (p->subscribers.count(&session)) push(*p);
  }
}

json OutputPump::read(const session::Session& s, session::Seq after_seq, std::size_t max_bytes, bool timestamps) {
  const auto& ring = s.output();
  json chunks = json::array();
  std::size_t bytes = 0;
  bool truncated = false;
  session::Seq last = 0;
  // The evicted middle, when this read spans it: after the head's chunks, before the tail's.
  std::uint64_t gap = 0;
  std::optional<session::Seq> gap_from;
  json gap_to;
  // A read of the ring stops at the evicted middle; the tail is a second one.
  for (session::Offset cursor = ring.offset_after_seq(after_seq); cursor < ring.total() && !truncated;) {
    auto r = ring.read_from(cursor, SIZE_MAX);
    if (r.gap > 0) {
      gap += r.gap;
      gap_from = last ? last + 1 : after_seq + 1;
    }
    std::size_t i = 0;
    while (i < r.pieces.size()) {
      if (r.pieces[i].seq <= after_seq) {  // a merged index entry can start below after_seq
        ++i;
        continue;
      }
      if (!chunks.empty() && bytes >= max_bytes) {
        truncated = true;
        break;
      }
      Chunk chunk = next_chunk(r, i);
      if (gap_from && gap_to.is_null()) gap_to = chunk.seq - 1;
      bytes += chunk.bytes.size();
      last = chunk.seq;
      chunks.push_back(
          {{"seq", chunk.seq}, {"stream", pty::stream_name(chunk.stream)}, {"chunk", base64_encode(chunk.bytes)}});
      if (timestamps) chunks.back()["atMs"] = chunk.at_ms;
    }
    if (r.next <= cursor) break;
    cursor = r.next;
  }
  json out = {{"chunks", chunks},
              {"nextSeq", truncated ? last + 1 : s.next_seq()},
              {"exited", s.verdict().has_value()},
              {"closed", s.finished()},
              {"failure", nullptr}};
  put_exit_status(out, s);
  put_denial(out, s);
  // Cut by maxBytes right at the evicted middle: the next read (from nextSeq) reports it.
  if (truncated && gap > 0 && gap_to.is_null()) gap = 0;
  out["omitted"] = gap > 0 ? json{{"fromSeq", *gap_from}, {"toSeq", gap_to}, {"bytes", gap}} : json();
  return out;
}

}  // namespace uexec::rpc
