// bench_scale: a thousand sessions at once: what each costs in memory and in start-up time.
//
// M1: an idle session must cost the manager <= 8 KiB (a Session, its PtyProcess, a uv_poll_t,
// a pidfd watch and an OutputRing whose pages are allocated only on first output). We start
// 1000 tty sessions running `sleep 1000` (silent, so no ring page is touched) and divide the
// growth of this process's resident set (/proc/self/statm) by 1000. The kernel's own cost per
// PTY pair (~28 KiB) and the children's memory are not ours and do not show in our RSS.
// The heap growth (mallinfo2: in-use arena bytes + mmapped blocks) is reported alongside.
//
// M2: starting those 1000 sessions must take <= 1.1x what a bare C++ loop needs to open 1000
// PTYs and posix_spawn a `sleep 1000` on each (POSIX_SPAWN_SETSID + addopen of the slave).
// After each batch we check that all 1000 children are alive (kill(pid, 0) and their
// /proc/PID/stat state is not zombie), then kill and reap every one (for uexec, destroying
// the ProcessManager SIGKILLs and reaps).
//
// RSS never shrinks once the allocator has grown, so every batch (baseline and uexec alike)
// runs in a freshly forked child of this small process, which reports its numbers through a
// pipe; each round therefore gives an honest RSS delta. Rounds alternate which side goes
// first (raw, uexec; then uexec, raw).
#include <malloc.h>

#include <functional>

#include "bench_util.h"
#include "loop/loop.h"
#include "policy/exec_request.h"
#include "session/process_manager.h"

namespace uexec::bench {
namespace {

struct Batch {
  double spawn_ms = 0;
  double rss_kib = 0;   // delta over the batch
  double heap_kib = 0;  // delta over the batch
  double teardown_ms = 0;
  int held = 0;
  int n = 0;
  char error[200] = {};
};

double heap_kib() {
  struct mallinfo2 mi = ::mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd) / 1024.0;
}

bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(in, line);
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// Runs fn in a forked child and returns what it reported.
Batch in_child(const std::function<Batch()>& fn) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) die_errno("pipe");
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) die_errno("fork");
  if (pid == 0) {
    ::close(fds[0]);
    Batch b = fn();
    const char* p = reinterpret_cast<const char*>(&b);
    std::size_t left = sizeof b;
    while (left > 0) {
      ssize_t w = ::write(fds[1], p, left);
      if (w <= 0) break;
      p += w;
      left -= static_cast<std::size_t>(w);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  Batch b;
  char* p = reinterpret_cast<char*>(&b);
  std::size_t got = 0;
  while (got < sizeof b) {
    ssize_t r = read_retry(fds[0], p + got, sizeof b - got);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fds[0]);
  reap(pid);
  if (got != sizeof b) die("batch child died without reporting");
  if (b.error[0]) die(b.error);
  return b;
}

Batch raw_batch(int n, const CArgs& argv, const CArgs& env) {
  Batch b;
  b.n = n;
  std::vector<RawPty> ptys;
  std::vector<pid_t> pids;
  ptys.reserve(static_cast<std::size_t>(n));
  pids.reserve(static_cast<std::size_t>(n));
  double rss0 = rss_kib(), heap0 = heap_kib();
  std::int64_t t0 = now_ns();
  for (int i = 0; i < n; ++i) {
    ptys.push_back(open_raw_pty());
    pids.push_back(spawn_on_pty(ptys.back(), argv, env));
  }
  b.spawn_ms = ns_to_ms(now_ns() - t0);
  b.rss_kib = rss_kib() - rss0;
  b.heap_kib = heap_kib() - heap0;
  for (pid_t p : pids) b.held += alive(p) ? 1 : 0;
  std::int64_t t1 = now_ns();
  for (pid_t p : pids) ::kill(p, SIGKILL);
  for (auto& p : ptys) p.close_master();
  for (pid_t p : pids) reap(p);
  b.teardown_ms = ns_to_ms(now_ns() - t1);
  return b;
}

Batch uexec_batch(int n, const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  Batch b;
  b.n = n;
  loop::Loop loop;
  {
    base::Config cfg;
    if (containment_off()) cfg.containment = base::ContainmentMode::kOff;
    auto pm = std::make_unique<session::ProcessManager>(loop, cfg);
    policy::ExecRequest req;
    req.argv = argv;
    req.tty = true;
    req.env = env;
    {  // warm-up: one session through its whole life, so one-time allocations are done
      policy::ExecRequest w = req;
      w.argv = {"/bin/true"};
      auto id = pm->start(w);
      if (!id) {
        std::snprintf(b.error, sizeof b.error, "start: %s", id.error().message().c_str());
        return b;
      }
      while (!pm->find(*id)->finished()) loop.run_once();
      pm->remove(*id);
      for (int i = 0; i < 3; ++i) loop.run_once(false);
    }
    double rss0 = rss_kib(), heap0 = heap_kib();
    std::int64_t t0 = now_ns();
    for (int i = 0; i < n; ++i) {
      auto id = pm->start(req);
      if (!id) {
        std::snprintf(b.error, sizeof b.error, "start #%d: %s", i, id.error().message().c_str());
        return b;
      }
    }
    b.spawn_ms = ns_to_ms(now_ns() - t0);
    for (int i = 0; i < 3; ++i) loop.run_once(false);  // let the loop settle its handles
    b.rss_kib = rss_kib() - rss0;
    b.heap_kib = heap_kib() - heap0;
    for (session::Session* s : pm->sessions())
      b.held += (!s->exited() && !s->finished() && alive(s->pid())) ? 1 : 0;
    std::int64_t t1 = now_ns();
    pm.reset();  // SIGKILL + reap of every child
    b.teardown_ms = ns_to_ms(now_ns() - t1);
  }
  return b;
}

int bench_main(const Options& o) {
  raise_nofile();
  const int n = 1000;
  const int rounds = o.quick ? 2 : 6;  // even: each order as often
  if (nofile_limit() < static_cast<std::size_t>(3 * n + 64))
    die(fmt::format("RLIMIT_NOFILE {} is too low for {} sessions", nofile_limit(), n));
  std::string sleep = which("sleep");
  if (sleep.empty()) die("sleep not found");
  std::vector<std::string> argv = {sleep, "1000"};
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "HOME=/tmp",
                                  "LANG=C.UTF-8"};
  CArgs cargv(argv), cenv(env);

  std::vector<double> m1, m2, rss_per, heap_per, raw_ms, uex_ms, raw_down, uex_down;
  int min_held_raw = n, min_held_uexec = n;
  for (int r = 0; r < rounds; ++r) {
    // Odd rounds start with uexec: neither side always runs right after the other's 1000
    // exits (the kernel frees and, on these VMs, hands freed pages back to the host after a
    // teardown; the batch that follows one pays for it).
    Batch a, b;
    if (r % 2 == 0) {
      a = in_child([&] { return raw_batch(n, cargv, cenv); });
      b = in_child([&] { return uexec_batch(n, argv, env); });
    } else {
      b = in_child([&] { return uexec_batch(n, argv, env); });
      a = in_child([&] { return raw_batch(n, cargv, cenv); });
    }
    min_held_raw = std::min(min_held_raw, a.held);
    min_held_uexec = std::min(min_held_uexec, b.held);
    double per = b.rss_kib / n;
    m1.push_back(per / 8.0);
    m2.push_back(b.spawn_ms / a.spawn_ms);
    rss_per.push_back(per);
    heap_per.push_back(b.heap_kib / n);
    raw_ms.push_back(a.spawn_ms);
    uex_ms.push_back(b.spawn_ms);
    raw_down.push_back(a.teardown_ms);
    uex_down.push_back(b.teardown_ms);
    std::fprintf(stderr,
                 "round %d/%d: spawn raw %.0f ms uexec %.0f ms (%.3f); RSS %.2f KiB/session "
                 "(heap %.2f); held %d/%d raw, %d/%d uexec\n",
                 r + 1, rounds, a.spawn_ms, b.spawn_ms, m2.back(), per, b.heap_kib / n, a.held,
                 n, b.held, n);
  }
  Row r1 = make_row("M1", fmt::format("RSS per idle tty session ({} x sleep) / 8 KiB", n), m1,
                    Cmp::kLe, 1.0);
  r1.absolute_text =
      fmt::format("RSS {} per session; heap {} per session", abs3("KiB", rss_per, 2),
                  abs3("KiB", heap_per, 2));
  r1.absolute = {{"rss_kib_per_session", rss_per}, {"heap_kib_per_session", heap_per},
                 {"sessions", n}};
  Row r2 = make_row("M2", fmt::format("start {} tty sessions, uexec/bare posix_spawn loop", n), m2,
                    Cmp::kLe, 1.1);
  bool all_held = min_held_raw == n && min_held_uexec == n;
  r2.absolute_text = fmt::format("raw {}; uexec {}; all held: {} (min {}/{} uexec); teardown raw {}, uexec {}",
                                 abs3("ms", raw_ms, 0), abs3("ms", uex_ms, 0), all_held ? "yes" : "NO",
                                 min_held_uexec, n, abs3("ms", raw_down, 0), abs3("ms", uex_down, 0));
  r2.absolute = {{"raw_ms", raw_ms}, {"uexec_ms", uex_ms}, {"held_min_uexec", min_held_uexec},
                 {"held_min_raw", min_held_raw}, {"teardown_raw_ms", raw_down},
                 {"teardown_uexec_ms", uex_down}};
  if (!all_held) {
    r2.note = "not every session was running";
    r2.cmp = Cmp::kLe;
    r2.target = 0;  // marks M2 unmet: holding all 1000 is part of the target
  }
  std::vector<Row> rows = {r1, r2};
  finish(o, fmt::format("bench_scale ({} rounds x {} sessions)", rounds, n), rows);
  return 0;
}

}  // namespace
}  // namespace uexec::bench

int main(int argc, char** argv) {
  return uexec::bench::bench_main(uexec::bench::parse_options(argc, argv));
}
