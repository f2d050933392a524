#include "rpc/long_polls.h"

#include <vector>

namespace uexec::rpc {

LongPolls::Waiter& LongPolls::add(const ProtocolProcess* p, bool long_poll, Check check, std::uint64_t& id) {
  id = next_id_++;
  auto w = std::make_unique<Waiter>();
  w->process = p;
  w->long_poll = long_poll;
  w->check = std::move(check);
  w->timer = std::make_unique<loop::Timer>(loop_);
  return *waiters_.emplace(id, std::move(w)).first->second;
}

void LongPolls::add_deadline(const ProtocolProcess* p, Check check, std::chrono::milliseconds deadline) {
  std::uint64_t id = 0;
  Waiter& w = add(p, true, std::move(check), id);
  w.timer->start(deadline, [this, id] { run(id, true); });
}

void LongPolls::add_ticking(const ProtocolProcess* p, bool long_poll, Check check, std::chrono::milliseconds period) {
  std::uint64_t id = 0;
  Waiter& w = add(p, long_poll, std::move(check), id);
  w.timer->start(period, [this, id] { run(id, false); }, period);
}

// The waiter may be gone (answered, dropped) by the time its id comes up; erasing it destroys
// the timer whose callback may be running, which loop::Timer allows.
void LongPolls::run(std::uint64_t id, bool timed_out) {
  auto it = waiters_.find(id);
  if (it != waiters_.end() && it->second->check(timed_out)) waiters_.erase(id);
}

void LongPolls::wake(const ProtocolProcess* p) {
  std::vector<std::uint64_t> ids;
  for (auto& [id, w] : waiters_)
    if (w->process == p) ids.push_back(id);
  for (auto id : ids) run(id, false);
}

void LongPolls::drop(const ProtocolProcess* p) {
  for (auto it = waiters_.begin(); it != waiters_.end();) it = it->second->process == p ? waiters_.erase(it) : std::next(it);
}

std::size_t LongPolls::polls() const noexcept {
  std::size_t n = 0;
  for (const auto& [id, w] : waiters_) n += w->long_poll ? 1 : 0;
  return n;
}

}  // namespace uexec::rpc
