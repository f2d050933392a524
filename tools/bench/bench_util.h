// bench_util.h: what every uexec benchmark shares, so each program is only its workload.
//
// The rule from docs/performance.md: absolute times on these shared 2-core machines
// drift by 2x from run to run, so a benchmark never judges an absolute number. It measures
// uexec and a raw baseline doing the same work *in the same process, alternately* (A/B/A/B),
// turns every round into one ratio, and reports min/median/max of those ratios; the target is
// judged on the median. This header holds the pieces for that:
//
//   - Options: --quick, --peers, --json PATH (every program accepts all three);
//   - timing (steady_clock in ns/ms/us) and CPU time from getrusage(RUSAGE_SELF);
//   - Stats (min/median/max) and percentiles;
//   - Row: one target's result, printed as a Markdown table and written as JSON
//     ({"id","name","ratio_min","ratio_median","ratio_max","target","met","absolute"});
//   - raw PTY plumbing for the baselines (posix_openpt, posix_spawn with POSIX_SPAWN_SETSID
//     and an addopen of the slave, so the slave becomes the child's controlling tty: the
//     fastest correct way to start a child on a PTY with plain libc);
//   - small process helpers: RSS, RLIMIT_NOFILE, our own executable's path.
//
// Header-only on purpose: each bench is one translation unit, and meson needs no extra
// library. Nothing here touches uexec; the programs include the uexec headers themselves.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace uexec::bench {

// ---------------------------------------------------------------------------------------
// Errors: a benchmark that cannot set up its workload stops with a message; there is no
// recovery worth having.
[[noreturn]] inline void die(std::string_view what) {
  std::fprintf(stderr, "bench: %.*s\n", static_cast<int>(what.size()), what.data());
  std::exit(1);
}
[[noreturn]] inline void die_errno(std::string_view what) {
  die(fmt::format("{}: {}", what, std::strerror(errno)));
}

// ---------------------------------------------------------------------------------------
// Command line.
struct Options {
  bool quick = false;
  bool peers = false;
  std::string json_path;
  std::vector<std::string> rest;  // anything else, in order (sub-modes such as --writer)
};

inline Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--peers") {
      o.peers = true;
    } else if (a == "--json") {
      if (i + 1 >= argc) die("--json needs a path");
      o.json_path = argv[++i];
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--quick] [--peers] [--json PATH]\n", argv[0]);
      std::exit(0);
    } else {
      o.rest.emplace_back(a);
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------
// Time.
using Clock = std::chrono::steady_clock;

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}
inline double ns_to_ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }
inline double ns_to_us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

// User + system CPU time of this process (not its children), in ns.
inline std::int64_t cpu_self_ns() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 +
           static_cast<std::int64_t>(t.tv_usec) * 1000;
  };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// ---------------------------------------------------------------------------------------
// Statistics.
struct Stats {
  double min = 0, median = 0, max = 0;
};

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank: p99 of 1000 samples is the 990th smallest.
  double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  std::size_t idx = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return v[std::min(idx, v.size() - 1)];
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline Stats stats(const std::vector<double>& v) {
  if (v.empty()) return {};
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {*lo, median(v), *hi};
}

// ---------------------------------------------------------------------------------------
// Results.
enum class Cmp { kLe, kGe, kInfo };

struct Row {
  std::string id;
  std::string name;
  std::vector<double> ratios;  // one per round
  Cmp cmp = Cmp::kInfo;
  double target = 0;
  std::string absolute_text;   // for the table: "uexec 98.1 MiB/s, raw 101.2 MiB/s"
  nlohmann::json absolute = nlohmann::json::object();
  std::string note;            // e.g. why a peer row was skipped

  bool skipped() const { return ratios.empty(); }
  std::string target_text() const {
    switch (cmp) {
      case Cmp::kLe: return fmt::format("<= {}", target);
      case Cmp::kGe: return fmt::format(">= {}", target);
      case Cmp::kInfo: return "info";
    }
    return "?";
  }
  bool met() const {
    if (skipped()) return false;
    double m = stats(ratios).median;
    switch (cmp) {
      case Cmp::kLe: return m <= target;
      case Cmp::kGe: return m >= target;
      case Cmp::kInfo: return true;
    }
    return false;
  }
  nlohmann::json to_json() const {
    Stats s = stats(ratios);
    nlohmann::json j;
    j["id"] = id;
    j["name"] = name;
    if (skipped()) {
      j["ratio_min"] = nullptr;
      j["ratio_median"] = nullptr;
      j["ratio_max"] = nullptr;
    } else {
      j["ratio_min"] = s.min;
      j["ratio_median"] = s.median;
      j["ratio_max"] = s.max;
    }
    j["target"] = target_text();
    j["met"] = met();  // informational rows are always "met" and say so below
    if (cmp == Cmp::kInfo) j["informational"] = true;
    j["rounds"] = ratios.size();
    j["ratios"] = ratios;
    j["absolute"] = absolute;
    if (!note.empty()) j["note"] = note;
    return j;
  }
};

inline Row make_row(std::string id, std::string name, std::vector<double> ratios, Cmp cmp,
                    double target) {
  Row r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.ratios = std::move(ratios);
  r.cmp = cmp;
  r.target = target;
  return r;
}

inline std::string fmt_ratio(double r) { return fmt::format("{:.3f}", r); }

// "min/median/max unit" of a row's absolute numbers, `prec` decimals.
inline std::string abs3(const char* unit, const std::vector<double>& v, int prec = 1) {
  Stats s = stats(v);
  return fmt::format("{:.{}f}/{:.{}f}/{:.{}f} {}", s.min, prec, s.median, prec, s.max, prec, unit);
}

inline void print_table(std::string_view title, const std::vector<Row>& rows) {
  std::printf("\n### %.*s\n\n", static_cast<int>(title.size()), title.data());
  std::printf("| id | name | ratio min | ratio median | ratio max | target | met | absolute |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    Stats s = stats(r.ratios);
    std::string met = r.skipped() ? "skipped" : r.cmp == Cmp::kInfo ? "(info)" : r.met() ? "yes" : "**no**";
    std::string abs = r.absolute_text;
    if (!r.note.empty()) abs += (abs.empty() ? "" : "; ") + r.note;
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.id.c_str(), r.name.c_str(),
                r.skipped() ? "-" : fmt_ratio(s.min).c_str(),
                r.skipped() ? "-" : fmt_ratio(s.median).c_str(),
                r.skipped() ? "-" : fmt_ratio(s.max).c_str(), r.target_text().c_str(),
                met.c_str(), abs.c_str());
  }
  std::fflush(stdout);
}

// Writes the rows as a JSON array to `path`; when the file already holds an array, the rows
// are appended to it (run_all.sh merges this way too).
inline void write_json(const std::string& path, const std::vector<Row>& rows) {
  if (path.empty()) return;
  nlohmann::json arr = nlohmann::json::array();
  {
    std::ifstream in(path);
    if (in) {
      auto old = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (old.is_array()) arr = std::move(old);
    }
  }
  for (const Row& r : rows) arr.push_back(r.to_json());
  std::ofstream out(path, std::ios::trunc);
  if (!out) die(fmt::format("cannot write {}", path));
  out << arr.dump(2) << "\n";
}

inline void finish(const Options& o, std::string_view title, const std::vector<Row>& rows) {
  print_table(title, rows);
  write_json(o.json_path, rows);
}

// ---------------------------------------------------------------------------------------
// Process helpers.

// This binary's absolute path (so children can re-execute it as a writer).
inline std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) die_errno("readlink /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

// Resident set size in KiB (/proc/self/statm, field 2, pages).
inline double rss_kib() {
  std::ifstream in("/proc/self/statm");
  long size = 0, resident = 0;
  in >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1024.0;
}

inline void raise_nofile() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

inline std::size_t nofile_limit() {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  return static_cast<std::size_t>(rl.rlim_cur);
}

// argv/envp arrays for execve/posix_spawn that own their strings.
class CArgs {
 public:
  CArgs() = default;
  explicit CArgs(std::vector<std::string> v) : strs_(std::move(v)) { rebuild(); }
  CArgs(const CArgs& o) : strs_(o.strs_) { rebuild(); }
  CArgs& operator=(const CArgs& o) {
    strs_ = o.strs_;
    rebuild();
    return *this;
  }
  char* const* get() const { return ptrs_.data(); }
  const std::vector<std::string>& strings() const { return strs_; }

 private:
  void rebuild() {
    ptrs_.clear();
    for (auto& s : strs_) ptrs_.push_back(s.data());
    ptrs_.push_back(nullptr);
  }
  std::vector<std::string> strs_;
  std::vector<char*> ptrs_;
};

inline std::vector<std::string> current_env() {
  std::vector<std::string> v;
  for (char** e = environ; e && *e; ++e) v.emplace_back(*e);
  return v;
}

// ---------------------------------------------------------------------------------------
// Raw PTY baseline: what a C program with no manager does.

struct RawPty {
  int master = -1;
  std::string slave_path;
  void close_master() {
    if (master >= 0) ::close(master);
    master = -1;
  }
};

// posix_openpt + grantpt + unlockpt + ptsname, sized 24x80 like uexec's default. The master
// is blocking (the baseline reads with a blocking loop) and CLOEXEC.
inline RawPty open_raw_pty() {
  RawPty p;
  p.master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (p.master < 0) die_errno("posix_openpt");
  if (::grantpt(p.master) != 0 || ::unlockpt(p.master) != 0) die_errno("grantpt/unlockpt");
  char name[128];
  if (::ptsname_r(p.master, name, sizeof name) != 0) die_errno("ptsname_r");
  p.slave_path = name;
  winsize ws{};
  ws.ws_row = 24;
  ws.ws_col = 80;
  ::ioctl(p.master, TIOCSWINSZ, &ws);
  return p;
}

// Puts the PTY in raw mode (cfmakeraw) through a short-lived slave fd; the settings stay on
// the tty while the master is open.
inline void make_raw(const RawPty& p) {
  int s = ::open(p.slave_path.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0) die_errno("open slave");
  termios t{};
  ::tcgetattr(s, &t);
  ::cfmakeraw(&t);
  ::tcsetattr(s, TCSANOW, &t);
  ::close(s);
}

// posix_spawn with POSIX_SPAWN_SETSID, the slave opened on fd 0 (becoming the controlling
// tty of the new session) and dup'ed to 1 and 2. The master is CLOEXEC, so the child holds
// only the slave.
inline pid_t spawn_on_pty(const RawPty& p, const CArgs& argv, const CArgs& envp) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, p.slave_path.c_str(), O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&fa, 0, 1);
  posix_spawn_file_actions_adddup2(&fa, 0, 2);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv.get()[0], &fa, &attr, argv.get(), envp.get());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    die_errno(fmt::format("posix_spawn {}", argv.get()[0]));
  }
  return pid;
}

// The same child started with fork + exec (for S2's contrast: fork copies page tables).
inline pid_t fork_on_pty(const RawPty& p, const CArgs& argv, const CArgs& envp) {
  pid_t pid = ::fork();
  if (pid < 0) die_errno("fork");
  if (pid == 0) {
    ::setsid();
    int s = ::open(p.slave_path.c_str(), O_RDWR);
    if (s < 0) ::_exit(127);
    ::dup2(s, 0);
    ::dup2(s, 1);
    ::dup2(s, 2);
    if (s > 2) ::close(s);
    ::execve(argv.get()[0], argv.get(), envp.get());
    ::_exit(127);
  }
  return pid;
}

inline int reap(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

// write(2) all of [d, d+len) to fd, retrying EINTR; false on an error or a closed reader.
inline bool write_all(int fd, const char* d, std::size_t len) {
  while (len > 0) {
    ssize_t w = ::write(fd, d, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    d += w;
    len -= static_cast<std::size_t>(w);
  }
  return true;
}

inline ssize_t read_retry(int fd, void* buf, std::size_t n) {
  for (;;) {
    ssize_t r = ::read(fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

// UEXEC_CONTAINMENT=off in the environment: a program's uexec side runs without per-session
// cgroups (base::ContainmentMode::kOff), to break a row down; anything else keeps the default.
inline bool containment_off() {
  const char* v = std::getenv("UEXEC_CONTAINMENT");
  return v && std::string_view(v) == "off";
}

// Which PATH entry holds `name` (for peers and for argv[0] of the baselines).
inline std::string which(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::stringstream ss(p);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string c = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(c.c_str(), X_OK) == 0) return c;
  }
  return "";
}

inline bool is_exec(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

inline std::string dirname_of(const std::string& p) {
  auto i = p.rfind('/');
  return i == std::string::npos ? "." : i == 0 ? "/" : p.substr(0, i);
}

// The source directory recorded by meson in <build>/meson-info/meson-info.json.
inline std::string source_root(const std::string& build) {
  std::ifstream in(build + "/meson-info/meson-info.json");
  if (!in) return "";
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return "";
  return j.value(nlohmann::json::json_pointer("/directories/source"), std::string());
}

inline constexpr const char* kCodexRel =
    "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex";

// The Codex 0.169.0 binary (the peer of bench_rpc and bench_sandbox): `given` when set, else
// $UEXEC_BENCH_CODEX, tests/e2e/conformance's pinned install, the peers directories. Empty when
// none is executable; every place looked at is appended to `searched`.
inline std::string find_codex(const std::string& build, const std::string& given, std::vector<std::string>& searched) {
  std::vector<std::string> cands;
  if (!given.empty()) {
    cands.push_back(given);
  } else {
    if (const char* e = std::getenv("UEXEC_BENCH_CODEX")) cands.emplace_back(e);
    std::string src = source_root(build);
    if (!src.empty()) cands.push_back(src + "/tests/e2e/conformance/" + kCodexRel);
    cands.push_back(build + "/bench/peers/" + kCodexRel);
    if (const char* e = std::getenv("UEXEC_BENCH_PEERS")) cands.push_back(std::string(e) + "/" + kCodexRel);
    cands.push_back(build + "/peers/" + kCodexRel);
    cands.push_back(std::string("tests/e2e/conformance/") + kCodexRel);
    cands.push_back(std::string("build/bench/peers/") + kCodexRel);
  }
  for (auto& c : cands) {
    searched.push_back(c);
    if (is_exec(c)) return c;
  }
  return "";
}

}  // namespace uexec::bench
