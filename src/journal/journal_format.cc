#include "journal/journal_format.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>

#include <fmt/core.h>

#include "base/unique_fd.h"
#include "policy/control_registry.h"

namespace uexec::journal {

using base::Error;
using base::Result;
using nlohmann::json;

namespace {

// The whole file at `dir`/`name` (at most `max` bytes), or nullopt.
std::optional<std::string> read_file(const std::string& path, std::size_t max) {
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max) return std::nullopt;
  }
  return out;
}

}  // namespace

namespace {

// Drops every member of `obj` whose type is not the one the format gives it, so that readers
// can use json::value() on a file someone edited or a disk damaged without a type error.
void keep_typed(json& obj, std::initializer_list<const char*> strings, std::initializer_list<const char*> integers,
                std::initializer_list<const char*> booleans) {
  for (const char* k : strings)
    if (obj.contains(k) && !obj[k].is_string()) obj.erase(k);
  for (const char* k : integers)
    if (obj.contains(k) && !obj[k].is_number_integer()) obj.erase(k);
  for (const char* k : booleans)
    if (obj.contains(k) && !obj[k].is_boolean()) obj.erase(k);
}

void keep_typed_object(json& parent, const char* key, std::initializer_list<const char*> strings,
                       std::initializer_list<const char*> integers, std::initializer_list<const char*> booleans) {
  if (!parent.contains(key)) return;
  if (!parent[key].is_object()) {
    parent.erase(key);
    return;
  }
  keep_typed(parent[key], strings, integers, booleans);
}

}  // namespace

std::optional<json> read_meta(const std::string& dir) {
  auto text = read_file(dir + "/" + kMetaFile, 1 << 20);
  if (!text) return std::nullopt;
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  keep_typed(j, {"id", "sessionId", "processId", "name", "cwd", "sandbox"},
             {"version", "agentSessionId", "pid", "startedAtMs"}, {"tty"});
  if (j.contains("argv") && !j["argv"].is_array()) j.erase("argv");
  keep_typed_object(j, "size", {}, {"rows", "cols"}, {});
  keep_typed_object(j, "daemon", {}, {"pid", "startTime"}, {});
  keep_typed_object(j, "end", {"reason", "endedBy", "endedByMessage"},
                    {"totalBytes", "exitCode", "signal", "exitedAtMs"}, {"denied"});
  return j;
}

namespace {

// The records of one segment, appended to `out`; false when it ended on a torn record.
bool read_segment(const std::string& data, std::vector<Chunk>& out) {
  std::size_t at = 0;
  while (at + sizeof(RecordHeader) <= data.size()) {
    RecordHeader h;
    std::memcpy(&h, data.data() + at, sizeof h);
    if (h.magic != kRecordMagic || h.length > kMaxRecordBytes) return false;
    if (at + sizeof h + h.length > data.size()) return false;
    Chunk c;
    c.seq = h.seq;
    c.offset = h.offset;
    c.at_ms = h.at_ms;
    c.stream = h.stream;
    c.bytes.assign(data.data() + at + sizeof h, h.length);
    out.push_back(std::move(c));
    at += sizeof h + h.length;
  }
  return at == data.size();
}

}  // namespace

bool daemon_alive(const json& meta) {
  const json d = meta.value("daemon", json::object());
  const long pid = d.is_object() ? d.value("pid", 0L) : 0L;
  const unsigned long long start = d.is_object() ? d.value("startTime", 0ULL) : 0ULL;
  return pid > 0 && start != 0 && policy::process_start_time(static_cast<pid_t>(pid)) == start;
}

std::string default_root() { return policy::default_journal_root(); }

std::string segment_name(std::uint64_t n) { return fmt::format("{:06}.out", n); }

long long segment_number(const std::string& file) {
  if (file.size() < 5 || file.compare(file.size() - 4, 4, ".out") != 0) return -1;
  std::string digits = file.substr(0, file.size() - 4);
  if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

Result<Contents> read_journal(const std::string& dir) {
  Contents c;
  c.dir = dir;
  auto meta = read_meta(dir);
  if (!meta) return Error::sys("read " + dir + "/" + kMetaFile, errno ? errno : EINVAL);
  c.meta = std::move(*meta);
  std::vector<long long> segments;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (long long n = segment_number(e->d_name); n >= 0) segments.push_back(n);
    ::closedir(d);
  }
  std::sort(segments.begin(), segments.end());
  for (long long n : segments) {
    auto data = read_file(dir + "/" + segment_name(static_cast<std::uint64_t>(n)), 1ull << 31);
    if (!data) continue;  // deleted while we read: its bytes count as missing below
    if (!read_segment(*data, c.chunks)) c.torn = true;
  }
  std::stable_sort(c.chunks.begin(), c.chunks.end(), [](const Chunk& a, const Chunk& b) { return a.offset < b.offset; });
  std::uint64_t expect = 0;
  for (auto& ch : c.chunks) {
    if (ch.offset > expect) ch.missing_before = ch.offset - expect;
    c.missing += ch.missing_before;
    expect = std::max(expect, ch.offset + ch.bytes.size());
  }
  const json end = c.meta.value("end", json());
  if (end.is_object()) {
    const std::uint64_t total = end.value("totalBytes", 0ULL);
    if (total > expect) c.missing += total - expect;
  }
  return c;
}

std::vector<Listed> list_journals(const std::string& root) {
  std::vector<std::string> keys;
  if (DIR* d = ::opendir(root.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') keys.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(keys.begin(), keys.end(), std::greater<>());  // keys start with the start time
  std::vector<Listed> out;
  for (const auto& k : keys)
    if (auto meta = read_meta(root + "/" + k)) out.push_back({root + "/" + k, std::move(*meta)});
  return out;
}

std::optional<long> agent_session_id(const json& meta) {
  auto it = meta.find("agentSessionId");
  if (it == meta.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<long>();
}

std::optional<Listed> find_agent_journal(const std::string& root, long id) {
  for (auto& l : list_journals(root))
    if (agent_session_id(l.meta) == id) return std::move(l);
  return std::nullopt;
}

std::optional<Listed> find_journal(const std::string& root, const std::string& id) {
  std::string sess_part, proc_part = id;
  if (auto slash = id.find('/'); slash != std::string::npos) {
    sess_part = id.substr(0, slash);
    proc_part = id.substr(slash + 1);
  }
  std::optional<Listed> named;
  for (auto& l : list_journals(root)) {
    const std::string pid = l.meta.value("processId", ""), sid = l.meta.value("sessionId", "");
    const auto agent_id = agent_session_id(l.meta);
    const bool agent_hit = agent_id && sess_part.empty() && std::to_string(*agent_id) == id;
    if ((pid == proc_part && (sess_part.empty() || sid.rfind(sess_part, 0) == 0)) || agent_hit) return l;
    if (!named && sess_part.empty() && l.meta.value("name", "") == id && !id.empty()) named = std::move(l);
  }
  return named;
}

std::string ending_text(const json& meta) {
  const json end = meta.value("end", json());
  if (!end.is_object()) {
    const json d = meta.value("daemon", json::object());
    const long pid = d.is_object() ? d.value("pid", 0L) : 0L;
    if (daemon_alive(meta)) return fmt::format("still running in the daemon with pid {}", pid);
    return fmt::format("its end was not recorded: the daemon that ran it (pid {}) stopped first", pid);
  }
  std::string text;
  if (end.contains("signal") && end["signal"].is_number_integer()) {
    const int sig = end["signal"].get<int>();
    const char* abbrev = ::sigabbrev_np(sig);
    text = fmt::format("killed by signal {}{}", sig, abbrev ? fmt::format(" (SIG{})", abbrev) : "");
  } else {
    text = fmt::format("exited with code {}", end.value("exitCode", -1));
  }
  if (end.value("reason", "") == "removed") text += ", removed from the daemon while it ran";
  if (const std::string by = end.value("endedByMessage", ""); !by.empty()) text += " (" + by + ")";
  if (end.value("denied", false)) text += "; the sandbox denied it";
  return text;
}

}  // namespace uexec::journal
