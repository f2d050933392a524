// bench_spawn: how long from "start this command" to the first byte of its output.
//
// S1 is the latency a user or an agent feels on every command: ProcessManager::start of a
// tty session (open_pty, sandbox env, vfork-style clone + execve, pidfd watch, uv_poll on the
// master), then the loop runs until the session's ring holds one byte. The baseline is the
// fastest correct libc path: posix_openpt on a fresh PTY, posix_spawn with
// POSIX_SPAWN_SETSID and an addopen of the slave on fd 0 (so it is the controlling tty),
// dup2 to 1 and 2, and a blocking read() of the master. Two commands: `/bin/echo x` (exec
// cost dominated) and `bash --norc -i` up to the first byte of its prompt (PS1 set in the
// environment); the bash children are SIGKILLed and reaped after their first byte, outside
// the timed span. Target: uexec <= 1.1x raw.
//
// S2 checks that spawn cost stays flat as the manager grows: the same `echo x` measurement
// after this process has allocated and touched 256 MiB, uexec-grown over uexec-empty
// (target <= 1.1x). fork + exec is measured the same way for contrast: fork copies the page
// tables of the grown process, so it is expected near 2x; uexec clones with CLONE_VM.
//
// S1-held is S1-echo with the manager's sessions held (holder/holder_link.h, as under `uexec
// serve`'s holder) over the same unheld, interleaved: each start sends its fds and facts to the
// holder (a `hold` message with SCM_RIGHTS) and its facts again on the next turn. The holder's
// side is a thread here that reads and drops the messages, as the real one does in its own
// process while the daemon runs.
// J1-spawn is S1-echo with the journal on (`uexec serve --journal`: the manager's sessions
// recorded by a journal::SessionJournal, into /var/tmp), over the same without, both uexec,
// interleaved: the journal's meta.json and its thread's mkdir + writes on every start.
//
// Samples are interleaved A, B, A, B inside each round; a round's ratio is the ratio of its
// two medians, and the rows report min/median/max of the per-round ratios.
#include <sys/mman.h>
#include <sys/socket.h>

#include <functional>
#include <thread>

#include <filesystem>

#include "bench_util.h"
#include "holder/holder.h"
#include "holder/holder_link.h"
#include "holder/holder_wire.h"
#include "journal/session_journal.h"
#include "loop/loop.h"
#include "policy/exec_request.h"
#include "session/process_manager.h"

namespace uexec::bench {
namespace {

struct Cmd {
  std::vector<std::string> argv;
  bool interactive = false;  // kill after the first byte instead of waiting for the exit
};

std::int64_t raw_first_byte(const Cmd& c, const CArgs& argv, const CArgs& env, bool use_fork) {
  char buf[4096];
  std::int64_t t0 = now_ns();
  RawPty p = open_raw_pty();
  pid_t pid = use_fork ? fork_on_pty(p, argv, env) : spawn_on_pty(p, argv, env);
  ssize_t n = read_retry(p.master, buf, sizeof buf);
  std::int64_t t1 = now_ns();
  if (n <= 0) die(fmt::format("{}: no output", c.argv[0]));
  if (c.interactive) {
    ::kill(-pid, SIGKILL);
  } else {
    while (read_retry(p.master, buf, sizeof buf) > 0) {
    }
  }
  p.close_master();
  reap(pid);
  return t1 - t0;
}

std::int64_t uexec_first_byte(session::ProcessManager& pm, loop::Loop& loop, const Cmd& c,
                              const std::vector<std::string>& env) {
  policy::ExecRequest req;
  req.argv = c.argv;
  req.tty = true;
  req.env = env;
  std::int64_t t0 = now_ns();
  auto id = pm.start(req);
  if (!id) die("uexec start: " + id.error().message());
  session::Session* s = pm.find(*id);
  while (s->output().total() == 0 && !s->finished()) loop.run_once();
  std::int64_t t1 = now_ns();
  if (s->output().total() == 0) die(fmt::format("{}: no output through uexec", c.argv[0]));
  if (!c.interactive)
    while (!s->finished()) loop.run_once();
  pm.remove(*id);  // SIGKILLs and reaps a bash still running
  loop.run_once(false);
  return t1 - t0;
}

// The holder's side of a link, on a thread: hello with a counters table, an empty hand-over,
// then every message read and dropped until the link closes.
struct HolderPeer {
  base::UniqueFd link, mine;
  std::thread reader;
  HolderPeer() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) die_errno("socketpair");
    link.reset(sv[0]);
    mine.reset(sv[1]);
    base::UniqueFd table(::memfd_create("bench-holder-table", MFD_CLOEXEC));
    if (!table || ::ftruncate(table.get(), holder::kSlots * sizeof(session::SeqMirror)) < 0) die_errno("memfd");
    int tfd = table.get();
    if (!holder::send(mine.get(), {{"op", "hello"}, {"slots", holder::kSlots}, {"holder", ::getpid()}, {"fds", {"table"}}},
                      std::span<const int>(&tfd, 1)) ||
        !holder::send(mine.get(), {{"op", "adopted"}}))
      die("holder peer: send");
    reader = std::thread([this] {
      for (;;) {
        auto m = holder::receive(mine.get(), true);
        if (!m && m.error().code == base::Errc::kClosed) return;
      }
    });
  }
  ~HolderPeer() {
    if (reader.joinable()) reader.join();
  }
};

// Runs `a` and `b` interleaved k times each; returns their median times in ms.
std::pair<double, double> interleave(int k, const std::function<std::int64_t()>& a,
                                     const std::function<std::int64_t()>& b) {
  std::vector<double> va, vb;
  for (int i = 0; i < k; ++i) {
    va.push_back(ns_to_ms(a()));
    vb.push_back(ns_to_ms(b()));
  }
  return {median(va), median(vb)};
}

// 256 MiB, every page touched, returned to the kernel with munmap afterwards.
class Ballast {
 public:
  explicit Ballast(std::size_t bytes) : n_(bytes) {
    p_ = ::mmap(nullptr, n_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p_ == MAP_FAILED) die_errno("mmap ballast");
    auto* b = static_cast<unsigned char*>(p_);
    for (std::size_t i = 0; i < n_; i += 4096) b[i] = 1;
  }
  ~Ballast() { ::munmap(p_, n_); }
  Ballast(const Ballast&) = delete;
  Ballast& operator=(const Ballast&) = delete;

 private:
  void* p_ = nullptr;
  std::size_t n_;
};

int bench_main(const Options& o) {
  const int rounds = o.quick ? 3 : 9;
  const int k = o.quick ? 10 : 50;
  std::string bash = which("bash");
  if (bash.empty()) die("bash not found");
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb",
                                  "HOME=/tmp", "LANG=C.UTF-8", "PS1=$ ", "HISTFILE=/dev/null"};
  CArgs cenv(env);
  Cmd echo{{"/bin/echo", "x"}, false};
  Cmd bashi{{bash, "--norc", "-i"}, true};
  CArgs echo_argv(echo.argv), bash_argv(bashi.argv);

  loop::Loop loop;
  std::vector<Row> rows;
  char journal_tmpl[] = "/var/tmp/uexec-bench-journal-XXXXXX";
  const std::string journal_dir = ::mkdtemp(journal_tmpl) ? journal_tmpl : "";
  if (journal_dir.empty()) die_errno("mkdtemp /var/tmp");
  {
    session::ProcessManager pm(loop);
    auto writer = journal::JournalWriter::open(journal_dir + "/journal", journal::Limits{});
    if (!writer) die("journal: " + writer.error().message());
    journal::SessionJournal journal(loop, std::move(*writer));
    // One manager (a second one's orphan reaper would reap the first's children): the
    // journal is its recorder for the journaled samples only.
    auto journaled = [&] {
      pm.add_recorder(&journal);
      std::int64_t t = uexec_first_byte(pm, loop, echo, env);
      pm.remove_recorder(&journal);
      return t;
    };
    HolderPeer peer;
    std::vector<holder::Adoptee> none;
    auto link = holder::HolderLink::connect(loop, pm, std::move(peer.link), std::chrono::seconds(5), &none);
    if (!link) die("holder link: " + link.error().message());
    auto held = [&] {
      pm.add_recorder(link->get());
      std::int64_t t = uexec_first_byte(pm, loop, echo, env);
      loop.run_once(false);  // the next turn's facts message, as in the daemon
      pm.remove_recorder(link->get());
      return t;
    };
    for (int i = 0; i < 3; ++i) {  // warm-up
      raw_first_byte(echo, echo_argv, cenv, false);
      uexec_first_byte(pm, loop, echo, env);
      raw_first_byte(bashi, bash_argv, cenv, false);
      uexec_first_byte(pm, loop, bashi, env);
    }
    std::vector<double> s1e, s1b, s2u, s2f, s2p, j1s, plain_e, jour_e, h1s, unheld_e, held_e;
    std::vector<double> raw_e, uex_e, raw_b, uex_b, uex_grown, fork_empty, fork_grown, ps_grown,
        ps_empty, uex_empty;
    for (int r = 0; r < rounds; ++r) {
      auto [re, ue] = interleave(
          k, [&] { return raw_first_byte(echo, echo_argv, cenv, false); },
          [&] { return uexec_first_byte(pm, loop, echo, env); });
      auto [rb, ub] = interleave(
          k, [&] { return raw_first_byte(bashi, bash_argv, cenv, false); },
          [&] { return uexec_first_byte(pm, loop, bashi, env); });
      auto [pe, je] = interleave(
          k, [&] { return uexec_first_byte(pm, loop, echo, env); },
          journaled);
      auto [pu, he] = interleave(
          k, [&] { return uexec_first_byte(pm, loop, echo, env); },
          held);
      h1s.push_back(he / pu);
      unheld_e.push_back(pu);
      held_e.push_back(he);
      j1s.push_back(je / pe);
      plain_e.push_back(pe);
      jour_e.push_back(je);
      s1e.push_back(ue / re);
      s1b.push_back(ub / rb);
      raw_e.push_back(re);
      uex_e.push_back(ue);
      raw_b.push_back(rb);
      uex_b.push_back(ub);

      // S2: empty first, then grown by 256 MiB. uexec is interleaved with raw posix_spawn
      // (both flat in theory); fork + exec runs as its own batch afterwards, so its page
      // table copies and teardowns do not land inside uexec's samples.
      auto fork_batch = [&] {
        std::vector<double> v;
        for (int i = 0; i < k; ++i) v.push_back(ns_to_ms(raw_first_byte(echo, echo_argv, cenv, true)));
        return median(v);
      };
      auto [u0, p0] = interleave(
          k, [&] { return uexec_first_byte(pm, loop, echo, env); },
          [&] { return raw_first_byte(echo, echo_argv, cenv, false); });
      double f0 = fork_batch();
      double u1 = 0, f1 = 0, p1 = 0;
      {
        Ballast ballast(256u * 1024 * 1024);
        std::tie(u1, p1) = interleave(
            k, [&] { return uexec_first_byte(pm, loop, echo, env); },
            [&] { return raw_first_byte(echo, echo_argv, cenv, false); });
        f1 = fork_batch();
      }
      s2u.push_back(u1 / u0);
      s2f.push_back(f1 / f0);
      s2p.push_back(p1 / p0);
      uex_grown.push_back(u1);
      fork_empty.push_back(f0);
      fork_grown.push_back(f1);
      ps_grown.push_back(p1);
      ps_empty.push_back(p0);
      uex_empty.push_back(u0);
      std::fprintf(stderr, "round %d/%d: S1 echo %.3f bash %.3f S2 uexec %.3f fork %.3f\n", r + 1,
                   rounds, s1e.back(), s1b.back(), s2u.back(), s2f.back());
    }
    Row e = make_row("S1-echo", "spawn -> first byte, /bin/echo x, uexec/posix_spawn", s1e,
                     Cmp::kLe, 1.1);
    e.absolute_text = fmt::format("raw {}; uexec {}", abs3("ms", raw_e, 2), abs3("ms", uex_e, 2));
    e.absolute = {{"raw_ms", raw_e}, {"uexec_ms", uex_e}, {"samples_per_round", k}};
    Row b = make_row("S1-bash", "spawn -> first prompt byte, bash --norc -i, uexec/posix_spawn",
                     s1b, Cmp::kLe, 1.1);
    b.absolute_text = fmt::format("raw {}; uexec {}", abs3("ms", raw_b, 2), abs3("ms", uex_b, 2));
    b.absolute = {{"raw_ms", raw_b}, {"uexec_ms", uex_b}, {"samples_per_round", k}};
    Row s2 = make_row("S2", "echo x spawn at +256 MiB RSS, uexec grown/empty", s2u, Cmp::kLe, 1.1);
    s2.absolute_text = fmt::format("uexec empty {}; grown {}", abs3("ms", uex_empty, 2), abs3("ms", uex_grown, 2));
    s2.absolute = {{"uexec_empty_ms", uex_empty}, {"uexec_grown_ms", uex_grown}};
    Row s2f_row = make_row("S2-fork", "same for fork+exec, grown/empty (contrast)", s2f,
                           Cmp::kInfo, 0);
    s2f_row.absolute_text =
        fmt::format("fork empty {}; grown {}", abs3("ms", fork_empty, 2), abs3("ms", fork_grown, 2));
    s2f_row.absolute = {{"fork_empty_ms", fork_empty}, {"fork_grown_ms", fork_grown}};
    Row s2p_row = make_row("S2-posix_spawn", "same for raw posix_spawn, grown/empty (contrast)",
                           s2p, Cmp::kInfo, 0);
    s2p_row.absolute_text = fmt::format("posix_spawn empty {}; grown {}", abs3("ms", ps_empty, 2),
                                        abs3("ms", ps_grown, 2));
    s2p_row.absolute = {{"posix_spawn_empty_ms", ps_empty}, {"posix_spawn_grown_ms", ps_grown}};
    Row js = make_row("J1-spawn", "spawn -> first byte, /bin/echo x, journal on / off", j1s, Cmp::kLe, 1.1);
    js.absolute_text = fmt::format("off {}; on {}", abs3("ms", plain_e, 2), abs3("ms", jour_e, 2));
    js.absolute = {{"plain_ms", plain_e}, {"journaled_ms", jour_e}};
    Row hs = make_row("S1-held", "spawn -> first byte, /bin/echo x, held by a holder / not", h1s, Cmp::kLe, 1.1);
    hs.absolute_text = fmt::format("unheld {}; held {}", abs3("ms", unheld_e, 2), abs3("ms", held_e, 2));
    hs.absolute = {{"unheld_ms", unheld_e}, {"held_ms", held_e}};
    journal.writer().flush();
    link->reset();  // closes the link: the peer's thread ends
    rows = {e, b, s2, s2f_row, s2p_row, js, hs};
    if (o.peers)
      std::fprintf(stderr, "bench_spawn: no peer rows (node-pty spawn latency not measured)\n");
  }
  std::filesystem::remove_all(journal_dir);
  finish(o, fmt::format("bench_spawn ({} rounds x {} samples)", rounds, k), rows);
  return 0;
}

}  // namespace
}  // namespace uexec::bench

int main(int argc, char** argv) {
  return uexec::bench::bench_main(uexec::bench::parse_options(argc, argv));
}
