// bench_slow_reader: a reader that never reads must not slow the program, nor grow memory,
// nor lose output silently (docs/agent.md §7 "slow reader"; §3.1: output fds are
// always drained, no reader however slow can block the program; §3.2: readers never remove
// bytes; docs/protocol.md §4.7: a gap is never silent).
//
// A writer (this binary, `--writer MIB TIMEFILE`) writes MIB MiB of 80-column lines to
// stdout in 64 KiB write()s and then records its own wall time, from its main() to the
// return of its last write(), in TIMEFILE: the time the *program* spent, which is what a
// slow reader could cost it (a manager that stops draining blocks the program's write()).
//
// Each row runs the writer side by side in the same process, A-B-B-A in every round:
//   (1) the session alone: nothing but the manager drains it;
//   (2) the same plus one registered reader that never reads, of one of three kinds:
//       ring    an OutputRing reader: a cursor at 0 plus a Subscription whose notifier runs
//               on every chunk (what every reader below is made of);
//       agent   an agent session (agent::AgentService exec_command, tty or pipes, `sh -c exec
//               WRITER`) whose call is cancelled at once: its reader stays at 0 and its
//               subscription runs on_activity (the DECCKM scan on a tty) on every chunk,
//               and the agent never polls until the program has finished;
//       viewer  a protocol viewer (rpc::ExecServer): the owner's connection drains every
//               notification at once, and a second session subscribes as role "viewer" from
//               seq 0 on a connection that never reads: its queue fills to the high
//               watermark, then its pushes pause (the child is never paused for it).
//     Arm (1) of the agent row starts the same argv (`sh -c 'exec WRITER'`) through the
//     ProcessManager; arm (1) of the viewer row starts it through the same owner connection.
//     So only the reader differs (for agent: the agent session around it too).
//
// Reported per row: the program's wall time ratio (2)/(1), one per round ((B1+B2)/(A1+A2)),
// min/median/max over rounds, target <= 1.05 on the median; pipe rows get 3x the rounds
// (a run is ~15x shorter). Alongside: the manager's own CPU per MiB (the reader's cost where
// it is paid; it turns into program time only when the cores are contended). Then, over
// every (2) run: the ring's peak memory (OutputRing::memory_bytes, sampled every loop turn)
// against the retention cap (target <= 1.05x: pages plus the chunk index), this process's
// RSS growth during a run (peak VmRSS - VmRSS at the run's start; informational: it also
// holds the viewer's connection queue, bounded by the high watermark), and what the
// never-read reader gets when it finally reads: delivered bytes + reported gap must equal
// every byte the program wrote (ratio 1.0, exact), with the gap ≈ written - retention.
//
//   bench_slow_reader [--quick] [--json PATH] [--rounds=N] [--mib=N] [--case=agent-tty,...]
#include <sys/stat.h>

#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "agent/agent_service.h"
#include "bench_util.h"
#include "loop/loop.h"
#include "policy/exec_request.h"
#include "rpc/exec_server.h"
#include "session/process_manager.h"

namespace uexec::bench {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kLine = 80;

// ---- the writer ------------------------------------------------------------------------------

int writer_main(std::uint64_t mib, const char* time_file) {
  std::int64_t t0 = now_ns();
  std::string buf;
  const std::uint64_t per_buf = (64 * 1024) / kLine;
  for (std::uint64_t i = 0; i < per_buf; ++i) {
    for (std::uint64_t c = 0; c + 1 < kLine; ++c) buf.push_back(static_cast<char>('!' + static_cast<int>((i + c) % 94)));
    buf.push_back('\n');
  }
  std::uint64_t left = mib * kMiB / kLine;
  while (left > 0) {
    std::uint64_t n = std::min(left, per_buf);
    if (!write_all(1, buf.data(), static_cast<std::size_t>(n * kLine))) return 1;
    left -= n;
  }
  std::int64_t t1 = now_ns();
  int fd = ::open(time_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 2;
  std::string s = std::to_string(t1 - t0);
  bool ok = ::write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
  ::close(fd);
  return ok ? 0 : 3;
}

// ---- shared pieces ---------------------------------------------------------------------------

enum class Kind { kRing, kAgent, kViewer };
const char* kind_name(Kind k) { return k == Kind::kRing ? "ring" : k == Kind::kAgent ? "agent" : "viewer"; }

struct Setup {
  std::string exe;
  std::uint64_t mib = 100;
  std::string time_file;
  std::vector<std::string> env;  // "NAME=value" for every child
  std::size_t retain = base::Config{}.retain_bytes;
};

struct Run {
  double prog_s = 0;            // the writer's own wall time
  double mgr_s = 0;             // start request -> `closed`, as the manager saw it
  double mgr_cpu_s = 0;         // this process's CPU time over the same span
  std::uint64_t total = 0;      // bytes the session received
  std::size_t ring_peak = 0;    // OutputRing::memory_bytes, max over the run
  double rss_growth_kib = 0;    // peak VmRSS - VmRSS at the run's start
  // The never-read reader, read at last ((2) only):
  bool has_reader = false;
  std::uint64_t delivered = 0;  // bytes it got
  std::uint64_t gap = 0;        // bytes reported as evicted/skipped
  std::uint64_t evicted = 0;    // what the ring says it evicted
  std::size_t viewer_queue_peak = 0;  // viewer: most bytes queued for the stuck connection
  std::uint64_t wakes = 0;      // ring: notifier calls
  // agent: how its poll reported the evicted block
  std::uint64_t agent_evicted_explicit = 0;   // `omitted` spans of kind "evicted"
  std::uint64_t agent_truncated = 0;          // `omitted` spans of kind "truncated"
  bool agent_gap_in_truncation = false;       // a truncated span covers the evicted block
};

double read_prog_seconds(const std::string& path) {
  std::ifstream in(path);
  long long ns = 0;
  if (!(in >> ns) || ns <= 0) die("the writer left no time in " + path + " (did it fail?)");
  ::unlink(path.c_str());
  return static_cast<double>(ns) / 1e9;
}

std::vector<std::string> writer_argv(const Setup& su) {
  return {su.exe, "--writer", std::to_string(su.mib), su.time_file};
}

// Runs the loop until `done`, sampling the ring's memory every turn and RSS every 5 ms.
template <class Done>
void drive(loop::Loop& loop, session::Session* s, Run& run, double rss0, Done done) {
  double rss_peak = rss0;
  std::int64_t last = 0;
  while (!done()) {
    loop.run_once();
    if (s) run.ring_peak = std::max(run.ring_peak, s->output().memory_bytes());
    std::int64_t t = now_ns();
    if (t - last >= 5'000'000) {
      last = t;
      rss_peak = std::max(rss_peak, rss_kib());
    }
  }
  rss_peak = std::max(rss_peak, rss_kib());
  run.rss_growth_kib = std::max(run.rss_growth_kib, rss_peak - rss0);
}

// Reads a ring from `cursor` to its end the way every reader does; returns (delivered, gap).
std::pair<std::uint64_t, std::uint64_t> read_all(const session::OutputRing& ring, session::Offset cursor) {
  std::uint64_t got = 0, gap = 0;
  while (cursor < ring.total()) {
    auto r = ring.read_from(cursor, SIZE_MAX);
    gap += r.gap;
    got += r.bytes();
    if (r.next == cursor) break;
    cursor = r.next;
  }
  return {got, gap};
}

// ---- kind ring: ProcessManager + an OutputRing reader --------------------------------------

Run run_ring(loop::Loop& loop, const Setup& su, bool tty, bool with_reader) {
  Run run;
  session::ProcessManager pm(loop);
  policy::ExecRequest req;
  req.argv = writer_argv(su);
  req.tty = tty;
  req.env = su.env;
  double rss0 = rss_kib();
  std::int64_t t0 = now_ns(), c0 = cpu_self_ns();
  auto id = pm.start(req);
  if (!id) die("start: " + id.error().message());
  session::Session* s = pm.find(*id);
  // The reader: a cursor that stays at 0, and a notifier that is woken on every chunk and
  // does what a reader does when it is not going to read now (it only notes the wake).
  session::Offset cursor = 0;
  std::unique_ptr<session::Subscription> sub;
  if (with_reader) sub = s->output().subscribe([&run] { ++run.wakes; });
  drive(loop, s, run, rss0, [&] { return s->finished(); });
  run.mgr_s = ns_to_ms(now_ns() - t0) / 1e3;
  run.mgr_cpu_s = ns_to_ms(cpu_self_ns() - c0) / 1e3;
  run.total = s->output().total();
  run.evicted = s->output().evicted();
  if (with_reader) {
    run.has_reader = true;
    auto [got, gap] = read_all(s->output(), cursor);
    run.delivered = got;
    run.gap = gap;
    sub.reset();
  }
  pm.remove(*id);
  loop.run_once(false);
  run.prog_s = read_prog_seconds(su.time_file);
  return run;
}

// ---- kind agent: AgentService, a cancelled exec_command, one poll at the end ----------------

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

std::string writer_cmd(const Setup& su) {
  std::string cmd = "exec";
  for (const auto& a : writer_argv(su)) cmd += " " + shell_quote(a);
  return cmd;
}

Run run_agent(loop::Loop& loop, const Setup& su, bool tty, bool with_reader, int serial) {
  Run run;
  session::ProcessManager pm(loop);
  std::optional<agent::AgentService> exec;
  if (with_reader) exec.emplace(pm, su.env, "/tmp");
  double rss0 = rss_kib();
  std::int64_t t0 = now_ns(), c0 = cpu_self_ns();
  session::Session* s = nullptr;
  std::string name = fmt::format("slow-reader-{}", serial);
  if (with_reader) {
    agent::ExecParams p;
    p.cmd = writer_cmd(su);
    p.shell = "/bin/sh";
    p.login = false;
    p.tty = tty;
    p.name = name;
    p.yield_time_ms = 30000;
    std::optional<base::Result<agent::Response>> early;
    agent::CallId cid = exec->exec_command(p, [&](base::Result<agent::Response> r) { early = std::move(r); });
    if (early) die("exec_command replied at once: " + (early->has_value() ? (*early)->text : early->error().message()));
    exec->cancel(cid);  // the agent walks away: nothing is consumed, the session keeps running
    for (auto* x : pm.sessions())
      if (!x->finished()) s = x;
  } else {
    policy::ExecRequest req;
    req.argv = {"/bin/sh", "-c", writer_cmd(su)};
    req.tty = tty;
    req.env = su.env;
    auto id = pm.start(req);
    if (!id) die("start: " + id.error().message());
    s = pm.find(*id);
  }
  if (!s) die("agent: no session");
  drive(loop, s, run, rss0, [&] { return s->finished(); });
  run.mgr_s = ns_to_ms(now_ns() - t0) / 1e3;
  run.mgr_cpu_s = ns_to_ms(cpu_self_ns() - c0) / 1e3;
  run.total = s->output().total();
  run.evicted = s->output().evicted();
  if (with_reader) {
    // The agent comes back and polls: the response covers its reader's range [0, total),
    // with the evicted block reported in `omitted` (the rest is what it can read).
    agent::WriteParams w;
    w.name = name;
    w.yield_time_ms = 5000;
    std::optional<base::Result<agent::Response>> got;
    exec->write_stdin(w, [&](base::Result<agent::Response> r) { got = std::move(r); });
    std::int64_t deadline = now_ns() + 30'000'000'000;
    while (!got && now_ns() < deadline) loop.run_once();
    if (!got || !got->has_value()) die("agent poll failed: " + (got ? got->error().message() : "no reply"));
    const agent::Response& r = **got;
    // Its range must be [0, total): the reader starts at 0 and is consumed to the end. The
    // evicted block [H, total - T) is reported either as its own `evicted` span or, when the
    // token budget truncates the middle (always, at this size), inside the `truncated` span
    // the envelope's marker names (envelope.cc folds it in; see the report).
    std::uint64_t evicted = 0;
    const session::Offset ev_from = s->output().head_end(), ev_to = s->output().tail_start();
    for (const auto& o : r.omitted) {
      if (o.kind == "evicted") evicted += o.length;
      if (o.kind == "truncated") {
        run.agent_truncated += o.length;
        if (o.offset <= ev_from && o.offset + o.length >= ev_to) run.agent_gap_in_truncation = true;
      }
    }
    run.agent_evicted_explicit = evicted;
    if (run.agent_gap_in_truncation && evicted == 0) evicted = ev_to - ev_from;
    run.has_reader = true;
    run.gap = evicted;
    run.delivered = (r.range_offset == 0 && r.range_offset + r.range_length == run.total) ? r.range_length - evicted : 0;
    if (std::getenv("UEXEC_BENCH_SHOW_ENVELOPE")) std::fprintf(stderr, "%s\n", r.text.c_str());
    exec.reset();
  }
  pm.remove(s->id());
  loop.run_once(false);
  run.prog_s = read_prog_seconds(su.time_file);
  return run;
}

// ---- kind viewer: ExecServer, an owner that drains, a viewer that never reads --------------

struct FakeConn {
  std::unique_ptr<rpc::ExecServer::Connection> conn;
  bool drains = true;               // owner: everything is written at once
  std::deque<std::string> queue;    // viewer: what the server queued for it
  std::size_t queued = 0, queued_peak = 0;
  std::function<void()> below_fn;
  std::string first_reply;

  rpc::Peer peer() {
    return rpc::Peer{[this](std::string m) {
                       if (first_reply.empty()) first_reply = m;
                       if (drains) return;
                       queued += m.size();
                       queued_peak = std::max(queued_peak, queued);
                       queue.push_back(std::move(m));
                     },
                     [this] { return queued; },
                     [this](std::size_t, std::function<void()> fn) { below_fn = std::move(fn); }};
  }
  void line(const nlohmann::json& j) { conn->handle_line(j.dump()); }
};

std::uint64_t b64_len(std::string_view b) {
  if (b.empty()) return 0;
  std::uint64_t n = b.size() / 4 * 3;
  if (b.back() == '=') --n;
  if (b.size() >= 2 && b[b.size() - 2] == '=') --n;
  return n;
}

Run run_viewer(loop::Loop& loop, const Setup& su, bool tty, bool with_reader) {
  using nlohmann::json;
  Run run;
  session::ProcessManager pm(loop);
  rpc::ExecServerOptions opts;
  opts.daemon = true;
  auto server = std::make_unique<rpc::ExecServer>(pm, nullptr, su.env, "/tmp", opts);
  FakeConn owner, viewer;
  viewer.drains = false;
  owner.conn = server->connect(owner.peer());
  owner.line({{"id", 1}, {"method", "initialize"}, {"params", {{"clientName", "bench-owner"}}}});
  owner.line({{"method", "initialized"}});
  std::string sid = json::parse(owner.first_reply)["result"]["sessionId"].get<std::string>();
  json env = json::object();
  for (const auto& kv : su.env) env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  double rss0 = rss_kib();
  std::int64_t t0 = now_ns(), c0 = cpu_self_ns();
  owner.line({{"id", 2},
              {"method", "process/start"},
              {"params", {{"processId", "w"}, {"argv", writer_argv(su)}, {"tty", tty}, {"env", env}}}});
  session::Session* s = pm.find(sid + "/w");
  if (!s) die("viewer: start failed: " + owner.first_reply);
  if (with_reader) {
    viewer.conn = server->connect(viewer.peer());
    viewer.line({{"id", 1},
                 {"method", "initialize"},
                 {"params", {{"clientName", "bench-viewer"}, {"capabilities", {{"extensions", true}}}}}});
    viewer.line({{"method", "initialized"}});
    viewer.line({{"id", 2},
                 {"method", "process/subscribe"},
                 {"params", {{"processId", "w"}, {"sessionId", sid}, {"afterSeq", 0}, {"role", "viewer"}}}});
  }
  drive(loop, s, run, rss0, [&] { return s->finished(); });
  run.mgr_s = ns_to_ms(now_ns() - t0) / 1e3;
  run.mgr_cpu_s = ns_to_ms(cpu_self_ns() - c0) / 1e3;
  run.total = s->output().total();
  run.evicted = s->output().evicted();
  if (with_reader) {
    // The viewer finally reads: everything queued, then (the queue drained) the server
    // resumes it from its cursor with a process/gap for what was evicted meanwhile.
    run.has_reader = true;
    run.viewer_queue_peak = viewer.queued_peak;
    bool closed = false;
    for (int pass = 0; pass < 100 && !closed; ++pass) {
      while (!viewer.queue.empty()) {
        std::string m = std::move(viewer.queue.front());
        viewer.queue.pop_front();
        auto j = json::parse(m, nullptr, false);
        std::string method = j.value("method", "");
        if (method == "process/output") run.delivered += b64_len(j["params"]["chunk"].get<std::string>());
        if (method == "process/gap") run.gap += j["params"]["bytes"].get<std::uint64_t>();
        if (method == "process/closed") closed = true;
      }
      viewer.queued = 0;
      if (auto fn = std::move(viewer.below_fn)) {
        viewer.below_fn = nullptr;
        fn();
      } else if (viewer.queue.empty()) {
        break;
      }
      loop.run_once(false);
    }
    if (!closed) die("viewer: no process/closed after draining");
  }
  viewer.conn.reset();
  owner.conn.reset();
  server.reset();
  loop.run_once(false);
  run.prog_s = read_prog_seconds(su.time_file);
  return run;
}

Run run_kind(loop::Loop& loop, const Setup& su, Kind k, bool tty, bool with_reader, int serial) {
  switch (k) {
    case Kind::kRing: return run_ring(loop, su, tty, with_reader);
    case Kind::kAgent: return run_agent(loop, su, tty, with_reader, serial);
    case Kind::kViewer: return run_viewer(loop, su, tty, with_reader);
  }
  die("kind");
}

// ---- the benchmark ---------------------------------------------------------------------------

int bench_main(const Options& o) {
  Setup su;
  su.exe = self_exe();
  su.mib = o.quick ? 16 : 100;
  su.time_file = fmt::format("/tmp/uexec-bench-slow-reader-{}.ns", ::getpid());
  su.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "HOME=/tmp", "LANG=C.UTF-8"};
  int rounds = o.quick ? 3 : 7;
  std::string only;  // --case=ring-tty,agent-pipe,...: run just these rows
  // Extra knobs for a noisy machine: --rounds=N (tty rounds; pipes get 3x), --mib=N.
  for (const auto& a : o.rest) {
    if (a.rfind("--mib=", 0) == 0) su.mib = std::max<std::uint64_t>(1, std::stoull(a.substr(6)));
    else if (a.rfind("--rounds=", 0) == 0) rounds = std::max(1, std::stoi(a.substr(9)));
    else if (a.rfind("--case=", 0) == 0) only = "," + a.substr(7) + ",";
    else die("unknown argument " + a + " (accepted: --quick --json PATH --rounds=N --mib=N --case=KIND-tty|KIND-pipe,...)");
  }
  std::atexit([] { ::unlink(fmt::format("/tmp/uexec-bench-slow-reader-{}.ns", ::getpid()).c_str()); });

  struct Case {
    Kind kind;
    bool tty;
  };
  std::vector<Case> cases;
  for (Case c : {Case{Kind::kRing, true}, Case{Kind::kRing, false}, Case{Kind::kAgent, true},
                 Case{Kind::kAgent, false}, Case{Kind::kViewer, true}, Case{Kind::kViewer, false}})
    if (only.empty() || only.find(fmt::format(",{}-{},", kind_name(c.kind), c.tty ? "tty" : "pipe")) != std::string::npos)
      cases.push_back(c);
  if (cases.empty()) die("--case matches no row (ring-tty ring-pipe agent-tty agent-pipe viewer-tty viewer-pipe)");

  loop::Loop loop;
  // Warm-up: page in every path once, small.
  {
    Setup w = su;
    w.mib = 1;
    int serial = 0;
    for (const auto& c : cases)
      for (bool r : {false, true}) run_kind(loop, w, c.kind, c.tty, r, --serial);
  }

  struct Acc {
    std::vector<double> ratio, prog_a, prog_b, mgr_a, mgr_b, mib_s_a, mib_s_b, cpu_a, cpu_b;
    std::vector<Run> with_reader;
    std::vector<double> rss_a;
  };
  std::vector<Acc> acc(cases.size());
  int serial = 0;
  // Each round of a case is A B B A (alone, with, with, alone) and gives one ratio,
  // (B1 + B2) / (A1 + A2): a drift in machine speed within the round cancels out. Pipe runs
  // are ~15x shorter than tty runs, so noisier: they get three times as many rounds.
  const int pipe_factor = 3;
  for (int round = 0; round < rounds * pipe_factor; ++round) {
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const Case& c = cases[ci];
      if (c.tty && round >= rounds) continue;
      Run a1 = run_kind(loop, su, c.kind, c.tty, false, ++serial);
      Run b1 = run_kind(loop, su, c.kind, c.tty, true, ++serial);
      Run b2 = run_kind(loop, su, c.kind, c.tty, true, ++serial);
      Run a2 = run_kind(loop, su, c.kind, c.tty, false, ++serial);
      Acc& x = acc[ci];
      double pa = (a1.prog_s + a2.prog_s) / 2, pb = (b1.prog_s + b2.prog_s) / 2;
      x.ratio.push_back(pb / pa);
      x.prog_a.push_back(pa * 1e3);
      x.prog_b.push_back(pb * 1e3);
      x.mgr_a.push_back((a1.mgr_s + a2.mgr_s) / 2 * 1e3);
      x.mgr_b.push_back((b1.mgr_s + b2.mgr_s) / 2 * 1e3);
      x.cpu_a.push_back((a1.mgr_cpu_s + a2.mgr_cpu_s) / 2 * 1e3 / static_cast<double>(su.mib));
      x.cpu_b.push_back((b1.mgr_cpu_s + b2.mgr_cpu_s) / 2 * 1e3 / static_cast<double>(su.mib));
      x.mib_s_a.push_back(static_cast<double>(su.mib) / pa);
      x.mib_s_b.push_back(static_cast<double>(su.mib) / pb);
      x.rss_a.push_back(std::max(a1.rss_growth_kib, a2.rss_growth_kib));
      x.with_reader.push_back(b1);
      x.with_reader.push_back(b2);
      std::fprintf(stderr, "round %d %s %s: program %.0f ms alone, %.0f ms with the reader (%.3f)\n", round + 1,
                   kind_name(c.kind), c.tty ? "tty" : "pipes", pa * 1e3, pb * 1e3, x.ratio.back());
    }
  }

  std::vector<Row> rows;
  std::vector<double> mem_ratios, gap_ratios;
  std::vector<std::string> mem_text, gap_text;
  nlohmann::json mem_abs = nlohmann::json::object(), gap_abs = nlohmann::json::object();
  bool all_exact = true;
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    const Acc& x = acc[ci];
    std::string what = fmt::format("{}-{}", kind_name(c.kind), c.tty ? "tty" : "pipe");
    const char* desc = c.kind == Kind::kRing    ? "an OutputRing reader (cursor + subscription)"
                       : c.kind == Kind::kAgent ? "an agent session that never polls"
                                                : "a protocol viewer whose connection never reads";
    Row r = make_row("SR-" + what,
                     fmt::format("program time writing {} MiB ({}), with {} / alone", su.mib,
                                 c.tty ? "tty" : "pipes", desc),
                     x.ratio, Cmp::kLe, 1.05);
    std::vector<double> mgr_ratio;
    for (std::size_t i = 0; i < x.mgr_a.size(); ++i) mgr_ratio.push_back(x.mgr_b[i] / x.mgr_a[i]);
    std::vector<double> cpu_ratio;
    for (std::size_t i = 0; i < x.cpu_a.size(); ++i) cpu_ratio.push_back(x.cpu_b[i] / x.cpu_a[i]);
    r.absolute_text = fmt::format(
        "alone {}, with reader {}; manager start→closed ratio {:.3f}; manager CPU {:.2f} → {:.2f} ms/MiB ({:.3f})",
        abs3("MiB/s", x.mib_s_a), abs3("MiB/s", x.mib_s_b), stats(mgr_ratio).median, stats(x.cpu_a).median,
        stats(x.cpu_b).median, stats(cpu_ratio).median);
    r.absolute = {{"mib", su.mib},
                  {"program_ms_alone", x.prog_a},
                  {"program_ms_with_reader", x.prog_b},
                  {"manager_ms_alone", x.mgr_a},
                  {"manager_ms_with_reader", x.mgr_b},
                  {"manager_ratio", mgr_ratio},
                  {"manager_cpu_ms_per_mib_alone", x.cpu_a},
                  {"manager_cpu_ms_per_mib_with_reader", x.cpu_b},
                  {"manager_cpu_ratio", cpu_ratio}};
    rows.push_back(r);

    // Memory and gap, over this case's (2) runs.
    std::vector<double> ring_peak_kib, rss_b, gap_mib, qpeak;
    for (const Run& b : x.with_reader) {
      mem_ratios.push_back(static_cast<double>(b.ring_peak) / static_cast<double>(su.retain));
      ring_peak_kib.push_back(static_cast<double>(b.ring_peak) / 1024.0);
      rss_b.push_back(b.rss_growth_kib);
      qpeak.push_back(static_cast<double>(b.viewer_queue_peak) / 1024.0);
      double accounted = static_cast<double>(b.delivered + b.gap) / static_cast<double>(b.total);
      gap_ratios.push_back(accounted);
      gap_mib.push_back(static_cast<double>(b.gap) / static_cast<double>(kMiB));
      bool exact = b.delivered + b.gap == b.total;
      // The ring and agent readers start at 0 and read nothing before the end: their gap is
      // exactly what the ring evicted. The viewer got some live output before it stalled.
      if (c.kind != Kind::kViewer) exact = exact && b.gap == b.evicted;
      all_exact = all_exact && exact;
      if (!exact)
        std::fprintf(stderr, "%s: delivered %llu + gap %llu != total %llu (ring evicted %llu)\n", what.c_str(),
                     static_cast<unsigned long long>(b.delivered), static_cast<unsigned long long>(b.gap),
                     static_cast<unsigned long long>(b.total), static_cast<unsigned long long>(b.evicted));
    }
    std::string mt = fmt::format("{}: ring peak {:.0f} KiB, RSS growth {:.0f} KiB (alone {:.0f} KiB)", what,
                                 stats(ring_peak_kib).max, stats(rss_b).max, stats(x.rss_a).max);
    if (c.kind == Kind::kViewer) mt += fmt::format(", viewer queue peak {:.0f} KiB", stats(qpeak).max);
    mem_text.push_back(mt);
    mem_abs[what] = {{"ring_peak_kib", ring_peak_kib},
                     {"rss_growth_kib_with_reader", rss_b},
                     {"rss_growth_kib_alone", x.rss_a}};
    if (c.kind == Kind::kViewer) mem_abs[what]["viewer_queue_peak_kib"] = qpeak;
    const Run& last = x.with_reader.back();
    std::string how;
    if (c.kind == Kind::kAgent)
      how = last.agent_evicted_explicit ? " (an `evicted` span)"
            : last.agent_gap_in_truncation ? " (inside the `truncated` span, no `evicted` span)"
                                           : " (**not reported**)";
    gap_text.push_back(fmt::format("{}: gap {:.2f} MiB of {:.2f} MiB{}", what, stats(gap_mib).median,
                                   static_cast<double>(last.total) / static_cast<double>(kMiB), how));
    gap_abs[what] = {{"gap_mib", gap_mib},
                     {"total_bytes", last.total},
                     {"delivered_bytes", last.delivered},
                     {"gap_bytes", last.gap},
                     {"ring_evicted_bytes", last.evicted}};
    if (c.kind == Kind::kAgent) {
      gap_abs[what]["agent_evicted_span_bytes"] = last.agent_evicted_explicit;
      gap_abs[what]["agent_truncated_span_bytes"] = last.agent_truncated;
      gap_abs[what]["agent_gap_inside_truncation"] = last.agent_gap_in_truncation;
    }
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  Row mem = make_row("SR-mem", fmt::format("ring memory peak with a never-read reader / retention cap ({} KiB)",
                                           su.retain / 1024),
                     mem_ratios, Cmp::kLe, 1.05);
  mem.absolute_text = join(mem_text);
  mem.absolute = mem_abs;
  mem.absolute["retain_bytes"] = su.retain;
  rows.push_back(mem);
  Row gap = make_row("SR-gap", "never-read reader at the end: (delivered + reported gap) / bytes written",
                     gap_ratios, Cmp::kGe, 1.0);
  gap.absolute_text = join(gap_text) + (all_exact ? "; exact in every run" : "; **NOT exact** (see stderr)");
  gap.absolute = gap_abs;
  gap.absolute["exact"] = all_exact;
  rows.push_back(gap);

  finish(o, fmt::format("bench_slow_reader ({} rounds tty, {} pipes, A-B-B-A each; {} MiB per run)", rounds,
                        rounds * pipe_factor, su.mib),
         rows);
  return 0;
}

}  // namespace
}  // namespace uexec::bench

int main(int argc, char** argv) {
  using namespace uexec::bench;
  if (argc >= 4 && std::string_view(argv[1]) == "--writer") return writer_main(std::stoull(argv[2]), argv[3]);
  return bench_main(parse_options(argc, argv));
}
