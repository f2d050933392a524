#include "rpc/process_wait.h"

#include <algorithm>

#include "agent/client_regex.h"
#include "agent/probes.h"
#include "session/utf8_cut.h"

namespace uexec::rpc {

using std::chrono::milliseconds;

ProcessWait::ProcessWait(const session::Session& s, Until until, session::Seq after_seq, milliseconds timeout)
    : s_(s),
      until_(std::move(until)),
      from_(s.output().offset_after_seq(after_seq)),
      timeout_(timeout),
      start_(session::Clock::now()),
      last_total_(s.output().total()),
      last_output_(start_) {}

// The first line (of the output since afterSeq, ANSI stripped, each line's last 64 KiB) the
// regex finds: {text, seq}.
std::optional<nlohmann::json> ProcessWait::regex_match() const {
  std::string text = s_.output().read_from(from_, SIZE_MAX).text();
  std::string clean = session::lossy_decode(agent::strip_ansi(text));
  std::size_t pos = 0;
  while (pos <= clean.size()) {
    std::size_t nl = clean.find('\n', pos);
    std::string line = clean.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line.size() > 65536) line = line.substr(line.size() - 65536);
    std::smatch m;
    if (std::regex_search(line, m, *until_.regex))
      return nlohmann::json{{"text", m.str(0)}, {"seq", s_.next_seq() - 1}};
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return std::nullopt;
}

std::optional<ProcessWait::Fired> ProcessWait::check(bool timed_out) {
  const auto& ring = s_.output();
  auto now = session::Clock::now();
  if (ring.total() != last_total_) {
    last_total_ = ring.total();
    last_output_ = now;
  }
  if (until_.regex)
    if (auto m = regex_match()) return Fired{"regex", std::move(*m)};
  if (until_.bytes && ring.total() - from_ >= *until_.bytes) return Fired{"bytes", nullptr};
  if (until_.port && agent::find_listener(s_.pid(), static_cast<int>(*until_.port))) return Fired{"portOpen", nullptr};
  if (s_.verdict()) {
    // Let trailing output arrive (up to kExitSettle) before reporting the exit.
    if (s_.finished() || now - s_.exited_at() >= kExitSettle) return Fired{"exit", nullptr};
    return std::nullopt;
  }
  if (until_.idle_ms && now - std::max(start_, last_output_) >= milliseconds{*until_.idle_ms})
    return Fired{"idle", nullptr};
  if (timed_out || now - start_ >= timeout_) return Fired{"timeout", nullptr};
  return std::nullopt;
}

}  // namespace uexec::rpc
