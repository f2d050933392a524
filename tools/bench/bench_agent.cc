// bench_agent: what the agent tools cost on top of the process itself.
//
// A1: exec_command("echo x", yield 10000) must return as soon as the process exits and its
// output closes, not at the yield. The baseline is the least a caller can do for the same
// result: posix_spawn of the same argv ([shell, "-c", "echo x"], same environment) with
// stdout and stderr on pipes, read both to EOF, waitpid. uexec does that plus the agent
// preset, the session, the ring, the exit/EOF join, the wait loop and the text envelope.
// Target: uexec <= 1.2x raw, and never near the 10 s yield.
//
// A2 (informational): write_stdin's echo round trip on a tty `cat`, with the post-write
// settle set to 0 and `until: {regex: token}` so the call returns on the echo itself,
// against a blocking write + read loop on a raw PTY through the same `cat`. With the default
// 100 ms settle a keystroke-sized write_stdin costs ~100 ms by design (docs/agent.md §2.4);
// this row shows what is left when that window is off.
//
// Rounds alternate baseline and uexec samples (A/B/A/B); each round's ratio is the ratio of
// its medians; rows report min/median/max over rounds.
#include <poll.h>
#include <spawn.h>

#include <functional>
#include <optional>
#include <regex>

#include "agent/agent_env.h"
#include "agent/agent_service.h"
#include "bench_util.h"
#include "loop/loop.h"
#include "session/process_manager.h"

namespace uexec::bench {
namespace {

// posix_spawn with stdout/stderr pipes; reads both to EOF and reaps. Returns ns.
std::int64_t raw_spawn_drain(const CArgs& argv, const CArgs& env) {
  std::int64_t t0 = now_ns();
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) die_errno("pipe2");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  if (::posix_spawn(&pid, argv.get()[0], &fa, &attr, argv.get(), env.get()) != 0) die_errno("posix_spawn");
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  ::close(err[1]);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    ::poll(fds, 2, -1);
    for (auto& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (::read(p.fd, buf, sizeof buf) <= 0) {
        ::close(p.fd);
        p.fd = -1;
        --open;
      }
    }
  }
  reap(pid);
  return now_ns() - t0;
}

struct Agent {
  loop::Loop& loop;
  agent::AgentService& exec;

  template <class Start>
  agent::Response wait(Start start) {
    std::optional<base::Result<agent::Response>> out;
    start([&](base::Result<agent::Response> r) { out.emplace(std::move(r)); });
    while (!out) loop.run_once();
    if (!*out) die("agent call: " + out->error().context);
    return std::move(**out);
  }
};

int bench_main(const Options& o) {
  const int rounds = o.quick ? 3 : 9;
  const int k = o.quick ? 10 : 40;
  std::string shell = which("bash");
  if (shell.empty()) die("bash not found");
  std::vector<std::string> base_env = current_env();

  loop::Loop loop;
  std::vector<Row> rows;
  {
    base::Config cfg;
    cfg.close_drain = std::chrono::milliseconds{1000};
    cfg.agent.post_write_settle = std::chrono::milliseconds{0};
    if (containment_off()) cfg.containment = base::ContainmentMode::kOff;
    session::ProcessManager pm(loop, cfg);
    agent::AgentService exec(pm, base_env, "/tmp");
    Agent ag{loop, exec};

    // The baseline runs what exec_command runs: the same shell, flags and environment.
    CArgs argv({shell, "-c", "echo x"});
    CArgs env(agent::build_agent_env(base_env, agent::EnvPolicy{}, 4242));
    auto uexec_exec = [&] {
      agent::ExecParams p;
      p.cmd = "echo x";
      p.shell = shell;
      p.login = false;
      p.yield_time_ms = 10000;
      std::int64_t t0 = now_ns();
      agent::Response r = ag.wait([&](agent::Reply done) { exec.exec_command(p, std::move(done)); });
      std::int64_t t = now_ns() - t0;
      if (r.exit_code != 0 || r.output != "x\n") die("exec_command echo x: unexpected result\n" + r.text);
      return t;
    };
    for (int i = 0; i < 5; ++i) {
      raw_spawn_drain(argv, env);
      uexec_exec();
    }
    std::vector<double> a1, raw_ms, uex_ms;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> va, vb;
      for (int i = 0; i < k; ++i) {
        va.push_back(ns_to_ms(raw_spawn_drain(argv, env)));
        vb.push_back(ns_to_ms(uexec_exec()));
      }
      raw_ms.push_back(median(va));
      uex_ms.push_back(median(vb));
      a1.push_back(uex_ms.back() / raw_ms.back());
      std::fprintf(stderr, "round %d/%d: A1 %.3f (raw %.2f ms, uexec %.2f ms)\n", r + 1, rounds, a1.back(),
                   raw_ms.back(), uex_ms.back());
    }
    Row a = make_row("A1", "exec_command echo x (yield 10000) vs raw spawn+drain", a1, Cmp::kLe, 1.2);
    a.absolute_text = fmt::format("raw {:.2f} ms; uexec {:.2f} ms (medians of rounds)", median(raw_ms), median(uex_ms));
    a.absolute = {{"raw_ms", raw_ms}, {"uexec_ms", uex_ms}, {"samples_per_round", k}};

    // A2: write_stdin echo through a tty cat, settle 0, until the token comes back.
    agent::ExecParams cat;
    cat.cmd = "exec cat";
    cat.tty = true;
    cat.login = false;
    cat.shell = shell;
    cat.yield_time_ms = 250;
    agent::Response started = ag.wait([&](agent::Reply done) { exec.exec_command(cat, std::move(done)); });
    if (!started.session_id) die("cat did not stay running");
    long sid = *started.session_id;
    int n = 0;
    auto uexec_echo = [&] {
      std::string token = fmt::format("k{}", n++);
      agent::WriteParams w;
      w.session_id = sid;
      w.chars = token + "\r";
      w.yield_time_ms = 5000;
      agent::Until u;
      u.regex_src = token;
      u.regex = std::make_shared<const std::regex>(token);
      w.until = u;
      std::int64_t t0 = now_ns();
      agent::Response r = ag.wait([&](agent::Reply done) { exec.write_stdin(w, std::move(done)); });
      std::int64_t t = now_ns() - t0;
      if (r.fired != "regex") die("write_stdin echo: no echo\n" + r.text);
      return t;
    };
    RawPty rp = open_raw_pty();
    CArgs cat_argv({"/bin/cat"}), cat_env(std::vector<std::string>{"PATH=/usr/bin:/bin"});
    pid_t cat_pid = spawn_on_pty(rp, cat_argv, cat_env);
    auto raw_echo = [&] {
      std::string token = fmt::format("k{}\r", n++);
      char buf[4096];
      std::int64_t t0 = now_ns();
      if (::write(rp.master, token.data(), token.size()) < 0) die_errno("write");
      std::string got;
      while (got.find(token.substr(0, token.size() - 1)) == std::string::npos) {
        ssize_t m = read_retry(rp.master, buf, sizeof buf);
        if (m <= 0) die("raw cat: no echo");
        got.append(buf, static_cast<std::size_t>(m));
      }
      return now_ns() - t0;
    };
    std::vector<double> a2, raw_us, uex_us;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> va, vb;
      for (int i = 0; i < k; ++i) {
        va.push_back(ns_to_us(raw_echo()));
        vb.push_back(ns_to_us(uexec_echo()));
      }
      raw_us.push_back(median(va));
      uex_us.push_back(median(vb));
      a2.push_back(uex_us.back() / raw_us.back());
    }
    ::kill(cat_pid, SIGKILL);
    rp.close_master();
    reap(cat_pid);
    Row b = make_row("A2", "write_stdin echo through tty cat (settle 0, until regex) vs blocking loop", a2,
                     Cmp::kInfo, 0);
    b.absolute_text = fmt::format("raw {:.1f} us; uexec {:.1f} us (medians of rounds)", median(raw_us), median(uex_us));
    b.absolute = {{"raw_us", raw_us}, {"uexec_us", uex_us}, {"samples_per_round", k}};
    rows = {a, b};
  }
  finish(o, fmt::format("bench_agent ({} rounds x {} samples)", rounds, k), rows);
  return 0;
}

}  // namespace
}  // namespace uexec::bench

int main(int argc, char** argv) { return uexec::bench::bench_main(uexec::bench::parse_options(argc, argv)); }
