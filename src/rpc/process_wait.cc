#include "rpc/process_wait.h"

namespace uexec::rpc {

using std::chrono::milliseconds;

ProcessWait::ProcessWait(session::Session& s, agent::Until until, session::Seq after_seq, milliseconds timeout)
    : s_(s), wait_(std::move(until)), input_(agent::Clock::now(), nullptr) {
  auto now = agent::Clock::now();
  std::uint64_t before = 0;
  input_.saw_output(s.output().total(), now, &before);
  wait_.start_at(s.output().offset_after_seq(after_seq), now, milliseconds{0}, timeout);
}

std::optional<ProcessWait::Fired> ProcessWait::check() {
  auto now = agent::Clock::now();
  std::uint64_t before = 0;
  input_.saw_output(s_.output().total(), now, &before);
  if (!wait_.evaluate(s_, input_, kTiming, now).done) return std::nullopt;
  if (const auto& fired = wait_.fired()) {
    if (*fired == "regex") return Fired{"regex", {{"text", wait_.match_text().value_or("")}, {"seq", s_.next_seq() - 1}}};
    return Fired{*fired == "port" ? "portOpen" : *fired, nullptr};
  }
  return Fired{s_.verdict() ? "exit" : "timeout", nullptr};
}

}  // namespace uexec::rpc
