#include "holder/holder_link.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "base/log.h"
#include "holder/carry_file.h"
#include "holder/handover_json.h"
#include "holder/holder_wire.h"

namespace uexec::holder {

using base::Error;
using base::Result;
using base::UniqueFd;
using nlohmann::json;

HolderLink::HolderLink(loop::Loop& loop, session::ProcessManager& pm, UniqueFd fd)
    : loop_(&loop), pm_(&pm), fd_(std::move(fd)), next_turn_(loop) {}

HolderLink::~HolderLink() {
  if (table_) ::munmap(table_, slots_ * sizeof(session::SeqMirror));
}

Result<std::unique_ptr<HolderLink>> HolderLink::connect(loop::Loop& loop, session::ProcessManager& pm, UniqueFd fd,
                                                        std::chrono::milliseconds wait,
                                                        std::vector<Adoptee>* adoptees) {
  std::unique_ptr<HolderLink> self(new HolderLink(loop, pm, std::move(fd)));
  auto next = [&]() -> Result<Message> {
    pollfd p{self->fd_.get(), POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(wait.count()));
    if (n == 0) return Error{base::Errc::kLimit, 0, "the holder sent nothing within " + std::to_string(wait.count()) + " ms"};
    return receive(self->fd_.get(), /*wait=*/true);
  };
  auto hello = next();
  if (!hello) return std::move(hello).error();
  if (hello->body["op"] != "hello") return Error::invalid("the holder's first message is not hello");
  UniqueFd table = hello->take("table");
  self->holder_wire_ = hello->body.value("wire", 1);
  self->slots_ = std::min<std::size_t>(hello->body.value("slots", std::size_t{0}), std::size_t{1} << 20);
  self->holder_pid_ = hello->body.value("holder", 0);
  if (!table || self->slots_ == 0) return Error::invalid("the holder's hello has no counters table");
  void* map = ::mmap(nullptr, self->slots_ * sizeof(session::SeqMirror), PROT_READ | PROT_WRITE, MAP_SHARED,
                     table.get(), 0);
  if (map == MAP_FAILED) return Error::sys("mmap the holder's counters table");
  self->table_ = static_cast<session::SeqMirror*>(map);
  // For an upgrade the first adopts come while the daemon before still runs; what changed
  // since (release, stdin, exit, more adopts) and what it carried follow, adopted last.
  std::deque<Adoptee> got;  // no moves as it grows: an Adoptee is large
  std::unordered_map<std::string, std::size_t> index;
  UniqueFd carry;
  for (;;) {
    auto m = next();
    if (!m) return std::move(m).error();
    const json& b = m->body;
    const std::string op = b["op"].get<std::string>();
    const std::string key = b.value("key", std::string());
    auto it = index.find(key);
    Adoptee* known = it == index.end() ? nullptr : &got[it->second];
    if (op == "adopted") {
      carry = m->take("carry");
      for (const char* name : kListeners) self->listeners_[name] = m->take(name);
      break;
    } else if (op == "release" && known) {
      known->handover.pid = -1;  // let go meanwhile: dropped below
    } else if (op == "stdin" && known) {
      known->handover.fds.stdin_pipe = m->take("stdin");
    } else if (op == "exit" && known && !known->handover.exit) {
      known->handover.exit = read_exit(b.value("exit", json()));
    } else if (op == "adopt" && !key.empty()) {
      Adoptee a;
      a.slot = b.value("slot", self->slots_);
      a.handover.id = key;
      a.handover.pid = b.value("pid", -1);
      const json meta = b.value("meta", json::object());
      read_facts(meta, a.handover);
      a.owner = meta.value("owner", json());
      take_fds(*m, a.handover.fds);
      if (b.contains("exit")) a.handover.exit = read_exit(b["exit"]);
      self->pm_->prepare_adopt(a.handover);  // an upgrade's early adopts: while the daemon before serves
      if (known) *known = std::move(a);
      else index.emplace(key, got.size()), got.push_back(std::move(a));
    }
  }
  std::unordered_map<std::string, CarriedSession> carried;
  if (carry) {
    auto c = read_carry(carry.get());
    if (c) carried = std::move(*c);
    else UEXEC_LOG(kWarn, "an upgrade's carried output is lost: {}", c.error().message());
  }
  // The counters are read last: until the daemon before stopped, they moved.
  adoptees->reserve(adoptees->size() + got.size() + carried.size());
  std::vector<bool> used(self->slots_, false);
  for (Adoptee& a : got) {
    if (a.handover.pid <= 0) continue;
    if (auto c = carried.find(a.handover.id); c != carried.end()) {
      a.handover.carried = std::move(c->second.state);
      carried.erase(c);
      // The old daemon had reaped it (its end not yet published): the end comes with it.
      if (!a.handover.exit && a.handover.carried->exit) a.handover.exit = a.handover.carried->exit;
    }
    if (a.slot < self->slots_ && !used[a.slot]) {
      const session::SeqMirror& c = self->table_[a.slot];
      a.handover.next_seq = std::max<std::uint64_t>(c.next_seq.load(std::memory_order_relaxed), 1);
      a.handover.total = c.total.load(std::memory_order_relaxed);
      a.handover.newlines = c.newlines.load(std::memory_order_relaxed);
      used[a.slot] = true;
    } else {
      a.slot = self->slots_;  // no counters: it continues from 0, the loss unmeasured
    }
    adoptees->push_back(std::move(a));
  }
  // Sessions that had finished before an upgrade: from their facts, with their end; never held.
  for (auto& [key, cs] : carried) {
    if (cs.facts.empty() || cs.pid <= 0 || !cs.state.exit) continue;
    const json facts = json::parse(cs.facts, nullptr, /*allow_exceptions=*/false);
    Adoptee a;
    a.slot = self->slots_;
    a.handover.id = key;
    a.handover.pid = cs.pid;
    read_facts(facts, a.handover);
    a.handover.late_deny.clear();  // nothing runs to mask for
    a.owner = facts.is_object() ? facts.value("owner", json()) : json();
    a.handover.exit = cs.state.exit;
    a.handover.next_seq = cs.state.next_seq;
    a.handover.total = cs.state.ring.total;
    a.handover.newlines = cs.state.ring.newlines;
    a.handover.carried = std::move(cs.state);
    self->finished_.insert(key);
    adoptees->push_back(std::move(a));
  }
  for (std::size_t i = self->slots_; i-- > 0;)  // the lowest last: handed out first
    if (!used[i]) self->free_.push_back(i);
  return self;
}

Result<void> HolderLink::start() {
  int fd = fd_.get();
  // From now on a holder that does not read (stopped, say) costs sessions their copies, never
  // the loop a blocked send: a full link fails the send (EAGAIN), which is logged once.
  if (int fl = ::fcntl(fd, F_GETFL); fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
    return Error::sys("fcntl O_NONBLOCK holder link");
  auto poll = loop::make_handle<uv_poll_t>([&](uv_poll_t* p) { return uv_poll_init(loop_->get(), p, fd); },
                                           "uv_poll_init holder link");
  if (!poll) return std::move(poll).error();
  poll_ = std::move(poll).value();
  poll_.get()->data = this;
  if (int rc = uv_poll_start(poll_.get(), UV_READABLE | UV_DISCONNECT, &HolderLink::on_poll); rc < 0)
    return Error::uv(rc, "uv_poll_start holder link");
  return {};
}

void HolderLink::arm(bool writable) {
  if (!poll_ || writable == writable_armed_) return;
  writable_armed_ = writable;
  uv_poll_start(poll_.get(), UV_READABLE | UV_DISCONNECT | (writable ? UV_WRITABLE : 0), &HolderLink::on_poll);
}

void HolderLink::on_poll(uv_poll_t* h, int /*status*/, int events) noexcept {
  auto* self = static_cast<HolderLink*>(h->data);
  if (!self) return;
  if (events & UV_WRITABLE) self->flush_queue();
  if (self->fd_) self->read_messages();
}

void HolderLink::flush_queue() {
  while (fd_ && !queue_.empty()) {
    Queued& q = queue_.front();
    std::vector<int> fds;
    for (const auto& f : q.fds) fds.push_back(f.get());
    auto r = send_text(fd_.get(), q.text, fds);
    if (!r && r.error().sys_errno == EAGAIN) return;  // still full: the next writable
    if (!r) return lost();
    queue_.pop_front();
  }
  arm(false);
}

void HolderLink::read_messages() {
  while (fd_) {
    auto m = receive(fd_.get(), /*wait=*/false);
    if (!m) {
      if (m.error().code == base::Errc::kLimit) return;
      if (m.error().code == base::Errc::kInvalidArgument) continue;
      return lost();
    }
    if (m->body["op"] == "exited") pm_->deliver_exit(m->body.value("pid", -1), read_exit(m->body.value("exit", json())));
    if (m->body["op"] == "upgrade" && on_upgrade) return on_upgrade();
  }
}

void HolderLink::lost() {
  UEXEC_LOG(kWarn, "the holder (pid {}) is gone: sessions now end with the daemon, and those it reaped end with "
                   "an unknown status",
            holder_pid_);
  poll_.close();
  fd_.reset();
  pm_->reaper_lost();
  if (on_holder_lost) on_holder_lost();
}

bool HolderLink::send(const json& body, std::span<const int> fds) {
  if (!fd_) return false;
  std::string text = encode(body);
  if (queue_.empty()) {
    auto r = send_text(fd_.get(), text, fds);
    if (r) return true;
    if (r.error().sys_errno != EAGAIN) {
      if (!warned_) UEXEC_LOG(kWarn, "holder link: {}; sessions started now are not held", r.error().message());
      warned_ = true;
      return false;
    }
  }
  // The link is full (a burst): queued, with copies of the fds (the session may close its own
  // before the link drains, and its numbers be reused).
  if (queue_.size() >= kMaxQueued) {
    if (!warned_) UEXEC_LOG(kWarn, "holder link: {} messages wait for the holder; sessions started now are not held",
                            queue_.size());
    warned_ = true;
    return false;
  }
  Queued q{std::move(text), {}};
  for (int fd : fds) {
    q.fds.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
    if (!q.fds.back()) return false;
  }
  queue_.push_back(std::move(q));
  arm(true);
  return true;
}

json HolderLink::facts_of(session::Session& s) const {
  session::Handover h;
  if (!s.describe(h)) return json::object();
  if (const auto* p = s.process()) h.fds.files = p->listener_files();
  json facts = facts_json(h);
  if (owner_of) facts["owner"] = owner_of(s);
  return facts;
}

void HolderLink::expect(const std::string& key, std::size_t slot) {
  if (slot < slots_) expected_[key] = slot;
}

UniqueFd HolderLink::take_listener(const std::string& name) {
  auto it = listeners_.find(name);
  return it == listeners_.end() ? UniqueFd() : std::move(it->second);
}

void HolderLink::release(const std::string& key) { send({{"op", "release"}, {"key", key}}); }

Result<void> HolderLink::hand_over(const std::vector<std::pair<std::string, CarriedSession>>& carried,
                                   const std::vector<std::pair<std::string, int>>& stdin_pipes,
                                   const std::vector<std::pair<std::string, int>>& listeners) {
  if (!fd_) return Error{base::Errc::kClosed, 0, "no holder"};
  if (holder_wire_ < 2) return Error::invalid("the holder predates upgrades (restart the service to get a new one)");
  const int fd = fd_.get();
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) return Error::sys("fcntl blocking holder link");
  auto send_all = [&]() -> Result<void> {
    for (; !queue_.empty(); queue_.pop_front()) {
      std::vector<int> fds;
      for (const auto& f : queue_.front().fds) fds.push_back(f.get());
      if (auto r = send_text(fd, queue_.front().text, fds); !r) return r;
    }
    for (const auto& [key, pipe] : stdin_pipes)
      if (auto r = holder::send(fd, {{"op", "stdin"}, {"key", key}, {"fds", {"stdin"}}}, std::span<const int>(&pipe, 1));
          !r)
        return r;
    auto file = write_carry(carried);
    if (!file) return std::move(file).error();
    std::vector<int> fds{file->get()};
    json names = {"carry"};
    for (const auto& [name, listener] : listeners)
      if (listener >= 0) fds.push_back(listener), names.push_back(name);
    return holder::send(fd, {{"op", "carried"}, {"fds", names}}, fds);
  };
  auto r = send_all();
  if (!r) ::fcntl(fd, F_SETFL, fl);  // this daemon goes on: its sends must not block again
  return r;
}

void HolderLink::on_started(session::Session& s) {
  if (!fd_ || slot_of_.count(s.id()) || finished_.erase(s.id())) return;
  std::size_t slot;
  if (auto it = expected_.find(s.id()); it != expected_.end()) {
    // Taken over: the holder keeps its fds and facts already; only the mirror starts again.
    slot = it->second;
    expected_.erase(it);
    table_[slot].in_use.store(1, std::memory_order_relaxed);
    s.set_mirror(&table_[slot]);
    slot_of_[s.id()] = slot;
    return;
  } else if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    if (!warned_) UEXEC_LOG(kWarn, "holder: all {} slots are in use; session {} is not held", slots_, s.id());
    warned_ = true;
    return;
  }
  table_[slot].in_use.store(1, std::memory_order_relaxed);
  s.set_mirror(&table_[slot]);
  pty::HeldFds held;
  if (auto* p = s.process()) held = p->held_fds();
  held.mask_requests = s.mask_requests();
  json names;
  std::vector<int> fds;
  name_fds(held, names, fds);
  slot_of_[s.id()] = slot;
  send({{"op", "hold"}, {"key", s.id()}, {"pid", s.pid()}, {"slot", slot}, {"meta", facts_of(s)}, {"fds", names}}, fds);
  refresh_.push_back(s.id());
  if (!next_turn_.active()) next_turn_.start(std::chrono::milliseconds{0}, [this] { send_facts(); });
}

void HolderLink::send_facts() {
  auto ids = std::move(refresh_);
  refresh_.clear();
  for (const auto& id : ids) {
    if (!slot_of_.count(id)) continue;
    if (session::Session* s = pm_->find(id)) send({{"op", "meta"}, {"key", id}, {"meta", facts_of(*s)}});
  }
}

void HolderLink::on_closed(session::Session& s) {
  auto it = slot_of_.find(s.id());
  if (it == slot_of_.end()) return;
  s.set_mirror(nullptr);
  table_[it->second].in_use.store(0, std::memory_order_relaxed);
  free_.push_back(it->second);
  slot_of_.erase(it);
  send({{"op", "release"}, {"key", s.id()}});
}

void HolderLink::on_removed(session::Session& s) { on_closed(s); }

}  // namespace uexec::holder
