// The journal's files: what JournalWriter writes, read back with journal_format.h. No loop:
// the writer's own thread does the writing and flush() waits for it.
#include <doctest/doctest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "journal/journal_format.h"
#include "journal/journal_writer.h"
#include "policy/control_registry.h"
#include "helpers/temp_dir.h"

using namespace uexec::journal;

namespace {

// A journal root that does not exist yet (the writer creates it), in a fresh directory.
struct TempRoot {
  uexec::test::TempDir parent{"uexec-journal-test"};
  std::string path = parent / "journal";
};

std::string meta(const std::string& process, const std::string& extra = "") {
  return "{\"version\":1,\"id\":\"abcd1234/" + process + "\",\"sessionId\":\"abcd1234\",\"processId\":\"" + process +
         "\",\"argv\":[\"sh\"],\"tty\":false,\"startedAtMs\":1000,\"daemon\":{\"pid\":" + std::to_string(::getpid()) +
         ",\"startTime\":" + std::to_string(uexec::policy::process_start_time(::getpid())) + "}" + extra + "}";
}

std::string end_meta(const std::string& process, std::uint64_t total, int code, const std::string& extra = "") {
  return meta(process, extra + ",\"end\":{\"reason\":\"exited\",\"totalBytes\":" + std::to_string(total) +
                           ",\"exitCode\":" + std::to_string(code) + "}");
}

// Appends `data` as records of `piece` bytes from `offset` on.
void append_all(JournalWriter& w, JournalWriter::Id id, const std::string& data, std::size_t piece,
                std::uint64_t offset = 0, std::uint64_t seq = 1) {
  for (std::size_t at = 0; at < data.size(); at += piece, ++seq) {
    const std::size_t n = std::min(piece, data.size() - at);
    RecordHeader h;
    h.length = static_cast<std::uint32_t>(n);
    h.seq = seq;
    h.offset = offset + at;
    h.at_ms = static_cast<std::uint32_t>(seq);
    w.append(id, h, std::as_bytes(std::span(data.data() + at, n)));
  }
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 991) % 26);
  return s;
}

std::string joined(const Contents& c) {
  std::string out;
  for (const auto& ch : c.chunks) out += ch.bytes;
  return out;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("journal: what is written is read back, with the end") {
  TempRoot root;
  auto w = JournalWriter::open(root.path, Limits{});
  REQUIRE(w);
  const std::string data = pattern(100000);
  auto id = (*w)->begin(1700000000000, meta("p1"));
  append_all(**w, id, data, 4096);
  (*w)->end(id, end_meta("p1", data.size(), 3));
  (*w)->flush();

  struct stat st {};
  REQUIRE(::stat(root.path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  auto listed = list_journals(root.path);
  REQUIRE(listed.size() == 1);
  CHECK(::stat(listed[0].dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  auto got = read_journal(listed[0].dir);
  REQUIRE(got);
  CHECK(joined(*got) == data);
  CHECK(got->missing == 0);
  CHECK_FALSE(got->torn);
  CHECK(got->chunks.front().seq == 1);
  CHECK(ending_text(got->meta) == "exited with code 3");
  CHECK((*w)->total_bytes() > data.size());
  CHECK((*w)->dropped_bytes() == 0);
}

TEST_CASE("journal: a process's journal keeps its head and its tail, and counts what it cut") {
  TempRoot root;
  Limits limits;
  limits.process_bytes = 64 * 1024;  // head 16 KiB, tails 24 KiB each
  auto w = JournalWriter::open(root.path, limits);
  REQUIRE(w);
  const std::string data = pattern(1 << 20);
  auto id = (*w)->begin(1700000000000, meta("big"));
  append_all(**w, id, data, 1000);
  (*w)->end(id, end_meta("big", data.size(), 0));
  (*w)->flush();

  auto listed = list_journals(root.path);
  REQUIRE(listed.size() == 1);
  auto files = entries(listed[0].dir);
  // meta.json, the head and two tails; nothing else (no meta.json.tmp left).
  REQUIRE(files.size() == 4);
  CHECK(files[0] == "000000.out");
  CHECK(files[3] == "meta.json");
  std::uint64_t on_disk = 0;
  for (const auto& f : files) on_disk += std::filesystem::file_size(listed[0].dir + "/" + f);
  CHECK(on_disk <= limits.process_bytes + 4096);

  auto got = read_journal(listed[0].dir);
  REQUIRE(got);
  const std::string kept = joined(*got);
  CHECK(kept.size() + got->missing == data.size());
  CHECK(got->chunks.front().offset == 0);
  const auto& last = got->chunks.back();
  CHECK(last.offset + last.bytes.size() == data.size());
  // The head is the output's beginning, the tail its end, and the cut is counted where it is.
  std::size_t head = 0;
  std::size_t i = 0;
  for (; i < got->chunks.size() && got->chunks[i].missing_before == 0; ++i) head += got->chunks[i].bytes.size();
  REQUIRE(i < got->chunks.size());
  CHECK(data.compare(0, head, kept, 0, head) == 0);
  CHECK(got->chunks[i].missing_before == got->missing);
  CHECK(data.compare(data.size() - (kept.size() - head), std::string::npos, kept, head) == 0);
}

TEST_CASE("journal: a record cut short ends the reading of its segment, and is said") {
  TempRoot root;
  auto w = JournalWriter::open(root.path, Limits{});
  REQUIRE(w);
  auto id = (*w)->begin(1700000000000, meta("torn"));
  append_all(**w, id, "hello world", 5);
  (*w)->flush();
  auto listed = list_journals(root.path);
  REQUIRE(listed.size() == 1);
  {
    // A header promising 100 bytes, then 3: a daemon killed mid-write.
    RecordHeader h;
    h.length = 100;
    h.offset = 11;
    std::ofstream seg(listed[0].dir + "/000000.out", std::ios::app | std::ios::binary);
    seg.write(reinterpret_cast<const char*>(&h), sizeof h);
    seg.write("abc", 3);
  }
  auto got = read_journal(listed[0].dir);
  REQUIRE(got);
  CHECK(joined(*got) == "hello world");
  CHECK(got->torn);
  // No end: this test's process is its daemon, and it runs.
  CHECK(ending_text(got->meta).find("still running") == 0);
  w->reset();
}

TEST_CASE("journal: output the queue cannot take is a gap the next record shows") {
  TempRoot root;
  Limits limits;
  limits.queue_bytes = 500;
  auto w = JournalWriter::open(root.path, limits);
  REQUIRE(w);
  auto id = (*w)->begin(1700000000000, meta("slow"));
  append_all(**w, id, pattern(1000), 1000);        // more than the queue holds: dropped
  append_all(**w, id, "tail", 4, 1000, 2);          // fits
  (*w)->end(id, end_meta("slow", 1004, 0));
  (*w)->flush();
  CHECK((*w)->dropped_bytes() == 1000);
  auto got = read_journal(list_journals(root.path).at(0).dir);
  REQUIRE(got);
  REQUIRE(got->chunks.size() == 1);
  CHECK(got->chunks[0].bytes == "tail");
  CHECK(got->chunks[0].missing_before == 1000);
  CHECK(got->missing == 1000);
}

TEST_CASE("journal: the oldest finished journals go when the root is over its total; running ones stay") {
  TempRoot root;
  Limits limits;
  limits.process_bytes = 1 << 20;
  limits.total_bytes = 150 * 1024;
  auto w = JournalWriter::open(root.path, limits);
  REQUIRE(w);
  const std::string data = pattern(60 * 1024);
  auto running = (*w)->begin(1700000000000, meta("running"));
  append_all(**w, running, data, 4096);
  auto a = (*w)->begin(1700000000001, meta("a"));
  append_all(**w, a, data, 4096);
  (*w)->end(a, end_meta("a", data.size(), 0));
  auto b = (*w)->begin(1700000000002, meta("b"));
  append_all(**w, b, data, 4096);
  (*w)->end(b, end_meta("b", data.size(), 0));  // over 150 KiB now: "a" goes, "running" stays
  (*w)->flush();
  CHECK_FALSE(find_journal(root.path, "a"));
  CHECK(find_journal(root.path, "running"));
  CHECK(find_journal(root.path, "b"));
  CHECK((*w)->total_bytes() <= limits.total_bytes);
  (*w)->end(running, end_meta("running", data.size(), 0));
  (*w)->flush();
}

TEST_CASE("journal: a restarted writer counts what is there, and prunes a dead daemon's journals first") {
  TempRoot root;
  Limits limits;
  limits.total_bytes = 100 * 1024;
  const std::string data = pattern(60 * 1024);
  {
    auto w = JournalWriter::open(root.path, limits);
    REQUIRE(w);
    // A journal left by a daemon that is gone (pid 0 never names one) and has no end.
    auto dead = (*w)->begin(1600000000000, "{\"version\":1,\"processId\":\"dead\",\"daemon\":{\"pid\":0,\"startTime\":1}}");
    append_all(**w, dead, data, 4096);
    (*w)->flush();
  }
  auto dead = find_journal(root.path, "dead");
  REQUIRE(dead);
  CHECK(ending_text(dead->meta) == "its end was not recorded: the daemon that ran it (pid 0) stopped first");
  auto w = JournalWriter::open(root.path, limits);
  REQUIRE(w);
  auto id = (*w)->begin(1700000000000, meta("new"));  // 60 + the new one's start: over once it grows
  append_all(**w, id, data, 4096);
  (*w)->end(id, end_meta("new", data.size(), 0));
  (*w)->flush();
  CHECK_FALSE(find_journal(root.path, "dead"));
  CHECK(find_journal(root.path, "new"));
}

TEST_CASE("journal: find_journal by id, session prefix, name and agent session; a damaged meta.json is read safely") {
  TempRoot root;
  auto w = JournalWriter::open(root.path, Limits{});
  REQUIRE(w);
  (*w)->end((*w)->begin(1700000000000, meta("web", ",\"name\":\"dev-server\"")), end_meta("web", 0, 0, ",\"name\":\"dev-server\""));
  (*w)->end((*w)->begin(1700000000001, "{\"version\":1,\"id\":\"1007\",\"agentSessionId\":1007,\"daemon\":{\"pid\":0}}"),
            "{\"version\":1,\"id\":\"1007\",\"agentSessionId\":1007,\"end\":{\"signal\":9,\"reason\":\"removed\"}}");
  (*w)->end((*w)->begin(1700000000002, "{\"processId\":7,\"name\":[1],\"daemon\":\"x\"}"),
            "{\"processId\":7,\"name\":[1],\"daemon\":\"x\",\"end\":{\"exitCode\":\"zero\",\"signal\":\"nine\"}}");
  (*w)->flush();
  CHECK(find_journal(root.path, "web"));
  CHECK(find_journal(root.path, "abcd/web"));
  CHECK(find_journal(root.path, "abcd1234/web"));
  CHECK_FALSE(find_journal(root.path, "zzzz/web"));
  CHECK(find_journal(root.path, "dev-server"));
  auto agent = find_journal(root.path, "1007");
  REQUIRE(agent);
  CHECK(ending_text(agent->meta) == "killed by signal 9 (SIGKILL), removed from the daemon while it ran");
  CHECK_FALSE(find_journal(root.path, "nothing"));
  // Every list entry, the damaged one included, can be described without a type error.
  auto all = list_journals(root.path);
  CHECK(all.size() == 3);
  for (const auto& l : all) CHECK_NOTHROW(ending_text(l.meta));
  CHECK(ending_text(all.front().meta) == "exited with code -1");
}

TEST_CASE("journal: the root must be absolute and ours") {
  CHECK_FALSE(JournalWriter::open("relative/dir", Limits{}));
  CHECK_FALSE(JournalWriter::open("", Limits{}));
  TempRoot root;
  std::filesystem::create_directories(std::filesystem::path(root.path).parent_path());
  ::symlink("/tmp", root.path.c_str());  // a symlink planted where the root goes
  CHECK_FALSE(JournalWriter::open(root.path, Limits{}));
}

TEST_CASE("journal: many short processes are bounded by the total as a few long ones are") {
  TempRoot root;
  Limits limits;
  limits.total_bytes = 1 << 20;
  auto w = JournalWriter::open(root.path, limits);
  REQUIRE(w);
  for (int i = 0; i < 300; ++i) {
    const std::string p = "short" + std::to_string(i);
    auto id = (*w)->begin(1700000000000 + static_cast<std::uint64_t>(i), meta(p));
    append_all(**w, id, "ok\n", 3);
    (*w)->end(id, end_meta(p, 3, 0));
  }
  (*w)->flush();
  const auto kept = list_journals(root.path).size();
  CHECK(kept > 20);
  CHECK(kept * 12 * 1024 <= limits.total_bytes);  // each counts its blocks, not its 3 bytes
  CHECK(find_journal(root.path, "short299"));
  CHECK_FALSE(find_journal(root.path, "short0"));
}
