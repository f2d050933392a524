// holder_link.h: the daemon's side of its holder (holder.h).
//
// connect() reads what the holder sends a starting daemon: the counters table (mapped here,
// shared with the holder) and the sessions an earlier daemon left (Adoptee), which the caller
// gives to ProcessManager::adopt and then to its front door. As a SessionRecorder the link then
// tells the holder of every session the manager starts or takes over (hold: copies of its fds,
// its facts, its counters' slot, the slot mirrored by the Session on every chunk), of its facts
// again on the next loop turn (the front door names it and says who owns it just after the
// start), and of its end (release). From the holder it hears that a taken-over leader, the
// holder's child now, exited (delivered to the manager's reaper), and, by the link closing,
// that the holder is gone: the taken-over sessions then end with an unknown status, and
// on_holder_lost runs (the daemon takes its lock itself).
// An upgrade (holder_wire.h's upgrade, from SIGUSR2 to the holder) runs on_upgrade; the host
// then gives hand_over() what every session carries, and leaves. The next daemon's connect()
// finds it with its adoptees (Handover::carried) and the listening sockets to serve on.
// Sends never block once start()ed: a send that fails (a full link, the holder gone) is logged
// once, and that session goes on unheld; hand_over() alone blocks. Loop thread only.
#pragma once

#include <chrono>
#include <deque>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"
#include "holder/carry_file.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "loop/uv_handle.h"
#include "session/handover.h"
#include "session/process_manager.h"
#include "session/seq_mirror.h"
#include "session/session_recorder.h"

namespace uexec::holder {

// A session an earlier daemon left, as the holder returned it.
struct Adoptee {
  session::Handover handover;
  std::size_t slot = 0;
  nlohmann::json owner;  // what the front door said of it (owner_of), or null
};

class HolderLink final : public session::SessionRecorder {
 public:
  // Reads the holder's hello and adoptees from `fd` (blocking, each message within `wait`).
  [[nodiscard]] static base::Result<std::unique_ptr<HolderLink>> connect(
      loop::Loop& loop, session::ProcessManager& pm, base::UniqueFd fd, std::chrono::milliseconds wait,
      std::vector<Adoptee>* adoptees);
  ~HolderLink();
  HolderLink(const HolderLink&) = delete;
  HolderLink& operator=(const HolderLink&) = delete;

  // `slot` is the adoptee `key`'s: its on_started keeps it and sends nothing (the holder has
  // its fds and facts already). Call before ProcessManager::adopt.
  void expect(const std::string& key, std::size_t slot);
  // An adoptee the daemon could not take over: the holder lets go of it.
  void release(const std::string& key);
  // The listening socket `name` ("unix", "ws": holder_wire.h's kListeners) an upgraded daemon
  // left (invalid otherwise), taken.
  base::UniqueFd take_listener(const std::string& name);
  // Whether the holder keeps `key`'s fds (only those are handed over running).
  bool holds(const std::string& key) const { return slot_of_.count(key) != 0; }
  // A session's facts as the holder keeps them, with what the front door says of it (owner_of).
  std::string facts_text(session::Session& s) const { return facts_of(s).dump(); }
  // For an upgrade: sends everything queued, the pipes' stdin of `stdin_pipes`, then the carry
  // file of `carried` and the listening sockets `listeners` (by kListeners name; -1: none) with
  // "carried". Blocking. After success this process must leave without ending
  // any session (the next daemon is starting).
  [[nodiscard]] base::Result<void> hand_over(const std::vector<std::pair<std::string, CarriedSession>>& carried,
                                             const std::vector<std::pair<std::string, int>>& stdin_pipes,
                                             const std::vector<std::pair<std::string, int>>& listeners);
  // Watches the link on the loop (exits, the holder's end).
  [[nodiscard]] base::Result<void> start();

  void on_started(session::Session& s) override;
  void on_closed(session::Session& s) override;
  void on_removed(session::Session& s) override;

  // What a front door says of a session (its protocol session, its agent id): kept with its
  // facts and handed back with it as Adoptee::owner.
  std::function<nlohmann::json(const session::Session&)> owner_of;
  // The holder is gone (its link closed).
  std::function<void()> on_holder_lost;
  // The holder asks this daemon to hand over and leave (an upgrade).
  std::function<void()> on_upgrade;

  pid_t holder_pid() const noexcept { return holder_pid_; }
  bool connected() const noexcept { return fd_.valid(); }
  std::size_t held() const noexcept { return slot_of_.size(); }

 private:
  HolderLink(loop::Loop& loop, session::ProcessManager& pm, base::UniqueFd fd);
  static void on_poll(uv_poll_t* h, int status, int events) noexcept;
  void read_messages();
  void flush_queue();
  void arm(bool writable);
  void lost();
  void send_facts();  // the next turn's meta messages
  nlohmann::json facts_of(session::Session& s) const;
  bool send(const nlohmann::json& body, std::span<const int> fds = {});

  loop::Loop* loop_;
  session::ProcessManager* pm_;
  base::UniqueFd fd_;
  loop::UvHandle<uv_poll_t> poll_;
  pid_t holder_pid_ = 0;
  int holder_wire_ = 1;
  std::unordered_map<std::string, base::UniqueFd> listeners_;
  session::SeqMirror* table_ = nullptr;
  std::size_t slots_ = 0;
  std::vector<std::size_t> free_;                         // free slots, the lowest last
  std::unordered_map<std::string, std::size_t> slot_of_;  // held sessions
  std::unordered_map<std::string, std::size_t> expected_;
  std::unordered_set<std::string> finished_;  // adoptees that had finished before an upgrade: never held
  std::vector<std::string> refresh_;  // sessions whose facts go again on the next turn
  loop::Timer next_turn_;
  // Messages the link could not take at once (a burst of starts), with copies of their fds,
  // sent in order as it drains; bounded (kMaxQueued), past it a session goes unheld.
  struct Queued {
    std::string text;
    std::vector<base::UniqueFd> fds;
  };
  static constexpr std::size_t kMaxQueued = 8192;
  std::deque<Queued> queue_;
  bool writable_armed_ = false;
  bool warned_ = false;
};

}  // namespace uexec::holder
