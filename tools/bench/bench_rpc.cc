// bench_rpc: uexec's JSON-RPC path (`uexec exec-server --listen stdio`) against Codex
// exec-server 0.169.0 (`codex exec-server --listen stdio`), through ONE client.
//
// Targets P1 and P2 of docs/performance.md §3. Both servers are driven by the same code
// in this file: the server is spawned with stdin/stdout pipes (its own process group, stderr
// to /dev/null), requests are written as one compact JSON object per line, and a small line
// reader matches responses by id and handles notifications as they arrive: every
// process/output chunk is base64-decoded and counted, and its seq checked for holes. The
// client is kept cheap per byte so that it does not bound P1-tput: process/output lines are
// scanned by hand (processId, seq, chunk; any other shape falls back) and decoded with a
// table-driven decoder, every other line is parsed with nlohmann::json. The client sends one
// request at a time unless a row says otherwise, because Codex handles one request at a
// time; the comparison is therefore the same client doing the same work.
//
//   P1-start   process/start of `/bin/echo x` (tty) -> first process/output notification;
//              ratio codex_ms / uexec_ms (medians of interleaved samples), target >= 3.
//   P1-tput*   a tty `cat` of a file of 80-column lines (32 MiB, --quick 8 MiB), every chunk
//              received until process/closed, and the same `cat` on a plain PTY drained by a
//              poll + read loop in this process (the raw ceiling: what any reader of the PTY
//              gets; raw_ceiling_sample). Each round runs the three in a rotating order. The
//              timed rounds count each chunk's bytes from its base64 length (the client's
//              decoding is excluded, for both servers alike; the warm-ups decode and check).
//              P1-tput-ceiling: uexec MiB/s / raw MiB/s, target >= 0.95. P1-tput: uexec /
//              codex MiB/s, target 1.3 where the ceiling allows it: min(1.3, 0.95 x the median
//              of raw / codex). P1-tput-cpu: server CPU ms per delivered MiB, codex / uexec,
//              target >= 2.5 (less sensitive to the machine's noise than the wall-clock
//              rows). Seq holes are reported: a server that drops output for a slow consumer
//              (docs/protocol.md §4.7) is credited only with the bytes it delivered.
//   P1-rss     VmRSS (/proc/PID/status) of a fresh server after initialize plus 50 (--quick
//              20) idle tty `sleep 1000` sessions; ratio uexec / codex, target <= 0.2;
//              per-session KiB (RSS growth over the sessions / N) reported alongside.
//   P1-1000    1000 tty `sleep 1000` sessions started one request after another on one
//              connection, then a process/read {waitMs:0} of every one and an
//              environment/status: ratio answered/expected, target >= 1 (all answered, none
//              stalled). P1-1000-burst: the same 1000 starts written back to back without
//              waiting (uexec runs requests concurrently), informational. Codex gets the
//              sequential variant with a time budget (60 s, --quick 20 s) and a 5 s
//              per-request timeout, informational (it has been seen to stall near 510; the
//              servers inherit this process's RLIMIT_NOFILE, which may matter there).
//   P2         with a long-poll process/read {waitMs:5000} pending on a tty `cat`, the
//              latency of environment/status (P2-status) and of a process/read {waitMs:0} of
//              another process (P2-read), over the same requests with nothing pending;
//              target <= 1.5 for uexec. The long poll is ended by a process/write to the
//              `cat` (its echo is output). Codex (informational) answers one request at a
//              time, so its loaded latency is the long poll's ~5000 ms.
//
//   F1         fs/* (docs/protocol.md §3.9), one request at a time: fs/getMetadata (F1-meta)
//              and fs/readFile of a 4 KiB file (F1-read), median latency uexec / codex, target
//              <= 0.5; F1-read-sandboxed: the same read with Codex's workspace-write sandbox
//              (uexec: a helper under the sandbox per call) over the unsandboxed read, info.
//
// Rounds alternate uexec and Codex (A/B/A/B); each round gives one ratio, rows report
// min/median/max over rounds and the target is judged on the median. Without the Codex
// binary the Codex rows are printed as skipped with the paths searched.
//
//   bench_rpc [--quick] [--peers] [--json PATH] [--uexec PATH] [--codex PATH]
//             [--only start,tput,rss,1000,p2,fs]
//
// BENCH_RPC_TRACE=1 in the environment prints the throughput samples' progress to stderr.
//
// uexec defaults to <build>/src/uexec next to this program (<build>/tools/bench/bench_rpc).
// Codex is searched at --codex, $UEXEC_BENCH_CODEX, then
// <source>/tests/e2e/conformance/node_modules/@openai/codex-linux-x64/vendor/
// x86_64-unknown-linux-musl/bin/codex, <build>/bench/peers/node_modules/..., $UEXEC_BENCH_PEERS/
// node_modules/..., <build>/peers/node_modules/... (<source> from <build>/meson-info).
//
// Clean-up: this process is a child subreaper; each server is killed as a process group, the
// server's own children (each in its own session) are found by parent pid in /proc and
// SIGKILLed as groups, and orphans re-parented to us are killed and reaped. The same runs at
// exit and on SIGINT/SIGTERM.
#include <dirent.h>
#include <uv.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <bit>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "bench_util.h"

namespace uexec::bench {
namespace {

// One uv_queue_work round trip, median over `n` with 100 µs of idleness in between (a client's
// round trip, so the worker is asleep again when the next comes): a stat of `path` on a pool
// thread, as uexec serves fs/getMetadata (µs).
struct PoolTrip {
  uv_work_t req{};
  std::string path;
  int left = 0;
  std::int64_t t0 = 0;
  std::vector<double> us;
  static void work(uv_work_t* w) {
    struct stat st;
    ::stat(static_cast<PoolTrip*>(w->data)->path.c_str(), &st);
  }
  static void after(uv_work_t* w, int) {
    auto* t = static_cast<PoolTrip*>(w->data);
    t->us.push_back(static_cast<double>(now_ns() - t->t0) / 1000.0);
    if (--t->left <= 0) return;
    ::usleep(100);  // idle in between, about a client's round trip: the worker goes back to sleep
    t->queue(w->loop);
  }
  void queue(uv_loop_t* loop) {
    t0 = now_ns();
    uv_queue_work(loop, &req, work, after);
  }
};

double pool_trip_us(const std::string& path, int n) {
  PoolTrip trip;
  trip.path = path;
  trip.left = n;
  trip.req.data = &trip;
  uv_loop_t loop;
  uv_loop_init(&loop);
  trip.queue(&loop);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return median(trip.us);
}


using nlohmann::json;

// ---------------------------------------------------------------------------------------
// Process clean-up.

std::set<pid_t> g_servers;  // live server pids (each its own process group)
std::string g_tmp_file;     // the throughput input file, removed on every exit path

// Direct children of `parent` (from /proc/*/stat field 4).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    const char* rp = std::strrchr(buf, ')');
    if (!rp) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(rp + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

void kill_group_and_pid(pid_t p) {
  ::kill(-p, SIGKILL);
  ::kill(p, SIGKILL);
}

// Kills and reaps whatever was re-parented to us (we are a subreaper), except live servers.
void reap_orphans() {
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<pid_t> kids = children_of(::getpid());
    bool any = false;
    for (pid_t k : kids) {
      if (g_servers.count(k)) continue;
      any = true;
      kill_group_and_pid(k);
      ::waitpid(k, nullptr, 0);
    }
    if (!any) break;
  }
}

void emergency_cleanup() {
  for (pid_t s : g_servers) {
    for (pid_t c : children_of(s)) kill_group_and_pid(c);
    ::kill(-s, SIGKILL);
  }
  for (pid_t s : g_servers) ::waitpid(s, nullptr, 0);
  g_servers.clear();
  reap_orphans();
  if (!g_tmp_file.empty()) ::unlink(g_tmp_file.c_str());
}

void on_signal(int sig) {
  emergency_cleanup();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// utime + stime of `pid` (threads included), in ns.
std::int64_t proc_cpu_ns(pid_t pid) {
  int fd = ::open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  std::string s(buf, static_cast<std::size_t>(n));
  auto rp = s.rfind(')');
  if (rp == std::string::npos) return 0;
  std::istringstream f(s.substr(rp + 2));
  std::string tok;
  long long ut = 0, st = 0;
  for (int field = 3; f >> tok; ++field) {
    if (field == 14) ut = std::atoll(tok.c_str());
    if (field == 15) {
      st = std::atoll(tok.c_str());
      break;
    }
  }
  return (ut + st) * (1'000'000'000LL / ::sysconf(_SC_CLK_TCK));
}

double vmrss_kib(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr);
  return 0;
}

// ---------------------------------------------------------------------------------------
// Base64 (standard alphabet, padding). The decoder is on the client's hot path (every
// process/output chunk), so it is table driven: four 256-entry tables map one input
// character each to its bits already placed in the little-endian 3-byte output word, an
// invalid character sets bit 31, and one OR per 4 characters both decodes and validates.

static_assert(std::endian::native == std::endian::little, "b64_decode_into stores little-endian words");

struct B64Tables {
  std::uint32_t t[4][256];
};

const B64Tables& b64_tables() {
  static const B64Tables tables = [] {
    B64Tables x{};
    for (auto& row : x.t)
      for (auto& e : row) e = 0x80000000u;
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::uint32_t v = 0; v < 64; ++v) {
      auto c = static_cast<unsigned char>(a[v]);
      // Output bytes b0 = v0<<2 | v1>>4, b1 = (v1&15)<<4 | v2>>2, b2 = (v2&3)<<6 | v3,
      // stored as b0 | b1<<8 | b2<<16.
      x.t[0][c] = v << 2;
      x.t[1][c] = (v >> 4) | ((v & 15) << 12);
      x.t[2][c] = ((v >> 2) << 8) | ((v & 3) << 22);
      x.t[3][c] = v << 16;
    }
    return x;
  }();
  return tables;
}

// Decodes `in` into `out`, which must have room for in.size() / 4 * 3 + 1 bytes (the last
// store writes one byte of slack). Returns the decoded size, or -1 on a malformed string
// (length not a multiple of 4, a character outside the alphabet, '=' other than as the
// last one or two characters).
std::ptrdiff_t b64_decode_into(std::string_view in, char* out) {
  if (in.size() % 4) return -1;
  if (in.empty()) return 0;
  const auto& t = b64_tables().t;
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  std::size_t quads = in.size() / 4 - 1;  // all but the last, which may hold padding
  std::uint32_t bad = 0;
  char* o = out;
  for (std::size_t q = 0; q < quads; ++q, s += 4, o += 3) {
    std::uint32_t w = t[0][s[0]] | t[1][s[1]] | t[2][s[2]] | t[3][s[3]];
    bad |= w;
    std::memcpy(o, &w, 4);  // 3 bytes of output and one of slack, overwritten next
  }
  if (bad & 0x80000000u) return -1;
  int pad = s[3] == '=' ? (s[2] == '=' ? 2 : 1) : 0;
  std::uint32_t w = t[0][s[0]] | t[1][s[1]] | (pad >= 2 ? 0 : t[2][s[2]]) | (pad >= 1 ? 0 : t[3][s[3]]);
  if (w & 0x80000000u) return -1;
  o[0] = static_cast<char>(w & 0xff);
  if (pad < 2) o[1] = static_cast<char>((w >> 8) & 0xff);
  if (pad < 1) o[2] = static_cast<char>((w >> 16) & 0xff);
  return (o - out) + 3 - pad;
}

std::string b64_encode(std::string_view in) {
  const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    std::uint32_t w = (static_cast<unsigned char>(in[i]) << 16) |
                      (static_cast<unsigned char>(in[i + 1]) << 8) | static_cast<unsigned char>(in[i + 2]);
    out += a[w >> 18];
    out += a[(w >> 12) & 63];
    out += a[(w >> 6) & 63];
    out += a[w & 63];
  }
  if (std::size_t r = in.size() - i) {
    std::uint32_t w = static_cast<unsigned char>(in[i]) << 16;
    if (r == 2) w |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += a[w >> 18];
    out += a[(w >> 12) & 63];
    out += r == 2 ? a[(w >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// The hot notification, scanned by hand. A process/output line is
//   {"jsonrpc":"2.0","method":"process/output","params":{"processId":"p1","seq":7,
//    "stream":"pty","chunk":"<base64>"}}
// with members in any order (Codex omits "jsonrpc"; "sessionId" may appear). The scanner
// accepts only that shape: one top-level object without "id", whose values are strings,
// unsigned integers, true/false/null and the one "params" object, itself of flat values.
// Strings other than "chunk" must hold no escape; an escape inside "chunk" leaves a '\\' in
// the view, which the base64 decoder rejects. Anything else (another shape, a duplicate
// member, a negative or fractional number, an escape) makes it return false, and the line
// takes the full nlohmann::json parse, as every other message does.

struct OutputView {
  std::string_view process_id, chunk;
  std::uint64_t seq = 0;
};

class OutputScanner {
 public:
  explicit OutputScanner(std::string_view line) : p_(line.data()), end_(line.data() + line.size()) {}

  bool scan(OutputView& v) {
    if (!object(0)) return false;
    ws();
    if (p_ != end_ || method_ != "process/output" || !have_params_ || !have_pid_ || !have_seq_ || !have_chunk_)
      return false;
    v.process_id = pid_;
    v.chunk = chunk_;
    v.seq = seq_;
    return true;
  }

 private:
  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool lit(char c) {
    ws();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  // A string starting at p_ (after ws); `escapes_ok`: return the raw text up to the first '"'.
  bool str(std::string_view& out, bool escapes_ok) {
    if (!lit('"')) return false;
    const void* q = std::memchr(p_, '"', static_cast<std::size_t>(end_ - p_));
    if (!q) return false;
    const char* e = static_cast<const char*>(q);
    out = std::string_view(p_, static_cast<std::size_t>(e - p_));
    if (!escapes_ok && std::memchr(p_, '\\', out.size())) return false;
    p_ = e + 1;
    return true;
  }
  bool number(std::uint64_t& out) {
    ws();
    const char* b = p_;
    std::uint64_t n = 0;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
      auto d = static_cast<std::uint64_t>(*p_ - '0');
      if (n > (UINT64_MAX - d) / 10) return false;
      n = n * 10 + d;
      ++p_;
    }
    if (p_ == b || (p_ - b > 1 && *b == '0')) return false;
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    out = n;
    return true;
  }
  bool word(std::string_view w) {
    if (static_cast<std::size_t>(end_ - p_) < w.size() || std::memcmp(p_, w.data(), w.size()) != 0) return false;
    p_ += w.size();
    return true;
  }
  // A flat value we do not need: a string, an unsigned integer, true, false or null.
  bool skip_value() {
    ws();
    if (p_ == end_) return false;
    std::string_view sv;
    std::uint64_t n;
    switch (*p_) {
      case '"': return str(sv, false);
      case 't': return word("true");
      case 'f': return word("false");
      case 'n': return word("null");
      default: return number(n);
    }
  }
  static bool once(bool& seen) {
    if (seen) return false;
    seen = true;
    return true;
  }
  bool member(int depth, std::string_view key) {
    if (depth == 0) {
      if (key == "id") return false;  // a response or a server request: the full parse
      if (key == "method") return once(have_method_) && str(method_, false);
      if (key == "params") return once(have_params_) && object(1);
    } else {
      if (key == "processId") return once(have_pid_) && str(pid_, false);
      if (key == "seq") return once(have_seq_) && number(seq_);
      if (key == "chunk") return once(have_chunk_) && str(chunk_, true);
    }
    return skip_value();
  }
  bool object(int depth) {
    if (!lit('{')) return false;
    ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      std::string_view key;
      if (!str(key, false) || !lit(':') || !member(depth, key)) return false;
      ws();
      if (p_ == end_) return false;
      char c = *p_++;
      if (c == '}') return true;
      if (c != ',') return false;
    }
  }

  const char* p_;
  const char* end_;
  std::string_view method_, pid_, chunk_;
  std::uint64_t seq_ = 0;
  bool have_method_ = false, have_params_ = false, have_pid_ = false, have_seq_ = false, have_chunk_ = false;
};

// ---------------------------------------------------------------------------------------
// The client: one server process, one NDJSON connection on its stdin/stdout.

struct ProcState {
  std::int64_t first_output_ns = 0;
  std::uint64_t bytes = 0;   // decoded output bytes
  std::uint64_t last_seq = 0;
  std::uint64_t holes = 0;        // seq numbers skipped (output dropped for this connection)
  bool exited = false;
  bool closed = false;
};

class Server {
 public:
  Server(std::string name, std::vector<std::string> argv) : name_(std::move(name)) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) die_errno("pipe2");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    CArgs cargv(argv);
    CArgs cenv(current_env());
    int rc = ::posix_spawn(&pid_, argv[0].c_str(), &fa, &attr, cargv.get(), cenv.get());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
      errno = rc;
      die_errno(fmt::format("spawn {}", argv[0]));
    }
    g_servers.insert(pid_);
    to_ = in[1];
    from_ = out[0];
    ::fcntl(to_, F_SETFL, ::fcntl(to_, F_GETFL) | O_NONBLOCK);
    ::fcntl(from_, F_SETFL, ::fcntl(from_, F_GETFL) | O_NONBLOCK);
    buf_.resize(4 * kReadSize);
  }
  ~Server() { shutdown(2000); }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  bool eof() const { return eof_; }
  std::unordered_map<std::string, ProcState>& procs() { return procs_; }
  std::string new_process_id() { return fmt::format("p{}", next_proc_++); }
  // Timed throughput rounds count a chunk's bytes from its base64 length instead of
  // decoding it (the client's decoding is excluded from P1-tput*; warm-ups still decode).
  void set_decode(bool on) { decode_output_ = on; }

  // Sends a request; returns its id. The response is collected by pump().
  std::int64_t send_request(const std::string& method, json params) {
    std::int64_t id = next_id_++;
    send({{"id", id}, {"method", method}, {"params", std::move(params)}});
    return id;
  }
  void send_notification(const std::string& method) { send({{"method", method}, {"params", json::object()}}); }

  // Waits for the response `id` (or until timeout); pops and returns it.
  std::optional<json> await(std::int64_t id, int timeout_ms) {
    std::int64_t deadline = now_ns() + static_cast<std::int64_t>(timeout_ms) * 1'000'000;
    while (!responses_.count(id)) {
      if (!pump(deadline)) break;
    }
    auto it = responses_.find(id);
    if (it == responses_.end()) return std::nullopt;
    json r = std::move(it->second);
    responses_.erase(it);
    return r;
  }
  bool has_response(std::int64_t id) const { return responses_.count(id) != 0; }

  std::optional<json> request(const std::string& method, json params, int timeout_ms) {
    return await(send_request(method, std::move(params)), timeout_ms);
  }

  // Pumps until pred() holds or timeout; returns pred().
  bool wait_until(const std::function<bool()>& pred, int timeout_ms) {
    std::int64_t deadline = now_ns() + static_cast<std::int64_t>(timeout_ms) * 1'000'000;
    while (!pred()) {
      if (!pump(deadline)) break;
    }
    return pred();
  }
  // Keeps reading (and handling notifications) for `ms`.
  void idle(int ms) {
    wait_until([] { return false; }, ms);
  }

  bool initialize(int timeout_ms) {
    auto r = request("initialize", {{"clientName", "bench_rpc"}}, timeout_ms);
    if (!r || !r->contains("result")) return false;
    send_notification("initialized");
    return true;
  }

  // Closes stdin (both servers kill their processes on EOF), waits up to grace_ms for the
  // exit, then kills the server's children and process group. Idempotent.
  void shutdown(int grace_ms) {
    if (pid_ <= 0) return;
    if (to_ >= 0) ::close(to_);
    to_ = -1;
    std::int64_t deadline = now_ns() + static_cast<std::int64_t>(grace_ms) * 1'000'000;
    bool exited = false;
    while (now_ns() < deadline) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        exited = true;
        break;
      }
      // Drain stdout so a server blocked writing can make progress.
      char tmp[65536];
      while (::read(from_, tmp, sizeof tmp) > 0) {
      }
      ::usleep(2000);
    }
    if (!exited) {
      for (pid_t c : children_of(pid_)) kill_group_and_pid(c);
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    g_servers.erase(pid_);
    pid_ = -1;
    if (from_ >= 0) ::close(from_);
    from_ = -1;
    reap_orphans();
  }

 private:
  void send(const json& msg) {
    std::string line = msg.dump();
    line += '\n';
    std::size_t off = 0;
    while (off < line.size()) {
      if (to_ < 0) die(fmt::format("{}: write after shutdown", name_));
      ssize_t n = ::write(to_, line.data() + off, line.size() - off);
      if (n > 0) {
        off += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) die_errno(fmt::format("{}: write", name_));
      // The pipe is full: read while waiting, so neither side blocks on the other.
      pollfd p[2] = {{to_, POLLOUT, 0}, {from_, POLLIN, 0}};
      ::poll(p, 2, 1000);
      if (p[1].revents) read_some();
      if (eof_) die(fmt::format("{}: server closed its stdout", name_));
    }
  }

  // One poll + read; returns false at the deadline or on EOF.
  bool pump(std::int64_t deadline) {
    if (eof_) return false;
    std::int64_t left = deadline - now_ns();
    if (left <= 0) {
      read_some();  // whatever is already there
      return false;
    }
    pollfd p{from_, POLLIN, 0};
    int ms = static_cast<int>(std::min<std::int64_t>((left + 999'999) / 1'000'000, 1000));
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) read_some();
    return !eof_;
  }

  // Reads what is available (up to 64 reads) into buf_[beg_, end_) and dispatches every
  // complete line. The buffer grows only for lines longer than it; it is never zero-filled.
  void read_some() {
    for (int i = 0; i < 64; ++i) {
      if (buf_.size() - end_ < kReadSize) {
        if (beg_ > 0) {
          std::memmove(buf_.data(), buf_.data() + beg_, end_ - beg_);
          end_ -= beg_;
          beg_ = 0;
        }
        if (buf_.size() - end_ < kReadSize) buf_.resize(std::max(buf_.size() * 2, end_ + kReadSize));
      }
      ssize_t n = ::read(from_, buf_.data() + end_, buf_.size() - end_);
      if (n == 0) {
        eof_ = true;
        break;
      }
      if (n < 0) break;  // EAGAIN (or an error that the next poll reports again)
      std::size_t old_end = end_;
      end_ += static_cast<std::size_t>(n);
      // Dispatch complete lines (search only the new bytes for the first newline).
      std::size_t from = old_end;
      for (;;) {
        const void* nl = std::memchr(buf_.data() + from, '\n', end_ - from);
        if (!nl) break;
        std::size_t e = static_cast<std::size_t>(static_cast<const char*>(nl) - buf_.data());
        handle_line(std::string_view(buf_.data() + beg_, e - beg_));
        beg_ = from = e + 1;
      }
      if (beg_ == end_) beg_ = end_ = 0;
      if (static_cast<std::size_t>(n) < kReadSize) break;
    }
  }

  void handle_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return;
    // The hot path: a process/output notification, scanned and decoded without building a
    // json value. It falls through to the full parse if the line is any other shape or the
    // chunk does not decode (which then dies below, as before).
    OutputView v;
    if (OutputScanner(line).scan(v) && handle_output(v)) return;
    json msg = json::parse(line.begin(), line.end(), nullptr, false);
    if (msg.is_discarded() || !msg.is_object())
      die(fmt::format("{}: unparsable line: {:.200}", name_, std::string(line)));
    if (auto id = msg.find("id"); id != msg.end() && !msg.contains("method")) {
      if (id->is_number_integer()) {
        std::int64_t key = id->get<std::int64_t>();  // before the move below
        responses_[key] = std::move(msg);
      }
      return;
    }
    auto m = msg.find("method");
    if (m == msg.end() || !m->is_string()) return;
    const std::string& method = m->get_ref<const std::string&>();
    const json& params = msg["params"];
    if (!params.is_object() || !params.contains("processId")) return;
    ProcState& st = procs_[params["processId"].get<std::string>()];
    if (auto s = params.find("seq"); s != params.end() && s->is_number_unsigned()) note_seq(st, s->get<std::uint64_t>());
    if (method == "process/output") {
      const std::string& chunk = params["chunk"].get_ref<const std::string&>();
      std::ptrdiff_t n = decode(chunk);
      if (n < 0) die(fmt::format("{}: bad base64 chunk", name_));
      count_output(st, static_cast<std::uint64_t>(n));
    } else if (method == "process/exited") {
      st.exited = true;
    } else if (method == "process/closed") {
      st.closed = true;
    }
  }

  // A scanned process/output; false (nothing changed) if its chunk is not plain base64.
  bool handle_output(const OutputView& v) {
    std::ptrdiff_t n = decode_output_ ? decode(v.chunk) : b64_length(v.chunk);
    if (n < 0) return false;
    key_.assign(v.process_id);
    ProcState& st = procs_[key_];
    note_seq(st, v.seq);
    count_output(st, static_cast<std::uint64_t>(n));
    return true;
  }

  // The decoded size of a padded base64 string, or -1 when its length is not a multiple of 4.
  static std::ptrdiff_t b64_length(std::string_view chunk) {
    if (chunk.size() % 4) return -1;
    std::ptrdiff_t n = static_cast<std::ptrdiff_t>(chunk.size() / 4 * 3);
    if (!chunk.empty() && chunk.back() == '=') --n;
    if (chunk.size() > 1 && chunk[chunk.size() - 2] == '=') --n;
    return n;
  }

  // Decodes a chunk into decoded_ (grown, never shrunk); returns its size or -1.
  std::ptrdiff_t decode(std::string_view chunk) {
    std::size_t need = chunk.size() / 4 * 3 + 1;
    if (decoded_.size() < need) decoded_.resize(std::max(need, decoded_.size() * 2));
    return b64_decode_into(chunk, decoded_.data());
  }

  void note_seq(ProcState& st, std::uint64_t seq) {
    if (seq > st.last_seq + 1) {
      st.holes += seq - st.last_seq - 1;
      if (trace_) std::fprintf(stderr, "trace %s %.3f hole %llu..%llu after %llu bytes\n", name_.c_str(),
                               ns_to_ms(now_ns()), static_cast<unsigned long long>(st.last_seq + 1),
                               static_cast<unsigned long long>(seq - 1), static_cast<unsigned long long>(st.bytes));
    }
    st.last_seq = std::max(st.last_seq, seq);
  }

  void count_output(ProcState& st, std::uint64_t n) {
    if (!st.first_output_ns) st.first_output_ns = now_ns();
    st.bytes += n;
    if (trace_ && ((++trace_n_ % 250) == 0))
      std::fprintf(stderr, "trace %s %.3f seq %llu bytes %llu\n", name_.c_str(), ns_to_ms(now_ns()),
                   static_cast<unsigned long long>(st.last_seq), static_cast<unsigned long long>(st.bytes));
  }

  static constexpr std::size_t kReadSize = 1 << 20;

  std::string name_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  bool eof_ = false;
  bool trace_ = std::getenv("BENCH_RPC_TRACE") != nullptr;  // progress lines on stderr
  std::uint64_t trace_n_ = 0;
  std::vector<char> buf_;
  std::size_t beg_ = 0, end_ = 0;
  bool decode_output_ = true;  // false: count chunk sizes from their base64 length (set_decode)
  std::vector<char> decoded_;  // the last decoded chunk (only its size is used)
  std::string key_;            // the scanned processId, for the procs_ lookup
  std::int64_t next_id_ = 1;
  int next_proc_ = 1;
  std::unordered_map<std::int64_t, json> responses_;
  std::unordered_map<std::string, ProcState> procs_;
};

// ---------------------------------------------------------------------------------------
// Workloads (identical for both servers).

struct Peer {
  std::string name;                // "uexec" / "codex"
  std::vector<std::string> argv;   // server command line
};

const json kEnv = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"TERM", "dumb"}, {"LANG", "C.UTF-8"}};

json start_params(const std::string& pid, std::vector<std::string> argv, bool tty) {
  return {{"processId", pid}, {"argv", std::move(argv)}, {"cwd", "file:///tmp"}, {"env", kEnv}, {"tty", tty}};
}

bool ok(const std::optional<json>& r) { return r && r->contains("result"); }
std::string err_text(const std::optional<json>& r) {
  if (!r) return "timeout";
  if (r->contains("error")) return (*r)["error"].dump();
  return "no result";
}

std::unique_ptr<Server> launch(const Peer& p) {
  auto s = std::make_unique<Server>(p.name, p.argv);
  if (!s->initialize(20000)) die(fmt::format("{}: initialize failed", p.name));
  return s;
}

// P1-start: one sample, ns from writing process/start to the first process/output.
std::int64_t first_byte_sample(Server& s) {
  std::string id = s.new_process_id();
  ProcState& st = s.procs()[id];
  std::int64_t t0 = now_ns();
  auto r = s.request("process/start", start_params(id, {"/bin/echo", "x"}, true), 10000);
  if (!ok(r)) die(fmt::format("{}: process/start echo: {}", s.name(), err_text(r)));
  if (!s.wait_until([&] { return st.first_output_ns != 0; }, 10000))
    die(fmt::format("{}: no output from echo within 10 s", s.name()));
  std::int64_t dt = st.first_output_ns - t0;
  if (!s.wait_until([&] { return st.closed; }, 10000))
    die(fmt::format("{}: echo not closed within 10 s", s.name()));
  s.procs().erase(id);
  return dt;
}

struct Tput {
  double mib_s = 0;
  double client_cpu = 0;  // client CPU / wall
  double server_cpu = 0;  // server CPU / wall
  double server_ms_per_mib = 0;  // server CPU per MiB delivered
  double client_ms_per_mib = 0;  // this client's CPU per MiB delivered
  std::uint64_t bytes = 0;
  std::uint64_t lost = 0;   // expected - received, when the server skipped seqs
  std::uint64_t holes = 0;
};

Tput tput_sample(Server& s, const std::string& file, std::uint64_t expect) {
  std::string id = s.new_process_id();
  ProcState& st = s.procs()[id];
  std::int64_t c0 = cpu_self_ns();
  std::int64_t sc0 = proc_cpu_ns(s.pid());
  std::int64_t t0 = now_ns();
  auto r = s.request("process/start", start_params(id, {"/bin/cat", file}, true), 10000);
  if (!ok(r)) die(fmt::format("{}: process/start cat: {}", s.name(), err_text(r)));
  if (std::getenv("BENCH_RPC_TRACE"))
    std::fprintf(stderr, "trace %s %.3f start sent, %.3f replied\n", s.name().c_str(), ns_to_ms(t0),
                 ns_to_ms(now_ns()));
  if (!s.wait_until([&] { return st.closed; }, 300000))
    die(fmt::format("{}: cat not closed within 300 s ({} bytes)", s.name(), st.bytes));
  std::int64_t t1 = now_ns();
  std::int64_t c1 = cpu_self_ns();
  std::int64_t sc1 = proc_cpu_ns(s.pid());
  if (st.bytes < expect && st.holes == 0)
    die(fmt::format("{}: received {} bytes, expected {}, no seq hole", s.name(), st.bytes, expect));
  Tput t;
  t.lost = st.bytes < expect ? expect - st.bytes : 0;
  t.holes = st.holes;
  t.bytes = st.bytes;
  t.mib_s = static_cast<double>(st.bytes) / (1024.0 * 1024.0) / (static_cast<double>(t1 - t0) / 1e9);
  t.client_cpu = static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
  t.server_cpu = static_cast<double>(sc1 - sc0) / static_cast<double>(t1 - t0);
  t.server_ms_per_mib = ns_to_ms(sc1 - sc0) / (static_cast<double>(st.bytes) / (1024.0 * 1024.0));
  t.client_ms_per_mib = ns_to_ms(c1 - c0) / (static_cast<double>(st.bytes) / (1024.0 * 1024.0));
  s.procs().erase(id);
  return t;
}

// The raw ceiling of P1-tput-ceiling: the same `cat FILE` on a fresh PTY (posix_spawn, the
// slave as controlling tty, the kernel's default cooked termios as a uexec tty has), drained
// by a plain poll + read loop, timed from the spawn to EOF (EIO once `cat` has exited) and
// the reap. No server, no JSON, no base64: what any reader of this PTY can get.
Tput raw_ceiling_sample(const std::string& file, std::uint64_t expect) {
  static const CArgs argv({"/bin/cat", file});
  static const CArgs envp(current_env());
  static std::vector<char> buf(64 * 1024);
  RawPty p = open_raw_pty();
  if (::fcntl(p.master, F_SETFL, ::fcntl(p.master, F_GETFL) | O_NONBLOCK) != 0) die_errno("fcntl O_NONBLOCK");
  std::int64_t c0 = cpu_self_ns();
  std::int64_t t0 = now_ns();
  pid_t pid = spawn_on_pty(p, argv, envp);
  std::uint64_t bytes = 0;
  pollfd pfd{p.master, POLLIN, 0};
  bool eio_once = false;
  for (;;) {
    ssize_t n = ::read(p.master, buf.data(), buf.size());
    if (n > 0) {
      bytes += static_cast<std::uint64_t>(n);
      eio_once = false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) die_errno("poll");
      continue;
    }
    // EIO: every slave fd is closed. Twice in a row, as PtyProcess does: a read first flushes
    // the tty's pending buffer work, which the next one may find.
    if (n < 0 && errno == EIO && !eio_once) {
      eio_once = true;
      continue;
    }
    break;
  }
  reap(pid);
  std::int64_t t1 = now_ns();
  std::int64_t c1 = cpu_self_ns();
  p.close_master();
  if (bytes != expect) die(fmt::format("raw ceiling: read {} bytes of cat, expected {}", bytes, expect));
  Tput t;
  t.bytes = bytes;
  t.mib_s = static_cast<double>(bytes) / (1024.0 * 1024.0) / (static_cast<double>(t1 - t0) / 1e9);
  t.client_cpu = static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
  t.client_ms_per_mib = ns_to_ms(c1 - c0) / (static_cast<double>(bytes) / (1024.0 * 1024.0));
  return t;
}

struct Rss {
  double base_kib = 0, loaded_kib = 0;
};

Rss rss_sample(const Peer& p, int sessions) {
  auto s = launch(p);
  s->idle(200);
  Rss out;
  out.base_kib = vmrss_kib(s->pid());
  for (int i = 0; i < sessions; ++i) {
    std::string id = s->new_process_id();
    auto r = s->request("process/start", start_params(id, {"/bin/sleep", "1000"}, true), 10000);
    if (!ok(r)) die(fmt::format("{}: process/start sleep #{}: {}", p.name, i, err_text(r)));
  }
  s->idle(300);
  out.loaded_kib = vmrss_kib(s->pid());
  s->shutdown(3000);
  return out;
}

struct Many {
  int expected = 0;
  int started = 0;
  int read_answered = 0;
  bool status_answered = false;
  double start_s = 0;    // time to start them all (or up to the stall)
  double total_s = 0;    // starts + reads + status
  double teardown_s = 0; // stdin EOF -> server exit
  std::string stop_reason;
  int answered() const { return started + read_answered + (status_answered ? 1 : 0); }
  int requests() const { return expected * 2 + 1; }
};

// n sessions; `burst`: all start requests written back to back before collecting replies.
Many many_sample(const Peer& p, int n, bool burst, int budget_ms, int per_request_ms) {
  Many m;
  m.expected = n;
  auto s = launch(p);
  std::int64_t t0 = now_ns();
  std::int64_t deadline = t0 + static_cast<std::int64_t>(budget_ms) * 1'000'000;
  std::vector<std::string> ids;
  if (burst) {
    std::vector<std::int64_t> reqs;
    for (int i = 0; i < n; ++i) {
      std::string id = s->new_process_id();
      reqs.push_back(s->send_request("process/start", start_params(id, {"/bin/sleep", "1000"}, true)));
      ids.push_back(id);
    }
    for (int i = 0; i < n; ++i) {
      int left = static_cast<int>(std::max<std::int64_t>((deadline - now_ns()) / 1'000'000, 0));
      auto r = s->await(reqs[static_cast<std::size_t>(i)], left);
      if (!ok(r)) {
        m.stop_reason = fmt::format("start #{}: {}", i, err_text(r));
        break;
      }
      ++m.started;
    }
  } else {
    for (int i = 0; i < n; ++i) {
      int left = static_cast<int>(std::max<std::int64_t>((deadline - now_ns()) / 1'000'000, 0));
      std::string id = s->new_process_id();
      auto r = s->request("process/start", start_params(id, {"/bin/sleep", "1000"}, true),
                          std::min(left, per_request_ms));
      if (!ok(r)) {
        m.stop_reason = fmt::format("start #{}: {}", i, err_text(r));
        break;
      }
      ids.push_back(id);
      ++m.started;
    }
  }
  m.start_s = static_cast<double>(now_ns() - t0) / 1e9;
  if (m.started == n) {
    for (const std::string& id : ids) {
      auto r = s->request("process/read", {{"processId", id}, {"afterSeq", 0}, {"maxBytes", 4096}, {"waitMs", 0}},
                          per_request_ms);
      if (!ok(r)) {
        m.stop_reason = fmt::format("process/read {}: {}", id, err_text(r));
        break;
      }
      if ((*r)["result"].value("exited", false)) {
        m.stop_reason = fmt::format("{} exited early", id);
        break;
      }
      ++m.read_answered;
    }
    if (m.read_answered == n) {
      auto r = s->request("environment/status", json::object(), per_request_ms);
      m.status_answered = ok(r);
      if (!ok(r)) m.stop_reason = "environment/status: " + err_text(r);
    }
  }
  m.total_s = static_cast<double>(now_ns() - t0) / 1e9;
  std::int64_t e0 = now_ns();
  s->shutdown(10000);
  m.teardown_s = static_cast<double>(now_ns() - e0) / 1e9;
  return m;
}

struct P2Round {
  double base_status_ms = 0, loaded_status_ms = 0;
  double base_read_ms = 0, loaded_read_ms = 0;
  int loaded_samples = 0;
  double longpoll_ms = 0;  // long poll send -> its reply
};

// One P2 round on an initialized server with a tty `cat` (a) and a tty `sleep` (b).
P2Round p2_round(Server& s, const std::string& a, const std::string& b, int k, int& write_no) {
  auto timed = [&](const std::string& method, json params) {
    std::int64_t t0 = now_ns();
    auto r = s.request(method, std::move(params), 15000);
    if (!ok(r)) die(fmt::format("{}: {}: {}", s.name(), method, err_text(r)));
    return ns_to_ms(now_ns() - t0);
  };
  json read_b = {{"processId", b}, {"afterSeq", 0}, {"maxBytes", 4096}, {"waitMs", 0}};
  std::vector<double> bs, br, ls, lr;
  for (int i = 0; i < k; ++i) {
    bs.push_back(timed("environment/status", json::object()));
    br.push_back(timed("process/read", read_b));
  }
  ProcState& sa = s.procs()[a];
  std::uint64_t after = sa.last_seq;
  std::int64_t lp0 = now_ns();
  std::int64_t lp = s.send_request(
      "process/read", {{"processId", a}, {"afterSeq", after}, {"maxBytes", 65536}, {"waitMs", 5000}});
  s.idle(20);  // let the server take the long poll in
  for (int i = 0; i < k && !s.has_response(lp); ++i) {
    ls.push_back(timed("environment/status", json::object()));
    if (s.has_response(lp)) break;  // it answered the long poll first: not concurrent any more
    lr.push_back(timed("process/read", read_b));
  }
  // End the long poll: the tty echoes the byte.
  std::int64_t w = s.send_request(
      "process/write", {{"processId", a}, {"chunk", b64_encode("x")}, {"writeId", fmt::format("w{}", write_no++)}});
  auto lr_resp = s.await(lp, 15000);
  if (!ok(lr_resp)) die(fmt::format("{}: long poll: {}", s.name(), err_text(lr_resp)));
  std::int64_t lp1 = now_ns();
  auto wr = s.await(w, 15000);
  if (!ok(wr)) die(fmt::format("{}: process/write: {}", s.name(), err_text(wr)));
  if (!s.wait_until([&] { return sa.last_seq > after; }, 5000))
    die(fmt::format("{}: no echo from cat", s.name()));
  s.idle(5);
  P2Round out;
  out.base_status_ms = median(bs);
  out.base_read_ms = median(br);
  out.loaded_status_ms = median(ls);
  out.loaded_read_ms = lr.empty() ? 0 : median(lr);
  out.loaded_samples = static_cast<int>(ls.size());
  out.longpoll_ms = ns_to_ms(lp1 - lp0);
  return out;
}

// ---------------------------------------------------------------------------------------

// Writes `bytes` of 80-column lines (79 'x' + '\n'); returns the bytes a cooked tty turns
// them into (each '\n' becomes "\r\n").
std::uint64_t make_lines_file(const std::string& path, std::uint64_t bytes) {
  std::string line(79, 'x');
  line += '\n';
  std::string block;
  while (block.size() < (1u << 20)) block += line;  // 1 MiB + some: whole lines
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) die("cannot write " + path);
  std::uint64_t lines_total = 0, written = 0;
  while (written < bytes) {
    std::uint64_t n = std::min<std::uint64_t>(block.size(), bytes - written);
    n -= n % line.size();
    if (n == 0) break;
    out.write(block.data(), static_cast<std::streamsize>(n));
    written += n;
    lines_total += n / line.size();
  }
  if (!out) die("short write " + path);
  return written + lines_total;
}

int bench_main(int argc, char** argv) {
  std::string uexec_path, codex_path, only;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if ((a == "--uexec" || a == "--codex" || a == "--only") && i + 1 < argc) {
      (a == "--uexec" ? uexec_path : a == "--codex" ? codex_path : only) = argv[++i];
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--quick] [--peers] [--json PATH] [--uexec PATH] [--codex PATH]\n"
                "       [--only start,tput,rss,1000,p2,fs]\n", argv[0]);
      return 0;
    } else {
      rest.push_back(argv[i]);
    }
  }
  Options o = parse_options(static_cast<int>(rest.size()), rest.data());
  if (!o.rest.empty()) die("unknown option " + o.rest.front());

  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::atexit(emergency_cleanup);
  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);
  ::signal(SIGHUP, on_signal);
  ::signal(SIGPIPE, SIG_IGN);

  std::string self = self_exe();
  std::string build = dirname_of(dirname_of(dirname_of(self)));  // <build>/tools/bench/bench_rpc
  if (uexec_path.empty()) uexec_path = build + "/src/uexec";
  if (!is_exec(uexec_path)) die("uexec not found at " + uexec_path + " (use --uexec PATH)");

  std::vector<std::string> searched;
  codex_path = find_codex(build, codex_path, searched);
  bool have_codex = !codex_path.empty();
  std::string skip_note;
  if (!have_codex) {
    std::string list;
    for (auto& c : searched) list += (list.empty() ? "" : ", ") + c;
    skip_note = "skipped: Codex exec-server 0.169.0 not found (searched " + list +
                "; install with `npm install --prefix build/bench/peers @openai/codex@0.169.0` or pass --codex PATH)";
    std::fprintf(stderr, "bench_rpc: %s\n", skip_note.c_str());
    if (o.peers) std::fprintf(stderr, "bench_rpc: --peers given, but the Codex rows cannot run\n");
  } else {
    std::fprintf(stderr, "bench_rpc: codex = %s\n", codex_path.c_str());
  }
  std::fprintf(stderr, "bench_rpc: uexec = %s\n", uexec_path.c_str());

  const Peer U{"uexec", {uexec_path, "exec-server", "--listen", "stdio"}};
  const Peer C{"codex", {codex_path, "exec-server", "--listen", "stdio"}};

  const int start_rounds = o.quick ? 3 : 7;
  const int start_k = o.quick ? 8 : 25;
  const int tput_rounds = o.quick ? 3 : 9;
  const std::uint64_t tput_bytes = (o.quick ? 8ull : 32ull) << 20;
  const int rss_rounds = o.quick ? 2 : 4;
  const int rss_sessions = o.quick ? 20 : 50;
  const int many_n = 1000;
  const int codex_budget_ms = o.quick ? 20000 : 60000;
  const int p2_rounds = o.quick ? 2 : 4;
  const int p2_k = o.quick ? 15 : 40;

  auto want = [&](std::string_view part) {
    if (only.empty()) return true;
    std::string list = "," + only + ",";
    return list.find(fmt::format(",{},", part)) != std::string::npos;
  };
  std::vector<Row> rows;
  auto skipped_row = [&](std::string id, std::string name, Cmp cmp, double target) {
    Row r = make_row(std::move(id), std::move(name), {}, cmp, target);
    r.note = skip_note;
    return r;
  };

  // ---- P1-start and P1-tput: one long-lived server each, samples interleaved.
  if (want("start") || want("tput")) {
    std::string file = fmt::format("/tmp/bench_rpc_lines.{}", ::getpid());
    g_tmp_file = file;
    std::uint64_t expect = make_lines_file(file, tput_bytes);
    std::fprintf(stderr, "bench_rpc: P1-start/P1-tput\n");
    auto su = launch(U);
    std::unique_ptr<Server> sc;
    if (have_codex) sc = launch(C);
    if (want("start")) {
      for (int i = 0; i < 3; ++i) {  // warm-up
        first_byte_sample(*su);
        if (sc) first_byte_sample(*sc);
    }
    std::vector<double> r_start, u_ms, c_ms;
    for (int r = 0; r < start_rounds; ++r) {
      std::vector<double> vu, vc;
      for (int i = 0; i < start_k; ++i) {
        vu.push_back(ns_to_ms(first_byte_sample(*su)));
        if (sc) vc.push_back(ns_to_ms(first_byte_sample(*sc)));
      }
      u_ms.push_back(median(vu));
      if (sc) {
        c_ms.push_back(median(vc));
        r_start.push_back(c_ms.back() / u_ms.back());
      }
      std::fprintf(stderr, "  start round %d/%d: uexec %.2f ms codex %s\n", r + 1, start_rounds, u_ms.back(),
                   sc ? fmt::format("{:.2f} ms", c_ms.back()).c_str() : "-");
    }
    Row rs = make_row("P1-start", "process/start -> first output byte, echo x tty, codex/uexec", r_start,
                      Cmp::kGe, 3);
    rs.absolute_text = fmt::format("uexec {}", abs3("ms", u_ms, 2));
    if (sc) rs.absolute_text += fmt::format("; codex {}", abs3("ms", c_ms, 2));
    rs.absolute = {{"uexec_ms", u_ms}, {"codex_ms", c_ms}, {"samples_per_round", start_k}};
    if (!sc) rs.note = skip_note;
    rows.push_back(rs);
    }

    if (want("tput")) {
      // Warm-ups decode and check every chunk (page cache, allocator); the timed rounds count
      // chunk sizes only, so the client's decoding is excluded for both servers alike.
      raw_ceiling_sample(file, expect);
      tput_sample(*su, file, expect);
      if (sc) tput_sample(*sc, file, expect);
      su->set_decode(false);
      if (sc) sc->set_decode(false);
      std::vector<double> r_tput, r_ceil, r_room, r_cpm;
      std::vector<double> raw_mib, raw_cpm, u_mib, c_mib, u_cpu, c_cpu, u_scpu, c_scpu, u_cpm, c_cpm, u_ccpm, c_ccpm;
      std::uint64_t u_lost = 0, c_lost = 0, u_holes = 0, c_holes = 0;
      for (int r = 0; r < tput_rounds; ++r) {
        Tput tr, tu, tc;
        // The three runs of a round in a rotating order: none always follows another.
        for (int k = 0; k < 3; ++k) {
          switch ((r + k) % 3) {
            case 0: tr = raw_ceiling_sample(file, expect); break;
            case 1: tu = tput_sample(*su, file, expect); break;
            default: if (sc) tc = tput_sample(*sc, file, expect); break;
          }
        }
        raw_mib.push_back(tr.mib_s);
        raw_cpm.push_back(tr.client_ms_per_mib);
        u_mib.push_back(tu.mib_s);
        u_cpu.push_back(tu.client_cpu * 100);
        u_scpu.push_back(tu.server_cpu * 100);
        u_cpm.push_back(tu.server_ms_per_mib);
        u_ccpm.push_back(tu.client_ms_per_mib);
        u_lost += tu.lost;
        u_holes += tu.holes;
        r_ceil.push_back(tu.mib_s / tr.mib_s);
        if (sc) {
          c_mib.push_back(tc.mib_s);
          c_cpu.push_back(tc.client_cpu * 100);
          c_scpu.push_back(tc.server_cpu * 100);
          c_cpm.push_back(tc.server_ms_per_mib);
          c_ccpm.push_back(tc.client_ms_per_mib);
          r_cpm.push_back(tc.server_ms_per_mib / tu.server_ms_per_mib);
          c_lost += tc.lost;
          c_holes += tc.holes;
          r_tput.push_back(tu.mib_s / tc.mib_s);
          r_room.push_back(tr.mib_s / tc.mib_s);
        }
        std::fprintf(stderr, "  tput round %d/%d: raw %.1f uexec %.1f MiB/s codex %s\n", r + 1, tput_rounds,
                     raw_mib.back(), u_mib.back(), sc ? fmt::format("{:.1f} MiB/s", c_mib.back()).c_str() : "-");
      }
      su->set_decode(true);
      if (sc) sc->set_decode(true);
      const std::string mib = fmt::format("{} MiB", tput_bytes >> 20);

      Row rceil = make_row("P1-tput-ceiling",
                           fmt::format("tty cat {} of 80-col lines: uexec via process/output / a plain poll+read loop on the PTY", mib),
                           r_ceil, Cmp::kGe, 0.95);
      rceil.absolute_text = fmt::format("raw {} (reader {}); uexec {} (server {}, client {})", abs3("MiB/s", raw_mib, 1),
                                        abs3("ms/MiB", raw_cpm, 1), abs3("MiB/s", u_mib, 1), abs3("ms/MiB", u_cpm, 1),
                                        abs3("ms/MiB", u_ccpm, 1));
      rceil.absolute = {{"raw_mib_s", raw_mib}, {"raw_reader_ms_per_mib", raw_cpm}, {"uexec_mib_s", u_mib},
                        {"uexec_server_ms_per_mib", u_cpm}, {"uexec_client_ms_per_mib", u_ccpm},
                        {"uexec_seq_holes", u_holes}, {"uexec_bytes_lost", u_lost}};
      rows.push_back(rceil);

      // P1-tput's target is 1.3x Codex where the ceiling allows it: never above what 0.95x of
      // the raw ceiling would give against Codex in the same rounds (median of raw/codex).
      const double room = r_room.empty() ? 0 : stats(r_room).median;
      const double tput_target = r_room.empty() ? 1.3 : std::min(1.3, 0.95 * room);
      Row rt = make_row("P1-tput",
                        fmt::format("tty throughput, cat {} of 80-col lines via process/output, uexec/codex "
                                    "(target min(1.3, 0.95 x raw/codex))", mib),
                        r_tput, Cmp::kGe, std::round(tput_target * 1000) / 1000);
      rt.absolute_text = fmt::format("uexec {} (server CPU {}, client CPU {})", abs3("MiB/s", u_mib, 1),
                                     abs3("%", u_scpu, 0), abs3("%", u_cpu, 0));
      if (sc)
        rt.absolute_text += fmt::format("; codex {} (server CPU {}, client CPU {}); raw/codex {:.3f}",
                                        abs3("MiB/s", c_mib, 1), abs3("%", c_scpu, 0), abs3("%", c_cpu, 0), room);
      auto lost_text = [&](const char* who, std::uint64_t lost, std::uint64_t holes) {
        if (!holes) return std::string();
        return fmt::format("; {} skipped {} seqs, {:.0f} KiB lost over {} rounds", who, holes,
                           static_cast<double>(lost) / 1024.0, tput_rounds);
      };
      rt.absolute_text += lost_text("uexec", u_lost, u_holes) + lost_text("codex", c_lost, c_holes);
      rt.absolute = {{"uexec_mib_s", u_mib}, {"codex_mib_s", c_mib}, {"raw_mib_s", raw_mib},
                     {"raw_over_codex", r_room}, {"uexec_client_cpu_pct", u_cpu},
                     {"codex_client_cpu_pct", c_cpu}, {"bytes_expected", expect},
                     {"uexec_server_cpu_pct", u_scpu}, {"codex_server_cpu_pct", c_scpu},
                     {"uexec_seq_holes", u_holes}, {"uexec_bytes_lost", u_lost},
                     {"codex_seq_holes", c_holes}, {"codex_bytes_lost", c_lost}};
      if (!sc) rt.note = skip_note;
      rows.push_back(rt);

      Row rcpu = make_row("P1-tput-cpu", "server CPU per MiB delivered in the same runs, codex/uexec", r_cpm,
                          Cmp::kGe, 2.5);
      rcpu.absolute_text = fmt::format("uexec {} (client {})", abs3("ms/MiB", u_cpm, 1), abs3("ms/MiB", u_ccpm, 1));
      if (sc)
        rcpu.absolute_text += fmt::format("; codex {} (client {})", abs3("ms/MiB", c_cpm, 1), abs3("ms/MiB", c_ccpm, 1));
      rcpu.absolute = {{"uexec_server_ms_per_mib", u_cpm}, {"codex_server_ms_per_mib", c_cpm},
                       {"uexec_client_ms_per_mib", u_ccpm}, {"codex_client_ms_per_mib", c_ccpm}};
      if (!sc) rcpu.note = skip_note;
      rows.push_back(rcpu);
    }
    su.reset();
    sc.reset();
    ::unlink(file.c_str());
  }

  // ---- P1-rss: a fresh server per sample.
  if (want("rss")) {
    std::fprintf(stderr, "bench_rpc: P1-rss\n");
    std::vector<double> ratio, u_mib, c_mib, u_per, c_per, u_base, c_base;
    for (int r = 0; r < rss_rounds; ++r) {
      Rss ru = rss_sample(U, rss_sessions);
      u_mib.push_back(ru.loaded_kib / 1024);
      u_base.push_back(ru.base_kib / 1024);
      u_per.push_back((ru.loaded_kib - ru.base_kib) / rss_sessions);
      if (have_codex) {
        Rss rc = rss_sample(C, rss_sessions);
        c_mib.push_back(rc.loaded_kib / 1024);
        c_base.push_back(rc.base_kib / 1024);
        c_per.push_back((rc.loaded_kib - rc.base_kib) / rss_sessions);
        ratio.push_back(ru.loaded_kib / rc.loaded_kib);
      }
      std::fprintf(stderr, "  rss round %d/%d: uexec %.1f MiB codex %s\n", r + 1, rss_rounds, u_mib.back(),
                   have_codex ? fmt::format("{:.1f} MiB", c_mib.back()).c_str() : "-");
    }
    Row row = make_row("P1-rss",
                       fmt::format("server VmRSS after initialize + {} idle tty sleeps, uexec/codex", rss_sessions),
                       ratio, Cmp::kLe, 0.2);
    row.absolute_text = fmt::format("uexec {} (idle {}, {} per session)", abs3("MiB", u_mib, 1),
                                    abs3("MiB", u_base, 1), abs3("KiB", u_per, 1));
    if (have_codex)
      row.absolute_text += fmt::format("; codex {} (idle {}, {} per session)", abs3("MiB", c_mib, 1),
                                       abs3("MiB", c_base, 1), abs3("KiB", c_per, 1));
    row.absolute = {{"uexec_rss_mib", u_mib}, {"uexec_idle_rss_mib", u_base}, {"uexec_kib_per_session", u_per},
                    {"codex_rss_mib", c_mib}, {"codex_idle_rss_mib", c_base}, {"codex_kib_per_session", c_per},
                    {"sessions", rss_sessions}};
    if (!have_codex) row.note = skip_note;
    rows.push_back(row);
  }

  // ---- P1-1000.
  auto many_row = [&](std::string id, std::string name, const Many& m, Cmp cmp) {
    Row r = make_row(std::move(id), std::move(name),
                     {static_cast<double>(m.answered()) / static_cast<double>(m.requests())}, cmp, 1);
    r.absolute_text = fmt::format("{}/{} started in {:.2f} s, {}/{} reads + status {}; {}/{} requests answered, "
                                  "total {:.2f} s, teardown {:.2f} s",
                                  m.started, m.expected, m.start_s, m.read_answered, m.expected,
                                  m.status_answered ? "ok" : "not answered", m.answered(), m.requests(), m.total_s,
                                  m.teardown_s);
    if (!m.stop_reason.empty()) r.absolute_text += "; stopped at " + m.stop_reason;
    r.absolute = {{"expected", m.expected}, {"started", m.started}, {"reads_answered", m.read_answered},
                  {"status_answered", m.status_answered}, {"requests", m.requests()},
                  {"answered", m.answered()}, {"start_s", m.start_s}, {"total_s", m.total_s},
                  {"teardown_s", m.teardown_s}, {"stop_reason", m.stop_reason}};
    return r;
  };
  if (want("1000")) {
    std::fprintf(stderr, "bench_rpc: P1-1000\n");
    Many mu = many_sample(U, many_n, false, 120000, 10000);
    std::fprintf(stderr, "  uexec sequential: %d started, %.2f s %s\n", mu.started, mu.start_s, mu.stop_reason.c_str());
    rows.push_back(many_row("P1-1000", "1000 tty sessions on uexec, sequential: requests answered / sent", mu,
                            Cmp::kGe));
    Many mb = many_sample(U, many_n, true, 120000, 10000);
    std::fprintf(stderr, "  uexec burst: %d started, %.2f s %s\n", mb.started, mb.start_s, mb.stop_reason.c_str());
    rows.push_back(many_row("P1-1000-burst", "same, 1000 starts pipelined on uexec (info)", mb, Cmp::kInfo));
    if (have_codex) {
      Many mc = many_sample(C, many_n, false, codex_budget_ms, 5000);
      std::fprintf(stderr, "  codex sequential: %d started, %.2f s %s\n", mc.started, mc.start_s,
                   mc.stop_reason.c_str());
      Row r = many_row("P1-1000-codex",
                       fmt::format("same on Codex, sequential, {} s budget (info)", codex_budget_ms / 1000), mc,
                       Cmp::kInfo);
      rows.push_back(r);
    } else {
      rows.push_back(skipped_row("P1-1000-codex", "same on Codex (info)", Cmp::kInfo, 0));
    }
  }

  // ---- P2.
  if (want("p2")) {
    std::fprintf(stderr, "bench_rpc: P2\n");
    struct P2Server {
      std::unique_ptr<Server> s;
      std::string a, b;
      int writes = 0;
    };
    auto p2_setup = [&](const Peer& p) {
      P2Server x;
      x.s = launch(p);
      x.a = x.s->new_process_id();
      x.b = x.s->new_process_id();
      auto ra = x.s->request("process/start", start_params(x.a, {"/bin/cat"}, true), 10000);
      auto rb = x.s->request("process/start", start_params(x.b, {"/bin/sleep", "1000"}, true), 10000);
      if (!ok(ra) || !ok(rb)) die(p.name + ": P2 process/start failed");
      x.s->idle(100);
      for (int i = 0; i < 20; ++i) x.s->request("environment/status", json::object(), 5000);
      return x;
    };
    P2Server xu = p2_setup(U);
    std::optional<P2Server> xc;
    if (have_codex) xc = p2_setup(C);
    std::vector<double> us, ur, cs, u_bs, u_ls, u_br, u_lr, c_bs, c_ls, u_lp, c_lp;
    for (int r = 0; r < p2_rounds; ++r) {
      P2Round pu = p2_round(*xu.s, xu.a, xu.b, p2_k, xu.writes);
      us.push_back(pu.loaded_status_ms / pu.base_status_ms);
      ur.push_back(pu.loaded_read_ms / pu.base_read_ms);
      u_bs.push_back(pu.base_status_ms * 1000);
      u_ls.push_back(pu.loaded_status_ms * 1000);
      u_br.push_back(pu.base_read_ms * 1000);
      u_lr.push_back(pu.loaded_read_ms * 1000);
      u_lp.push_back(pu.longpoll_ms);
      if (pu.loaded_samples < p2_k)
        std::fprintf(stderr, "  uexec: long poll answered early (%d samples)\n", pu.loaded_samples);
      if (xc) {
        P2Round pc = p2_round(*xc->s, xc->a, xc->b, p2_k, xc->writes);
        cs.push_back(pc.loaded_status_ms / pc.base_status_ms);
        c_bs.push_back(pc.base_status_ms);
        c_ls.push_back(pc.loaded_status_ms);
        c_lp.push_back(pc.longpoll_ms);
      }
      std::fprintf(stderr, "  p2 round %d/%d: uexec status x%.2f read x%.2f codex %s\n", r + 1, p2_rounds, us.back(),
                   ur.back(), xc ? fmt::format("x{:.0f}", cs.back()).c_str() : "-");
    }
    Row rs = make_row("P2-status", "environment/status latency, long poll pending / none, uexec", us, Cmp::kLe, 1.5);
    rs.absolute_text = fmt::format("idle {}; with long poll {}", abs3("us", u_bs, 0), abs3("us", u_ls, 0));
    rs.absolute = {{"idle_us", u_bs}, {"loaded_us", u_ls}, {"long_poll_ms", u_lp}, {"samples_per_round", p2_k}};
    rows.push_back(rs);
    Row rr = make_row("P2-read", "process/read waitMs 0 of another process, long poll pending / none, uexec", ur,
                      Cmp::kLe, 1.5);
    rr.absolute_text = fmt::format("idle {}; with long poll {}", abs3("us", u_br, 0), abs3("us", u_lr, 0));
    rr.absolute = {{"idle_us", u_br}, {"loaded_us", u_lr}, {"samples_per_round", p2_k}};
    rows.push_back(rr);
    if (xc) {
      Row rc = make_row("P2-codex", "environment/status latency, long poll pending / none, Codex (info)", cs,
                        Cmp::kInfo, 0);
      rc.absolute_text = fmt::format("idle {}; with long poll {}", abs3("ms", c_bs, 3), abs3("ms", c_ls, 0));
      rc.absolute = {{"idle_ms", c_bs}, {"loaded_ms", c_ls}, {"long_poll_ms", c_lp}};
      rows.push_back(rc);
    } else {
      rows.push_back(skipped_row("P2-codex", "environment/status latency with long poll pending, Codex (info)",
                                 Cmp::kInfo, 0));
    }
  }

  // ---- F1: fs/* latency (issue 18), one request at a time, rounds interleaved.
  if (want("fs")) {
    std::fprintf(stderr, "bench_rpc: F1 (fs/*)\n");
    std::string dir = fmt::format("/var/tmp/bench_rpc_fs.{}", ::getpid());
    ::mkdir(dir.c_str(), 0755);
    std::string file = dir + "/file.txt";
    {
      std::string text(4096, 'x');
      FILE* f = std::fopen(file.c_str(), "w");
      if (!f) die_errno("fopen " + file);
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
    json meta = {{"path", "file://" + file}};
    json sandboxed = meta;
    // Codex's shape: the root readable, the directory writable (what a workspace-write turn sends).
    sandboxed["sandbox"] = {
        {"permissions",
         {{"type", "managed"},
          {"network", "restricted"},
          {"file_system",
           {{"type", "restricted"},
            {"entries",
             {{{"path", {{"type", "special"}, {"value", {{"kind", "root"}}}}}, {"access", "read"}},
              {{"path", {{"type", "path"}, {"path", "file://" + dir}}}, {"access", "write"}}}}}}}},
        {"cwd", "file://" + dir},
        {"windowsSandboxLevel", "disabled"}};
    auto sample_ms = [](Server& s, const char* method, const json& params) {
      std::int64_t t0 = now_ns();
      auto r = s.request(method, params, 20000);
      if (!ok(r)) die(fmt::format("{}: {}: {}", s.name(), method, err_text(r)));
      return ns_to_ms(now_ns() - t0);
    };
    const int rounds = o.quick ? 3 : 7, k = o.quick ? 50 : 200, k_sandboxed = o.quick ? 5 : 15;
    auto su = launch(U);
    std::unique_ptr<Server> sc;
    if (have_codex) sc = launch(C);
    for (int i = 0; i < 20; ++i) {  // warm-up (thread pool, page cache)
      sample_ms(*su, "fs/getMetadata", meta);
      sample_ms(*su, "fs/readFile", meta);
      if (sc) sample_ms(*sc, "fs/getMetadata", meta), sample_ms(*sc, "fs/readFile", meta);
    }
    // The floor of a design that stats on libuv's thread pool (pool_trip_us), plus uexec's
    // latency for a request that does no file work.
    std::vector<double> r_meta, r_read, r_sb, r_floor, um, cm, ur, cr, us, cs, ustat, pool;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> v_um, v_cm, v_ur, v_cr, v_us, v_cs, v_stat;
      for (int i = 0; i < k; ++i) {
        v_stat.push_back(sample_ms(*su, "environment/status", json::object()));
        v_um.push_back(sample_ms(*su, "fs/getMetadata", meta));
        if (sc) v_cm.push_back(sample_ms(*sc, "fs/getMetadata", meta));
        v_ur.push_back(sample_ms(*su, "fs/readFile", meta));
        if (sc) v_cr.push_back(sample_ms(*sc, "fs/readFile", meta));
      }
      for (int i = 0; i < k_sandboxed; ++i) {
        v_us.push_back(sample_ms(*su, "fs/readFile", sandboxed));
        if (sc) v_cs.push_back(sample_ms(*sc, "fs/readFile", sandboxed));
      }
      um.push_back(median(v_um) * 1000);
      ur.push_back(median(v_ur) * 1000);
      ustat.push_back(median(v_stat) * 1000);
      pool.push_back(pool_trip_us(file, k));
      us.push_back(median(v_us));
      r_sb.push_back(median(v_us) / median(v_ur));
      if (sc) {
        cm.push_back(median(v_cm) * 1000);
        cr.push_back(median(v_cr) * 1000);
        cs.push_back(median(v_cs));
        r_meta.push_back(um.back() / cm.back());
        r_read.push_back(ur.back() / cr.back());
        r_floor.push_back((ustat.back() + pool.back()) / cm.back());
      }
      std::fprintf(stderr, "  fs round %d/%d: getMetadata uexec %.0f us codex %s; readFile uexec %.0f us codex %s\n",
                   r + 1, rounds, um.back(), sc ? fmt::format("{:.0f} us", cm.back()).c_str() : "-", ur.back(),
                   sc ? fmt::format("{:.0f} us", cr.back()).c_str() : "-");
    }
    Row rm = make_row("F1-meta", "fs/getMetadata latency, uexec/codex", r_meta, Cmp::kLe, 0.5);
    rm.absolute_text = fmt::format("uexec {}", abs3("us", um, 0));
    if (sc) rm.absolute_text += fmt::format("; codex {}", abs3("us", cm, 0));
    rm.absolute = {{"uexec_us", um}, {"codex_us", cm}, {"samples_per_round", k}};
    if (!sc) rm.note = skip_note;
    rows.push_back(rm);
    Row rr = make_row("F1-read", "fs/readFile 4 KiB latency, uexec/codex", r_read, Cmp::kLe, 0.5);
    rr.absolute_text = fmt::format("uexec {}", abs3("us", ur, 0));
    if (sc) rr.absolute_text += fmt::format("; codex {}", abs3("us", cr, 0));
    rr.absolute = {{"uexec_us", ur}, {"codex_us", cr}, {"samples_per_round", k}};
    if (!sc) rr.note = skip_note;
    rows.push_back(rr);
    Row rf = make_row("F1-meta-floor",
                      "(uexec environment/status + one libuv thread-pool round trip) / codex fs/getMetadata (info: "
                      "the least F1-meta can be while file work stays off the loop)",
                      r_floor, Cmp::kInfo, 0);
    rf.absolute_text = fmt::format("status {}; pool trip {}", abs3("us", ustat, 0), abs3("us", pool, 0));
    rf.absolute = {{"status_us", ustat}, {"pool_trip_us", pool}};
    if (!sc) rf.note = skip_note;
    rows.push_back(rf);
    Row rsb = make_row("F1-read-sandboxed", "fs/readFile 4 KiB in Codex's workspace-write sandbox / unsandboxed, uexec (info)",
                       r_sb, Cmp::kInfo, 0);
    rsb.absolute_text = fmt::format("uexec {}", abs3("ms", us, 2));
    if (sc) rsb.absolute_text += fmt::format("; codex {}", abs3("ms", cs, 2));
    rsb.absolute = {{"uexec_ms", us}, {"codex_ms", cs}, {"samples_per_round", k_sandboxed}};
    rows.push_back(rsb);
    ::unlink(file.c_str());
    ::rmdir(dir.c_str());
  }

  finish(o, fmt::format("bench_rpc (uexec exec-server vs Codex exec-server 0.169.0{}{})", o.quick ? ", quick" : "",
                        have_codex ? "" : ", Codex not found"),
         rows);
  emergency_cleanup();
  return 0;
}

}  // namespace
}  // namespace uexec::bench

int main(int argc, char** argv) { return uexec::bench::bench_main(argc, argv); }
