// bench_echo: keystroke round trip, the latency a person typing into a session feels.
//
// W1 sends one byte into a PTY whose slave runs `cat` in raw mode (cfmakeraw: no kernel echo,
// no OPOST, so each byte comes back exactly once, from cat) and waits for it to come back
// on the master. The baseline is a blocking write(master, 1 byte) + read(master) loop. The
// uexec side is Session::write (queue, write(2), poll re-arm) and the loop run until the
// byte is in the session's OutputRing (epoll_wait wake-up, drain until EAGAIN, ring append).
// Both PTYs live side by side and the samples alternate raw, uexec, raw, uexec, so the noise
// of the machine lands on both. Each round gives a p50 and a p99 for each side; the rows
// report min/median/max over rounds of uexec/raw. Targets: p50 <= 1.15x, p99 <= 1.3x.
//
// The uexec PTY is opened by uexec with its default (cooked) termios; we switch it to raw
// with tcsetattr on the master fd (Linux applies termios ioctls on a master to the slave)
// before the first byte is sent.
#include "bench_util.h"
#include "loop/loop.h"
#include "policy/exec_request.h"
#include "session/process_manager.h"

namespace uexec::bench {
namespace {

std::int64_t raw_round_trip(int master) {
  char c = 'a', back = 0;
  std::int64_t t0 = now_ns();
  if (::write(master, &c, 1) != 1) die_errno("write master");
  if (read_retry(master, &back, 1) != 1) die_errno("read master");
  std::int64_t t1 = now_ns();
  if (back != c) die("raw: unexpected echo byte");
  return t1 - t0;
}

std::int64_t uexec_round_trip(session::Session& s, loop::Loop& loop) {
  auto before = s.output().total();
  std::int64_t t0 = now_ns();
  if (auto r = s.write(std::string_view("a")); !r) die("uexec write: " + r.error().message());
  while (s.output().total() == before && !s.finished()) loop.run_once();
  std::int64_t t1 = now_ns();
  if (s.output().total() != before + 1) die("uexec: expected exactly one byte back");
  return t1 - t0;
}

int bench_main(const Options& o) {
  const int rounds = o.quick ? 3 : 7;
  const int n = o.quick ? 300 : 5000;
  std::string cat = which("cat");
  if (cat.empty()) die("cat not found");
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "HOME=/tmp",
                                  "LANG=C.UTF-8"};

  // Baseline PTY: raw before the spawn.
  RawPty raw = open_raw_pty();
  make_raw(raw);
  pid_t raw_pid = spawn_on_pty(raw, CArgs({cat}), CArgs(env));

  loop::Loop loop;
  std::vector<Row> rows;
  {
    session::ProcessManager pm(loop);
    policy::ExecRequest req;
    req.argv = {cat};
    req.tty = true;
    req.env = env;
    auto id = pm.start(req);
    if (!id) die("uexec start: " + id.error().message());
    session::Session* s = pm.find(*id);
    {
      int m = s->process()->master_fd();
      termios t{};
      if (::tcgetattr(m, &t) != 0) die_errno("tcgetattr uexec master");
      ::cfmakeraw(&t);
      if (::tcsetattr(m, TCSANOW, &t) != 0) die_errno("tcsetattr uexec master");
    }
    for (int i = 0; i < 200; ++i) {  // warm-up: both cats running, caches hot
      raw_round_trip(raw.master);
      uexec_round_trip(*s, loop);
    }

    std::vector<double> r50, r99, raw50, raw99, uex50, uex99;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> a, b;
      a.reserve(static_cast<std::size_t>(n));
      b.reserve(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        a.push_back(ns_to_us(raw_round_trip(raw.master)));
        b.push_back(ns_to_us(uexec_round_trip(*s, loop)));
      }
      double a50 = percentile(a, 50), a99 = percentile(a, 99);
      double b50 = percentile(b, 50), b99 = percentile(b, 99);
      r50.push_back(b50 / a50);
      r99.push_back(b99 / a99);
      raw50.push_back(a50);
      raw99.push_back(a99);
      uex50.push_back(b50);
      uex99.push_back(b99);
      std::fprintf(stderr, "round %d/%d: p50 %.1f/%.1f us (%.3f), p99 %.1f/%.1f us (%.3f)\n", r + 1,
                   rounds, a50, b50, r50.back(), a99, b99, r99.back());
    }
    Row p50 = make_row("W1-p50", "keystroke echo through cat (raw PTY), p50 uexec/raw", r50,
                       Cmp::kLe, 1.15);
    p50.absolute_text = fmt::format("raw {}; uexec {}", abs3("us", raw50), abs3("us", uex50));
    p50.absolute = {{"raw_us", raw50}, {"uexec_us", uex50}, {"samples_per_round", n}};
    Row p99 = make_row("W1-p99", "keystroke echo through cat (raw PTY), p99 uexec/raw", r99,
                       Cmp::kLe, 1.3);
    p99.absolute_text = fmt::format("raw {}; uexec {}", abs3("us", raw99), abs3("us", uex99));
    p99.absolute = {{"raw_us", raw99}, {"uexec_us", uex99}, {"samples_per_round", n}};
    rows = {p50, p99};
    pm.remove(*id);
    loop.run_once(false);
  }
  ::kill(raw_pid, SIGKILL);
  raw.close_master();
  reap(raw_pid);
  finish(o, fmt::format("bench_echo ({} rounds x {} round trips)", rounds, n), rows);
  return 0;
}

}  // namespace
}  // namespace uexec::bench

int main(int argc, char** argv) {
  return uexec::bench::bench_main(uexec::bench::parse_options(argc, argv));
}
