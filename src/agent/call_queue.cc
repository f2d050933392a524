#include "agent/call_queue.h"

#include <algorithm>

namespace uexec::agent {

using std::chrono::milliseconds;

Call& CallQueue::create(CallKind kind, long sid, Reply reply) {
  CallId id = next_id_++;
  auto [it, fresh] = calls_.emplace(id, std::make_unique<Call>(loop_, id, kind, sid, std::move(reply)));
  return *it->second;
}

Call* CallQueue::find(CallId id) {
  auto it = calls_.find(id);
  return it == calls_.end() ? nullptr : it->second.get();
}

void CallQueue::enqueue(Call& c) {
  auto& q = fifo_[c.sid];
  q.push_back(c.id);
  if (q.size() == 1) {
    c.started = true;
    on_turn(c);
  }
}

void CallQueue::start_next(long sid) {
  Call* next = front(sid);
  if (next && !next->started) {
    next->started = true;
    on_turn(*next);
  }
}

void CallQueue::unqueue(const Call& c) {
  auto q = fifo_.find(c.sid);
  if (q == fifo_.end()) return;
  q->second.erase(std::remove(q->second.begin(), q->second.end(), c.id), q->second.end());
  if (q->second.empty()) fifo_.erase(q);
}

long CallQueue::erase(Call& c) {
  long sid = c.sid;
  unqueue(c);
  calls_.erase(c.id);  // destroys c (and its timer)
  return sid;
}

void CallQueue::cancel(CallId id) {
  Call* c = find(id);
  if (!c) return;
  c->reply = nullptr;
  start_next(erase(*c));
}

void CallQueue::cancel_on(long sid) {
  std::vector<CallId> ids;
  for (const auto& [id, c] : calls_)
    if (c->sid == sid) ids.push_back(id);
  for (CallId id : ids) cancel(id);
}

void CallQueue::step_aside(Call& c) {
  c.started = false;
  c.timer.stop();
  unqueue(c);
  start_next(c.sid);
}

void CallQueue::wake_at(Call& c, Clock::time_point at, Clock::time_point now) {
  auto delay = std::chrono::duration_cast<milliseconds>(at - now) + milliseconds{1};
  CallId id = c.id;
  c.timer.start(std::max(delay, milliseconds{0}), [this, id] {
    if (Call* x = find(id)) on_wake(*x);
  });
}

bool CallQueue::has_queued(long sid) const {
  auto q = fifo_.find(sid);
  return q != fifo_.end() && !q->second.empty();
}

Call* CallQueue::front(long sid) {
  auto q = fifo_.find(sid);
  return q == fifo_.end() || q->second.empty() ? nullptr : find(q->second.front());
}

std::vector<CallId> CallQueue::started_on(long sid) const {
  std::vector<CallId> ids;
  for (const auto& [id, c] : calls_)
    if (c->sid == sid && c->started) ids.push_back(id);
  return ids;
}

void CallQueue::clear() {
  calls_.clear();
  fifo_.clear();
}

}  // namespace uexec::agent
