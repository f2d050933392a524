// bench_sandbox: what a sandbox adds to a spawn (docs/performance.md §3 S3, S4; docs/sandbox.md §8; issue 7).
//
// Every sample is the same workload, `/bin/echo x` in a tty session through
// ProcessManager::start (as bench_spawn's uexec side), timed from start() until the session
// is finished: the command has exited, been reaped, and its output is drained into the ring
// (and checked to hold the "x"). Seven variants, all but bwrap-argv through the same
// ProcessManager path:
//
//   none       unsandboxed (SandboxAttempt::none())
//   landlock   LinuxLandlock: Landlock + seccomp applied in the child, no namespaces
//   ns         LinuxNamespaces: workspace-write, network off (pid 1 + uexec-init, pid 2 runs echo)
//   bwrap      LinuxBwrap: workspace-write, network off (one exec of /usr/bin/bwrap)
//   bwrap-argv the S4 baseline (docs/performance.md §3 S4: "one bare bwrap call with the same argv"):
//              not through uexec. Each sample first plans the bwrap variant's request
//              (env_for, untimed: the argv, env, stubs and the seccomp memfd), then times a
//              posix_spawn of exactly that bwrap argv on a fresh PTY (setsid, the slave as
//              controlling tty and stdio, the memfd on fd 3), read to EOF, waitpid. What the
//              bwrap row adds over it is uexec: planning, the spawn path, ring and loop.
//   bare-bwrap an unsandboxed session whose argv is one bare bwrap call with docs/performance.md §4's
//              minimal argv (a contrast: the difference to bwrap-argv is the policy's mounts):
//              bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-net --ro-bind / /
//                    --dev /dev --proc /proc -- /bin/echo x
//   codex      an unsandboxed session whose argv is Codex CLI 0.169.0's sandbox:
//              codex sandbox -c sandbox_mode="workspace-write" -- /bin/echo x
//              (its default mode is read-only; network is off in both), with HOME and
//              CODEX_HOME in a fresh directory under /var/tmp: Codex refuses to create its
//              codex-linux-sandbox helper alias when CODEX_HOME lies under the temp dir, and
//              bwrap then fails with "execvp codex-linux-sandbox: No such file or directory".
//
// All variants run in the same fresh, empty workspace directory under /var/tmp (the cwd and,
// for the sandboxes, the writable root; it has no .git, so the namespace and bwrap backends
// make the protected names .git, .codex, .agents, .uexec as stubs on every spawn and remove
// them when the session goes, outside the timed span).
// Samples are interleaved: each iteration runs every variant once, starting from a rotating
// variant so that none always follows the slow Codex call. N runs (default 200, --quick 40,
// --runs N) are split into rounds; a round's ratio is the ratio of the two variants' medians
// in that round, and the rows report min/median/max of the per-round ratios (judged on the
// median, as every uexec benchmark). The absolute column gives per-variant medians over
// all N samples and the ratio of those pooled medians.
//
// Rows (targets from issue 7 and docs/performance.md §3):
//   S3-landlock  landlock / none            <= 1.15
//   S3-ns        ns / none                  <= 2     (docs/performance.md §3; docs/sandbox.md §8 aims at 1.15)
//   S3-codex     codex / ns                 >= 8
//   S4-bwrap     bwrap / bwrap-argv         <= 1.1
//   info rows    bwrap / bare-bwrap and bwrap-argv / bare-bwrap (the policy's mounts),
//                bare-bwrap / none, codex / none, ns / landlock; the four target ratios again
//                to the first output byte only (*-fb: docs/sandbox.md §8's aim is spawn to first
//                byte; the difference is exit, reap and namespace teardown); and plan-*:
//                SandboxAttempt::env_for alone (the manager's planning) / the whole spawn
//   BD-*         the breakdown (informational; --no-breakdown leaves it out): the landlock and
//                ns plans started by pty::spawn itself (the child code of every session, without
//                the manager's ring, loop and listener), whole (BD-landlock, BD-ns) and with one
//                part left out at a time, each against an unsandboxed plan started the same way
//                (d-none): -errno (the errno flavour of the filter: no user-notification
//                listener made and sent), -noseccomp, -nocaps (no_new_privs only: no bounding-set
//                drops, securebits or capset), -nolandlock, -nonet / -noipc (that namespace
//                not made), -noview (no mount view: the host's tree in a new mount namespace).
//                BD-manager-*: the session (ProcessManager) / the same plan by pty::spawn alone.
//                A part's cost is BD-<whole> minus BD-<whole>-no<part>, in units of d-none.
// A variant that fails on this host (backend unavailable, setup error) is skipped with its
// error in the row; the program still exits 0 unless the unsandboxed baseline fails.
//
//   bench_sandbox [--quick] [--json PATH] [--runs N] [--rounds R] [--codex PATH] [--no-codex]
//                 [--only ID,ID…]   (variants: landlock, ns, bwrap, bwrap-argv, bare-bwrap, codex; none always runs)
//                 [--workspace-parent DIR]   (where the fresh workspace is made; default /var/tmp)
//                 [--no-breakdown]           (leave out the d-* variants and BD-* rows)
//
// Codex is searched at --codex, $UEXEC_BENCH_CODEX, then
// <source>/tests/e2e/conformance/node_modules/@openai/codex-linux-x64/vendor/
// x86_64-unknown-linux-musl/bin/codex, <build>/bench/peers/..., $UEXEC_BENCH_PEERS/...,
// <build>/peers/..., and the same under ./tests/e2e/conformance and ./build/bench/peers.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <optional>

#include "bench_util.h"
#include "loop/loop.h"
#include "policy/exec_request.h"
#include "policy/linux_sandbox.h"
#include "policy/profile.h"
#include "policy/sandbox_attempt.h"
#include "policy/seccomp.h"
#include "pty/spawn.h"
#include "session/process_manager.h"

namespace uexec::bench {
namespace {

std::vector<std::string> g_cleanup;  // temp directories removed at exit

void cleanup() {
  for (auto& d : g_cleanup) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  }
  g_cleanup.clear();
}

std::string make_temp_dir(const std::string& base, const char* prefix) {
  std::string templ = base + "/" + prefix + "XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) die_errno("mkdtemp " + templ);
  std::string dir = buf.data();
  g_cleanup.push_back(dir);
  return dir;
}

struct Variant {
  std::string id;       // "none", "landlock", …
  std::string label;    // for messages
  std::vector<std::string> argv;
  std::vector<std::string> env;
  policy::SandboxAttempt attempt = policy::SandboxAttempt::none();
  // Not through uexec: each sample plans with `attempt` first (untimed), then times one
  // posix_spawn of exactly the planned argv, env, cwd and fds (the S4 baseline).
  bool raw = false;
  // The breakdown (see the header): spawned by pty::spawn itself, with `trim` applied to the
  // plan first (a step swapped for a no-op, a namespace flag cleared), not through the manager.
  bool direct = false;
  std::function<void(pty::SpawnSpec&)> trim;
  bool ok = true;
  std::string note;     // why skipped
  std::vector<double> all_ms;    // every sample
  std::vector<double> round_ms;  // this round's samples
  std::vector<double> medians;   // one per round
  std::vector<double> plan_ms;   // env_for alone (sandboxed variants)
  std::vector<double> first_round, first_medians, first_all;  // the same for the first byte
};

// One spawn → exited, reaped and output drained; also when its first output byte arrived.
struct Sample {
  std::int64_t done_ns = 0;   // start() → finished (exited, reaped, output closed)
  std::int64_t first_ns = 0;  // start() → first byte in the ring
};

// A variant's request: its argv and env in a tty session, in `cwd`.
policy::ExecRequest request_for(const Variant& v, const std::string& cwd) {
  policy::ExecRequest req;
  req.argv = v.argv;
  req.tty = true;
  req.env = v.env;
  req.cwd = cwd;
  return req;
}

// ---- the breakdown's trims: one step of the plan swapped, or one namespace left out ----
int noop_step(const void*, int) noexcept { return 0; }
// What the privilege step must leave for the later steps when an unprivileged manager runs
// the bench (seccomp and Landlock need no_new_privs without CAP_SYS_ADMIN).
int no_new_privs_only(const void*, int) noexcept {
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? errno : 0;
}
// Replaces the step named `what` (in either list) by fn(arg); dies when the plan has none,
// so a renamed step cannot silently turn a row into a copy of another.
void swap_step(pty::SpawnSpec& spec, std::string_view what, int (*fn)(const void*, int) noexcept, const void* arg) {
  for (auto* list : {&spec.steps, &spec.setup_steps})
    for (auto& st : *list)
      if (st.what && what == st.what) {
        st.fn = fn;
        st.arg = arg;
        return;
      }
  die(fmt::format("breakdown: the plan has no step \"{}\"", what));
}

// A fresh PTY for a raw or direct sample: the master, and the slave open (by us until the
// child has its own: a master with no slave open reads EIO at once) with its path.
struct SamplePty {
  int master;
  int slave_fd;
  std::string slave;
};
SamplePty open_pty() {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char slave[64];
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0 || ::ptsname_r(master, slave, sizeof slave) != 0)
    die_errno("posix_openpt");
  int slave_fd = ::open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave_fd < 0) die_errno(std::string("open ") + slave);
  return {master, slave_fd, slave};
}

// The end of a raw or direct sample: `master` read until every slave fd is gone (EIO), the
// child reaped, the output checked for the "x". A child with no EOF within 60 s is killed (for
// ns, pid 1: the whole namespace) rather than waited for. Closes `master`.
std::optional<Sample> drain_and_reap(int master, pid_t pid, std::int64_t t0, bool need_zero_exit, std::string& err) {
  std::string out;
  std::int64_t first = 0;
  char buf[4096];
  for (;;) {
    pollfd p{master, POLLIN, 0};
    int pr = ::poll(&p, 1, 60'000);
    if (pr < 0 && errno == EINTR) continue;  // the manager's SIGCHLD handler
    if (pr == 0) {
      ::kill(pid, SIGKILL);
      err = "no EOF within 60 s";
    }
    if (pr <= 0) break;
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    if (!first) first = now_ns();
    out.append(buf, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::int64_t t1 = now_ns();
  ::close(master);
  if (!first) first = t1;
  if (!err.empty()) return std::nullopt;
  if (!WIFEXITED(status) || (need_zero_exit && WEXITSTATUS(status) != 0) || out.find('x') == std::string::npos) {
    err = fmt::format("status {:#x}; output: \"{}\"", status, out.substr(0, 600));
    return std::nullopt;
  }
  return Sample{t1 - t0, first - t0};
}

// The S4 baseline: one bare bwrap call with the argv, env, cwd and fds that uexec's plan for
// the same request holds, started by posix_spawn on a fresh PTY (setsid, the slave as the
// controlling tty and stdio, the plan's fds on 3, 4, …: the seccomp memfd, or uexec-init, its
// two filters and the listener's socket), read to EOF, and waited for.
// Planning (env_for, which also makes the stubs) happens before the clock starts.
std::optional<Sample> run_raw(const Variant& v, const std::string& cwd, std::string& err) {
  policy::ExecRequest req = request_for(v, cwd);
  auto spec = v.attempt.env_for(req);
  if (!spec) {
    err = "env_for: " + spec.error().message();
    return std::nullopt;
  }
  if (!spec->steps.empty() || spec->ns_flags != 0) {
    err = "the plan needs more than one bare exec";
    return std::nullopt;
  }
  std::vector<char*> argv, envp;
  for (auto& a : spec->argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : spec->env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string program = spec->program.empty() ? spec->argv[0] : spec->program;

  std::int64_t t0 = now_ns();
  auto [master, slave_fd, slave] = open_pty();
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&at);
  sigset_t none, all;
  ::sigemptyset(&none);
  ::sigfillset(&all);
  ::posix_spawnattr_setsigmask(&at, &none);
  ::posix_spawnattr_setsigdefault(&at, &all);
  ::posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  ::posix_spawn_file_actions_addopen(&fa, 0, slave.c_str(), O_RDWR, 0);  // after setsid: the controlling tty
  ::posix_spawn_file_actions_adddup2(&fa, 0, 1);
  ::posix_spawn_file_actions_adddup2(&fa, 0, 2);
  for (std::size_t i = 0; i < spec->pass_fds.size(); ++i)
    ::posix_spawn_file_actions_adddup2(&fa, spec->pass_fds[i], static_cast<int>(3 + i));
  if (!spec->cwd.empty()) ::posix_spawn_file_actions_addchdir_np(&fa, spec->cwd.c_str());
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, program.c_str(), &fa, &at, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&at);
  ::close(slave_fd);
  if (rc != 0) {
    ::close(master);
    err = fmt::format("posix_spawn {}: {}", program, std::strerror(rc));
    return std::nullopt;
  }
  return drain_and_reap(master, pid, t0, /*need_zero_exit=*/true, err);
}

// A breakdown sample: the variant's plan (env_for, untimed, then `trim`), started by
// pty::spawn on a fresh PTY, read to EOF and waited for. The same child code as a session's,
// without the manager's side (ring, loop, listener, tombstone).
std::optional<Sample> run_direct(const Variant& v, const std::string& cwd, std::string& err) {
  policy::ExecRequest req = request_for(v, cwd);
  auto spec = v.attempt.env_for(req);
  if (!spec) {
    err = "env_for: " + spec.error().message();
    return std::nullopt;
  }
  if (v.trim) v.trim(*spec);
  std::int64_t t0 = now_ns();
  auto [master, slave_fd, slave] = open_pty();
  pty::ChildStdio stdio;
  stdio.tty = slave_fd;
  auto child = pty::spawn(*spec, stdio);
  ::close(slave_fd);
  if (!child) {
    ::close(master);
    err = "spawn: " + child.error().message();
    return std::nullopt;
  }
  return drain_and_reap(master, child->pid, t0, /*need_zero_exit=*/false, err);
}

// Returns the sample, or nullopt with `err`.
std::optional<Sample> run_one(session::ProcessManager& pm, loop::Loop& loop, const Variant& v,
                                    const std::string& cwd, std::string& err) {
  if (v.raw) return run_raw(v, cwd, err);
  if (v.direct) return run_direct(v, cwd, err);
  policy::ExecRequest req = request_for(v, cwd);
  std::int64_t t0 = now_ns();
  auto id = pm.start(req, v.attempt);
  if (!id) {
    err = "start: " + id.error().message();
    return std::nullopt;
  }
  session::Session* s = pm.find(*id);
  const std::int64_t deadline = t0 + 60'000'000'000LL;
  std::int64_t first = 0;
  while (!s->finished()) {
    loop.run_once();
    if (!first && s->output().total() > 0) first = now_ns();
    if (now_ns() > deadline) {
      err = "no exit within 60 s";
      pm.remove(*id);
      loop.run_once(false);
      return std::nullopt;
    }
  }
  std::int64_t t1 = now_ns();
  if (!first) first = t1;
  std::string out = s->output().render();
  std::optional<int> code;
  if (s->verdict()) code = s->verdict()->status.shell_code();
  pm.remove(*id);
  loop.run_once(false);
  if (!code || *code != 0 || out.find('x') == std::string::npos) {
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    if (out.size() > 600) out = out.substr(0, 600) + "…";
    err = fmt::format("{}; output: \"{}\"", code ? fmt::format("exit {}", *code) : std::string("no verdict"),
                      out);
    return std::nullopt;
  }
  return Sample{t1 - t0, first - t0};
}

int bench_main(const Options& o) {
  std::atexit(cleanup);
  int runs = o.quick ? 40 : 200;
  int rounds = o.quick ? 4 : 8;
  bool want_codex = true;
  bool breakdown = true;
  std::string ws_parent = "/var/tmp";
  std::function<bool(const std::string&)> only = [](const std::string&) { return true; };
  std::string codex_path;
  for (std::size_t i = 0; i < o.rest.size(); ++i) {
    const std::string& a = o.rest[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= o.rest.size()) die(a + " needs a value");
      return o.rest[++i];
    };
    if (a == "--runs") {
      runs = std::atoi(next().c_str());
    } else if (a == "--rounds") {
      rounds = std::atoi(next().c_str());
    } else if (a == "--codex") {
      codex_path = next();
    } else if (a == "--workspace-parent") {
      ws_parent = next();
    } else if (a == "--no-codex") {
      want_codex = false;
    } else if (a == "--no-breakdown") {
      breakdown = false;
    } else if (a == "--only") {
      std::string list = "," + next() + ",";
      // The baselines always run: "none" for every row, "d-none" for the breakdown's.
      only = [list](const std::string& id) {
        return id == "none" || id == "d-none" || list.find("," + id + ",") != std::string::npos;
      };
    } else {
      die("unknown option " + a +
          " (usage: bench_sandbox [--quick] [--json PATH] [--runs N] [--rounds R] [--codex PATH] [--no-codex]"
          " [--only ID,ID…] [--workspace-parent DIR] [--no-breakdown])");
    }
  }
  if (rounds < 1) rounds = 1;
  if (runs < rounds) runs = rounds;
  const int k = runs / rounds;  // samples per variant per round
  ::signal(SIGPIPE, SIG_IGN);

  // The workspace: cwd of every variant and the sandboxes' writable root. Not under /tmp by
  // default: /tmp is a writable root itself, and the Landlock-only backend, which cannot
  // carve .git and friends out of a nested root, grants write on every sibling along the
  // path instead, so a workspace in /tmp costs one Landlock rule per entry of /tmp.
  std::string ws = make_temp_dir(ws_parent, "uexec-bench-ws.");
  {
    char buf[PATH_MAX];
    if (!::realpath(ws.c_str(), buf)) die_errno("realpath " + ws);
    ws = buf;
  }
  const std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "HOME=/tmp",
                                        "LANG=C.UTF-8"};
  const std::vector<std::string> echo = {"/bin/echo", "x"};

  const policy::HostSupport& host = policy::host_support();
  std::fprintf(stderr,
               "bench_sandbox: host: userns %s%s%s, landlock ABI %d, uexec-init %s%s%s, bwrap %s %s\n",
               host.userns ? "yes" : "no", host.userns ? "" : " ", host.userns ? "" : host.userns_detail.c_str(),
               host.landlock_abi, host.init ? "loaded" : "no", host.init ? "" : " ",
               host.init ? "" : host.init_detail.c_str(), host.bwrap.empty() ? "(none)" : host.bwrap.c_str(),
               host.bwrap_version.c_str());

  auto profile = policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite);
  profile.network = false;

  std::vector<Variant> vs;
  auto add_sandboxed = [&](std::string id, std::string label, policy::Backend b) {
    Variant v;
    v.id = std::move(id);
    v.label = std::move(label);
    v.argv = echo;
    v.env = env;
    auto a = policy::SandboxAttempt::select(profile, b);
    if (!a) {
      v.ok = false;
      v.note = "select: " + a.error().message();
    } else {
      v.attempt = std::move(*a);
    }
    vs.push_back(std::move(v));
  };
  {
    Variant v;
    v.id = "none";
    v.label = "unsandboxed";
    v.argv = echo;
    v.env = env;
    vs.push_back(std::move(v));
  }
  add_sandboxed("landlock", "LinuxLandlock", policy::Backend::kLandlock);
  add_sandboxed("ns", "LinuxNamespaces", policy::Backend::kNamespaces);
  add_sandboxed("bwrap", "LinuxBwrap", policy::Backend::kBwrap);
  add_sandboxed("bwrap-argv", "bwrap, same argv", policy::Backend::kBwrap);
  vs.back().raw = true;
  {
    Variant v;
    v.id = "bare-bwrap";
    v.label = "bare bwrap";
    v.env = env;
    std::string bwrap = !host.bwrap.empty() ? host.bwrap : which("bwrap");
    if (bwrap.empty()) {
      v.ok = false;
      v.note = "bwrap not found";
      bwrap = "/usr/bin/bwrap";
    }
    v.argv = {bwrap,    "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--ro-bind", "/", "/",
              "--dev",  "/dev",           "--proc",        "/proc",         "--",            "/bin/echo", "x"};
    vs.push_back(std::move(v));
  }
  {
    Variant v;
    v.id = "codex";
    v.label = "codex sandbox";
    std::vector<std::string> searched;
    if (!want_codex) {
      v.ok = false;
      v.note = "skipped: --no-codex";
    } else {
      std::string build = dirname_of(dirname_of(dirname_of(self_exe())));  // <build>/tools/bench/bench_sandbox
      codex_path = find_codex(build, codex_path, searched);
      if (codex_path.empty()) {
        std::string list;
        for (auto& c : searched) list += (list.empty() ? "" : ", ") + c;
        v.ok = false;
        v.note = "skipped: Codex CLI 0.169.0 not found (searched " + list +
                 "; `npm install --prefix build/bench/peers @openai/codex@0.169.0` or pass --codex PATH)";
      } else {
        // The session runs in the workspace: a relative path would not resolve there.
        char abs[PATH_MAX];
        if (::realpath(codex_path.c_str(), abs)) codex_path = abs;
        // Not under the temp dir: Codex then refuses its helper alias and bwrap cannot exec it.
        std::string home = make_temp_dir("/var/tmp", "uexec-bench-codex-home.");
        std::string codex_home = home + "/.codex";
        if (::mkdir(codex_home.c_str(), 0700) != 0) die_errno("mkdir " + codex_home);
        v.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "HOME=" + home, "CODEX_HOME=" + codex_home,
                 "LANG=C.UTF-8"};
        v.argv = {codex_path, "sandbox", "-c", "sandbox_mode=\"workspace-write\"", "--", "/bin/echo", "x"};
        std::fprintf(stderr, "bench_sandbox: codex = %s (CODEX_HOME %s)\n", codex_path.c_str(), codex_home.c_str());
      }
    }
    vs.push_back(std::move(v));
  }

  // The breakdown (informational rows BD-*): the landlock and ns plans started by
  // pty::spawn directly, whole and with one part left out at a time, against an unsandboxed
  // plan started the same way (d-none).
  static std::shared_ptr<const policy::BpfProgram> errno_filter;  // the landlock plan's filter, errno flavour
  if (breakdown) {
    auto errno_prog = policy::seccomp_program(/*network=*/false, ::geteuid() == 0, /*notify=*/false, /*deny_unix=*/true);
    if (!errno_prog) die("seccomp_program: " + errno_prog.error().message());
    errno_filter = *errno_prog;
    auto add_direct = [&](std::string id, std::string label, const std::string& base,
                          std::function<void(pty::SpawnSpec&)> trim) {
      Variant v;
      for (auto& b : vs)
        if (b.id == base) {
          v.attempt = b.attempt;
          v.ok = b.ok;
          v.note = b.note;
        }
      v.id = std::move(id);
      v.label = std::move(label);
      v.argv = echo;
      v.env = env;
      v.direct = true;
      v.trim = std::move(trim);
      vs.push_back(std::move(v));
    };
    const char* kSeccomp = "sandbox: seccomp";
    const char* kCaps = "sandbox: drop privileges";
    add_direct("d-none", "unsandboxed, direct", "none", nullptr);
    add_direct("d-landlock", "landlock, direct", "landlock", nullptr);
    add_direct("d-landlock-errno", "landlock, errno filter (no listener)", "landlock", [=](pty::SpawnSpec& sp) {
      swap_step(sp, kSeccomp, policy::apply_seccomp, errno_filter.get());
    });
    add_direct("d-landlock-noseccomp", "landlock, no seccomp", "landlock",
               [=](pty::SpawnSpec& sp) { swap_step(sp, kSeccomp, noop_step, nullptr); });
    add_direct("d-landlock-nocaps", "landlock, no cap drops", "landlock",
               [=](pty::SpawnSpec& sp) { swap_step(sp, kCaps, no_new_privs_only, nullptr); });
    add_direct("d-landlock-nolandlock", "landlock, no landlock_restrict_self", "landlock",
               [](pty::SpawnSpec& sp) { swap_step(sp, "sandbox: landlock_restrict_self", noop_step, nullptr); });
    add_direct("d-ns", "ns, direct", "ns", nullptr);
    add_direct("d-ns-nonet", "ns without CLONE_NEWNET", "ns", [](pty::SpawnSpec& sp) { sp.ns_flags &= ~static_cast<unsigned long>(CLONE_NEWNET); });
    add_direct("d-ns-noipc", "ns without CLONE_NEWIPC", "ns", [](pty::SpawnSpec& sp) { sp.ns_flags &= ~static_cast<unsigned long>(CLONE_NEWIPC); });
    add_direct("d-ns-noview", "ns without the mount view", "ns",
               [](pty::SpawnSpec& sp) { swap_step(sp, "sandbox: mount view", noop_step, nullptr); });
    add_direct("d-ns-noseccomp", "ns without seccomp", "ns",
               [=](pty::SpawnSpec& sp) { swap_step(sp, kSeccomp, noop_step, nullptr); });
    add_direct("d-ns-nocaps", "ns without cap drops", "ns",
               [=](pty::SpawnSpec& sp) { swap_step(sp, kCaps, no_new_privs_only, nullptr); });
  }

  for (auto& v : vs)
    if (v.ok && !only(v.id)) {
      v.ok = false;
      v.note = "skipped: not in --only";
    }

  loop::Loop loop;
  std::vector<Row> rows;
  {
    session::ProcessManager pm(loop);
    // Warm-up, and a check that each variant works here: three good runs each.
    for (auto& v : vs) {
      if (!v.ok) continue;
      for (int i = 0; i < 3; ++i) {
        std::string err;
        if (!run_one(pm, loop, v, ws, err)) {
          v.ok = false;
          v.note = "failed: " + err;
          break;
        }
      }
      if (!v.ok) std::fprintf(stderr, "bench_sandbox: %s: %s\n", v.label.c_str(), v.note.c_str());
    }
    if (!vs[0].ok) die("the unsandboxed baseline fails: " + vs[0].note);
    if (o.quick) std::fprintf(stderr, "bench_sandbox: --quick\n");
    std::fprintf(stderr, "bench_sandbox: %d rounds x %d interleaved samples per variant (workspace %s)\n", rounds, k,
                 ws.c_str());

    const std::size_t n = vs.size();
    std::size_t rot = 0;
    for (int r = 0; r < rounds; ++r) {
      for (auto& v : vs) {
        v.round_ms.clear();
        v.first_round.clear();
      }
      for (int i = 0; i < k; ++i, ++rot) {
        for (std::size_t j = 0; j < n; ++j) {
          Variant& v = vs[(rot + j) % n];
          if (!v.ok) continue;
          std::string err;
          auto t = run_one(pm, loop, v, ws, err);
          if (!t) {  // failed mid-run: drop the variant, keep the others going
            v.ok = false;
            v.note = fmt::format("failed in round {}: {}", r + 1, err);
            std::fprintf(stderr, "bench_sandbox: %s: %s\n", v.label.c_str(), v.note.c_str());
            continue;
          }
          double ms = ns_to_ms(t->done_ns), fb = ns_to_ms(t->first_ns);
          v.round_ms.push_back(ms);
          v.all_ms.push_back(ms);
          v.first_round.push_back(fb);
          v.first_all.push_back(fb);
        }
      }
      std::string line;
      for (auto& v : vs) {
        if (!v.ok) continue;
        v.medians.push_back(median(v.round_ms));
        v.first_medians.push_back(median(v.first_round));
        line += fmt::format(" {} {:.2f}", v.id, v.medians.back());
      }
      std::string load;  // the machine is shared: namespace-heavy variants slow down most under load
      {
        std::ifstream la("/proc/loadavg");
        std::getline(la, load);
        load = load.substr(0, load.find(' '));
      }
      std::fprintf(stderr, "round %d/%d (median ms):%s (load %s)\n", r + 1, rounds, line.c_str(), load.c_str());
    }
    if (!vs[0].ok) die("the unsandboxed baseline failed: " + vs[0].note);

    // The parent-side plan alone (SandboxAttempt::env_for: resolve the profile, build the
    // Landlock/seccomp/mount steps or the bwrap argv, take the stub lease), outside the
    // interleaved rounds: what part of each sandboxed spawn is planning in the manager.
    for (auto& v : vs) {
      if (!v.ok || !v.attempt.sandboxed() || v.raw) continue;
      policy::ExecRequest req = request_for(v, ws);
      for (int i = 0; i < rounds * k; ++i) {
        std::int64_t t0 = now_ns();
        auto spec = v.attempt.env_for(req);
        std::int64_t t1 = now_ns();
        if (!spec) {
          v.plan_ms.clear();
          break;
        }
        v.plan_ms.push_back(ns_to_ms(t1 - t0));
      }
    }
  }

  auto find = [&](const std::string& id) -> Variant& {
    for (auto& v : vs)
      if (v.id == id) return v;
    die("no variant " + id);
  };
  // num / den per round, with the pooled medians in the absolute column.
  auto ratio_row = [&](std::string rid, std::string name, const std::string& num, const std::string& den, Cmp cmp,
                       double target, bool first_byte = false) {
    Variant& a = find(num);
    Variant& b = find(den);
    const auto& am = first_byte ? a.first_medians : a.medians;
    const auto& bm = first_byte ? b.first_medians : b.medians;
    const auto& aa = first_byte ? a.first_all : a.all_ms;
    const auto& ba = first_byte ? b.first_all : b.all_ms;
    std::vector<double> ratios;
    Row row;
    if (a.ok && b.ok && am.size() == bm.size()) {
      for (std::size_t i = 0; i < am.size(); ++i) ratios.push_back(am[i] / bm[i]);
    }
    row = make_row(std::move(rid), std::move(name), ratios, cmp, target);
    if (!row.skipped()) {
      double pa = median(aa), pb = median(ba);
      row.absolute_text = fmt::format("{} {}; {} {}; pooled medians of {} samples: {:.2f} / {:.2f} ms = {:.3f}",
                                      a.id, abs3("ms", am, 2), b.id, abs3("ms", bm, 2), aa.size(), pa, pb, pa / pb);
      row.absolute = {{"measure", first_byte ? "first_byte" : "exit_and_drained"},
                      {num + "_round_median_ms", am},
                      {den + "_round_median_ms", bm},
                      {num + "_median_ms", pa},
                      {den + "_median_ms", pb},
                      {"pooled_ratio", pa / pb},
                      {"samples_per_round", k}};
    } else {
      std::string why;
      for (Variant* v : {&a, &b})
        if (!v->ok) why += (why.empty() ? "" : "; ") + v->label + ": " + v->note;
      row.note = why.empty() ? "skipped" : why;
    }
    return row;
  };

  rows.push_back(ratio_row("S3-landlock", "echo x, LinuxLandlock (Landlock+seccomp) / unsandboxed", "landlock", "none",
                           Cmp::kLe, 1.15));
  rows.push_back(ratio_row("S3-ns", "echo x, LinuxNamespaces (workspace-write, net off) / unsandboxed", "ns", "none",
                           Cmp::kLe, 2.0));
  rows.push_back(ratio_row("S3-codex", "echo x, codex sandbox (workspace-write) / LinuxNamespaces", "codex", "ns",
                           Cmp::kGe, 8.0));
  rows.push_back(ratio_row("S4-bwrap", "echo x, LinuxBwrap / one bare bwrap call with the same argv (posix_spawn)",
                           "bwrap", "bwrap-argv", Cmp::kLe, 1.1));
  rows.push_back(ratio_row("S4-min", "LinuxBwrap / bwrap with docs/performance.md §4's minimal argv (contrast)", "bwrap",
                           "bare-bwrap", Cmp::kInfo, 0));
  rows.push_back(ratio_row("S4-policy", "bwrap: the policy's argv / the minimal argv, both bare (contrast)",
                           "bwrap-argv", "bare-bwrap", Cmp::kInfo, 0));
  rows.push_back(ratio_row("S4-bare", "bare bwrap call / unsandboxed (contrast)", "bare-bwrap", "none", Cmp::kInfo, 0));
  rows.push_back(ratio_row("S3-codex-raw", "codex sandbox / unsandboxed (contrast)", "codex", "none", Cmp::kInfo, 0));
  rows.push_back(ratio_row("S3-ns-ll", "LinuxNamespaces / LinuxLandlock (contrast)", "ns", "landlock", Cmp::kInfo, 0));
  // The same runs, to the first output byte only (docs/sandbox.md §8's aim is to this point): the
  // difference to the rows above is exit, reap and teardown (namespaces are torn down then).
  rows.push_back(ratio_row("S3-landlock-fb", "first byte only: LinuxLandlock / unsandboxed (target above: 1.15)",
                           "landlock", "none", Cmp::kInfo, 0, true));
  rows.push_back(ratio_row("S3-ns-fb", "first byte only: LinuxNamespaces / unsandboxed (docs/sandbox.md §8 aims at 1.15)", "ns",
                           "none", Cmp::kInfo, 0, true));
  rows.push_back(ratio_row("S3-codex-fb", "first byte only: codex sandbox / LinuxNamespaces", "codex", "ns",
                           Cmp::kInfo, 0, true));
  rows.push_back(ratio_row("S4-bwrap-fb", "first byte only: LinuxBwrap / bare bwrap call with the same argv", "bwrap",
                           "bwrap-argv", Cmp::kInfo, 0, true));

  // The breakdown: each direct variant / d-none, and what the manager adds around the child.
  if (breakdown) {
    for (auto& v : std::vector<std::string>{"d-landlock", "d-landlock-errno", "d-landlock-noseccomp",
                                            "d-landlock-nocaps", "d-landlock-nolandlock", "d-ns", "d-ns-nonet",
                                            "d-ns-noipc", "d-ns-noview", "d-ns-noseccomp", "d-ns-nocaps"}) {
      Variant& d = find(v);
      rows.push_back(ratio_row("BD-" + v.substr(2), "breakdown: " + d.label + " / unsandboxed, both by pty::spawn", v,
                               "d-none", Cmp::kInfo, 0));
    }
    rows.push_back(ratio_row("BD-manager-none", "breakdown: unsandboxed session (ProcessManager) / pty::spawn alone",
                             "none", "d-none", Cmp::kInfo, 0));
    rows.push_back(ratio_row("BD-manager-landlock", "breakdown: landlock session (ProcessManager) / pty::spawn alone",
                             "landlock", "d-landlock", Cmp::kInfo, 0));
    rows.push_back(ratio_row("BD-manager-ns", "breakdown: ns session (ProcessManager) / pty::spawn alone", "ns",
                             "d-ns", Cmp::kInfo, 0));
  }

  // Informational: the plan's share of each sandboxed spawn (pooled medians).
  for (const char* id : {"landlock", "ns", "bwrap"}) {
    Variant& v = find(id);
    if (!v.ok || v.plan_ms.empty() || v.all_ms.empty()) continue;
    double plan = median(v.plan_ms), spawn = median(v.all_ms);
    Row row = make_row(fmt::format("plan-{}", id),
                       fmt::format("{}: env_for (plan in the manager) alone / whole sandboxed spawn", v.label),
                       {plan / spawn}, Cmp::kInfo, 0);
    Stats ps = stats(v.plan_ms);
    row.absolute_text = fmt::format("env_for {:.3f}/{:.3f}/{:.3f} ms over {} calls; spawn median {:.2f} ms", ps.min,
                                    ps.median, ps.max, v.plan_ms.size(), spawn);
    row.absolute = {{"plan_median_ms", plan}, {"spawn_median_ms", spawn}, {"calls", v.plan_ms.size()}};
    rows.push_back(std::move(row));
  }

  finish(o, fmt::format("bench_sandbox ({} rounds x {} samples, /bin/echo x, spawn -> exit + output drained)", rounds, k),
         rows);
  cleanup();
  return 0;
}

}  // namespace
}  // namespace uexec::bench

int main(int argc, char** argv) {
  return uexec::bench::bench_main(uexec::bench::parse_options(argc, argv));
}
