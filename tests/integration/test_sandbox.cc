// The sandbox through the ProcessManager: real sessions in the namespace backend (and the
// Landlock-only one), their exit status through uexec-init, signals, containment of
// escapees, no leaks, the denial verdict, and the orchestrator's retry with a real runner.
#include <doctest/doctest.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "integration/session_helpers.h"
#include "policy/linux_sandbox.h"
#include "policy/orchestrator.h"

using namespace uexec;
using namespace uexec::test;
namespace fs = std::filesystem;

namespace {

bool have_namespaces() {
  const auto& h = policy::host_support();
  if (!h.userns || !h.init) {
    MESSAGE("SKIP: the namespace backend is unavailable here: " << (h.userns ? h.init_detail : h.userns_detail));
    return false;
  }
  return true;
}

policy::SandboxAttempt namespaces(policy::PermissionProfile p = policy::PermissionProfile::for_mode(
                                      policy::SandboxMode::kWorkspaceWrite)) {
  auto a = policy::SandboxAttempt::select(p, policy::Backend::kNamespaces);
  REQUIRE(a);
  return std::move(*a);
}

struct Scratch {
  fs::path root;
  Scratch() {
    char tmpl[] = "/var/tmp/uexec-sbx-XXXXXX";
    root = ::mkdtemp(tmpl);
    fs::create_directories(root / "ws");
  }
  ~Scratch() { fs::remove_all(root); }
  std::string ws() const { return (root / "ws").string(); }
  std::string outside() const { return (root / "outside").string(); }
};

session::Session& start_in(ManagerFixture& f, policy::ExecRequest req, const policy::SandboxAttempt& a) {
  auto id = f.pm->start(req, a);
  REQUIRE_MESSAGE(id.has_value(), (id ? "" : id.error().message()));
  return *f.pm->find(*id);
}

// Host pids whose command line contains `marker`.
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream f("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string cmd, part;
    while (std::getline(f, part, '\0')) cmd += part + " ";
    if (cmd.find(marker) != std::string::npos) out.push_back(pid);
  }
  if (d) ::closedir(d);
  return out;
}

}  // namespace

TEST_CASE("a sandboxed session reports the command's own exit code and signal, not init's") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  for (bool tty : {true, false}) {
    auto req = request({"/bin/sh", "-c", "echo in-sandbox $UEXEC_SANDBOX; exit 7"}, tty);
    req.cwd = s.ws();
    auto& a = start_in(f, req, namespaces());
    REQUIRE(f.wait_finished(a));
    CHECK(a.verdict()->status.code == 7);
    CHECK(a.verdict()->status.signal == 0);
    CHECK(all_output(a).find("in-sandbox linux-ns") != std::string::npos);
    CHECK_FALSE(a.verdict()->sandbox_denied());  // exit 7 with no evidence stays ordinary

    req.argv = {"/bin/sh", "-c", "kill -TERM $$"};
    auto& b = start_in(f, req, namespaces());
    REQUIRE(f.wait_finished(b));
    CHECK(b.verdict()->status.signal == SIGTERM);
  }
}

TEST_CASE("job control inside the sandbox: bash -i keeps its tty, Ctrl-C interrupts the foreground job") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  auto req = request({"/bin/bash", "--norc", "--noprofile", "-i"});
  req.env = std::vector<std::string>{"PS1=PROMPT> ", "PATH=/usr/bin:/bin", "TERM=dumb", "HOME=/tmp"};
  req.cwd = s.ws();
  auto& a = start_in(f, req, namespaces());
  REQUIRE(f.wait_output(a, "PROMPT> "));
  int master = a.process()->master_fd();
  pid_t shell_group = ::tcgetpgrp(master);  // bash's own group, while it waits at the prompt
  REQUIRE(shell_group > 0);
  REQUIRE(a.write(std::string_view("tty\n")));
  CHECK(f.wait_output(a, "/dev/console"));  // the session's PTY, named inside the view
  REQUIRE(f.run_until([&] { return ::tcgetpgrp(master) == shell_group; }));
  REQUIRE(a.write(std::string_view("sleep 100\n")));
  auto comm = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string c;
    std::getline(in, c);
    return c;
  };
  REQUIRE(f.run_until([&] {
    pid_t fg = ::tcgetpgrp(master);
    return fg > 0 && fg != shell_group && comm(fg) == "sleep";
  }));
  REQUIRE(a.write(std::string_view("\x03")));  // through the line discipline, as a person types it
  REQUIRE(f.run_until([&] { return ::tcgetpgrp(master) == shell_group; }));
  REQUIRE(a.write(std::string_view("echo status=$?\n")));
  CHECK(f.wait_output(a, "status=130"));
  REQUIRE(a.write(std::string_view("exit 5\n")));
  REQUIRE(f.wait_finished(a));
  CHECK(a.verdict()->status.code == 5);
}

TEST_CASE("fds: init holds exactly its status pipe, listener, channel and mask source") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  auto p = policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite);
  p.deny_read = {"*.env"};  // the channel to init is in use
  auto req = request({"/bin/sleep", "100"}, false);
  req.cwd = s.ws();
  auto& a = start_in(f, req, namespaces(p));
  auto fds_of = [](pid_t pid) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end(), [](const std::string& x, const std::string& y) { return std::stoi(x) < std::stoi(y); });
    return out;
  };
  // (The command's own side, no inherited fd, is the acceptance table's "write through an
  // inherited fd" row: a program's own fds, like glibc's gconv cache, make counting racy.)
  // init is the session's pid on the host: 0-2 /dev/null, 3 status, 4 seccomp listener,
  // 5 channel, and the detached tmpfs its late masks come from (deny-read is configured).
  // Until init's execve has closed the close-on-exec fds of the manager's copy, and init has
  // made its mask source, the table is in flux: wait for it to settle (while init makes the
  // source, its seventh fd is the fscontext that becomes it, not yet the mount).
  std::vector<std::string> fds;
  auto settled = [&] {
    std::error_code ec;
    fds = fds_of(a.pid());
    return fds.size() == 7 &&
           fs::read_symlink("/proc/" + std::to_string(a.pid()) + "/fd/" + fds[6], ec).string() != "anon_inode:[fscontext]";
  };
  REQUIRE(f.run_until(settled, std::chrono::seconds{5}));
  CHECK(std::vector<std::string>(fds.begin(), fds.begin() + 6) == std::vector<std::string>{"0", "1", "2", "3", "4", "5"});
  CHECK(fs::read_symlink("/proc/" + std::to_string(a.pid()) + "/fd/" + fds[6]) == "/");
  a.terminate();
  REQUIRE(f.wait_finished(a));
}

TEST_CASE("terminate reaches the command through init, and SIGKILL to init ends the sandbox") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  // Pipes: terminate sends SIGTERM (a tty session gets SIGHUP first, as unsandboxed).
  auto req = request({"/bin/sleep", "100"}, false);
  req.cwd = s.ws();
  auto& a = start_in(f, req, namespaces());
  f.run_for(std::chrono::milliseconds{50});
  a.terminate();
  REQUIRE(f.wait_finished(a));
  CHECK(a.verdict()->status.signal == SIGTERM);  // forwarded: the command died of it

  req.tty = true;
  auto& t = start_in(f, req, namespaces());
  f.run_for(std::chrono::milliseconds{50});
  t.terminate();
  REQUIRE(f.wait_finished(t));
  CHECK(t.verdict()->status.signal == SIGHUP);

  // A command that ignores SIGTERM is killed by the escalation (SIGKILL to init).
  req.tty = false;
  req.argv = {"/bin/sh", "-c", "trap '' TERM; echo ready; sleep 100"};
  auto& b = start_in(f, req, namespaces());
  REQUIRE(f.wait_output(b, "ready"));
  b.terminate(std::chrono::milliseconds{100});
  REQUIRE(f.wait_finished(b));
  CHECK(b.verdict()->status.signal == SIGKILL);
}

TEST_CASE("containment: setsid and double-fork escapees die with a sandboxed session") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  const std::string marker = "1234.5" + std::to_string(::getpid() % 1000);
  auto req = request({"/bin/sh", "-c",
                      "setsid sleep " + marker + " & (sh -c 'sleep " + marker + " &' &); sleep 0.2; echo started"},
                     false);
  req.cwd = s.ws();
  auto& a = start_in(f, req, namespaces());
  REQUIRE(f.wait_finished(a));
  CHECK(all_output(a).find("started") != std::string::npos);
  CHECK(a.verdict()->status.code == 0);
  // The command exited; init exited with it; the kernel killed the rest of the namespace.
  CHECK(f.run_until([&] { return processes_with(marker).empty(); }, std::chrono::seconds{5}));
}

TEST_CASE("a denied write is a SandboxDenied verdict; the same write unsandboxed is not") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  auto req = request({"/usr/bin/touch", s.outside()}, false);
  req.cwd = s.ws();
  auto& a = start_in(f, req, namespaces());
  REQUIRE(f.wait_finished(a));
  CHECK(a.verdict()->status.code == 1);
  REQUIRE(a.verdict()->sandbox_denied());
  CHECK(a.verdict()->denial->detail.find("read-only file system") != std::string::npos);
  CHECK_FALSE(fs::exists(s.outside()));

  auto& b = f.start(req);
  REQUIRE(f.wait_finished(b));
  CHECK(b.verdict()->status.code == 0);
  CHECK_FALSE(b.verdict()->sandbox_denied());
  CHECK(fs::exists(s.outside()));
}

TEST_CASE("seccomp denials arrive as executor records from init, counted, even on exit 0") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  // python is not everywhere; unshare(1) is (util-linux): two denied unshare calls, exit 0.
  auto req = request({"/bin/sh", "-c", "unshare -U true; unshare -U true; exit 0"}, false);
  req.cwd = s.ws();
  auto& a = start_in(f, req, namespaces());
  REQUIRE(f.wait_finished(a));
  CHECK(a.verdict()->status.code == 0);
  CHECK_FALSE(a.verdict()->sandbox_denied());  // exit 0 never counts…
  REQUIRE(a.denial_log());
  REQUIRE(a.denial_log()->records.size() == 1);  // …but the records are kept
  CHECK(a.denial_log()->records[0].source == "seccomp");
  CHECK(a.denial_log()->records[0].kind == "namespace");
  CHECK(a.denial_log()->records[0].detail == "unshare x2");

  // On a failing exit the record is the verdict's evidence, even for exit 127-like codes.
  req.argv = {"/bin/sh", "-c", "unshare -U true; exit 2"};
  auto& b = start_in(f, req, namespaces());
  REQUIRE(f.wait_finished(b));
  REQUIRE(b.verdict()->sandbox_denied());
  CHECK(b.verdict()->denial->source == policy::DenialSource::kExecutor);
  CHECK(b.verdict()->denial->describe() == "executor: seccomp unshare");
}

TEST_CASE("deny-read files that appear after launch are masked: by the host, by the sandbox, in new dirs") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  auto p = policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite);
  p.deny_read = {"*.env", "**/*.pem"};
  // The host writes late.env after the session started; the sandbox waits for it, then reads.
  auto req = request({"/bin/sh", "-c",
                      "while [ ! -e late.env ]; do sleep 0.01; done; sleep 0.1; cat late.env; echo rc=$?"},
                     false);
  req.cwd = s.ws();
  auto& a = start_in(f, req, namespaces(p));
  f.run_for(std::chrono::milliseconds{100});
  std::ofstream(s.ws() + "/late.env") << "TOKEN=hunter2\n";
  REQUIRE(f.wait_finished(a));
  CHECK(all_output(a).find("hunter2") == std::string::npos);
  CHECK(all_output(a).find("Permission denied") != std::string::npos);

  // Written by the sandbox itself, and inside directories made after launch.
  req.argv = {"/bin/sh", "-c",
              "echo own > own.env; mkdir -p a/b; echo key > a/b/k.pem; sleep 0.2; "
              "cat own.env; cat a/b/k.pem; echo done"};
  auto& b = start_in(f, req, namespaces(p));
  REQUIRE(f.wait_finished(b));
  std::string out = all_output(b);
  CHECK(out.find("done") != std::string::npos);
  CHECK(out.find("own\n") == std::string::npos);
  CHECK(out.find("key\n") == std::string::npos);
  CHECK(out.find("own.env: Permission denied") != std::string::npos);
  CHECK(out.find("k.pem: Permission denied") != std::string::npos);
  // On the host the files are what the sandbox wrote: masks live only in its view.
  std::ifstream own(s.ws() + "/own.env");
  std::string line;
  std::getline(own, line);
  CHECK(line == "own");
}

TEST_CASE("deny-read globs under missing directories: watched along their path, not the whole tree") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  auto p = policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite);
  // The nearest existing ancestor of the first is "/": walking all of it (/proc included)
  // used to refuse the session (deny_read_index_unavailable).
  p.deny_read = {"/uexec-missing-" + std::to_string(::getpid()) + "/**/*.pem", s.ws() + "/later/sub/*.pem"};
  auto req = request({"/bin/sh", "-c", "mkdir -p later/sub; echo key > later/sub/k.pem; sleep 0.2; "
                                       "cat later/sub/k.pem; echo done"},
                     false);
  req.cwd = s.ws();
  auto& a = start_in(f, req, namespaces(p));
  REQUIRE(f.wait_finished(a));
  std::string out = all_output(a);
  CHECK(out.find("done") != std::string::npos);
  CHECK(out.find("key\n") == std::string::npos);
  CHECK(out.find("k.pem: Permission denied") != std::string::npos);
}

TEST_CASE("a private /tmp keeps a workspace that lives under /tmp, and nothing else of the host's") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  char tmpl[] = "/tmp/uexec-sbx-private-XXXXXX";
  std::string ws = ::mkdtemp(tmpl);
  std::ofstream(ws + "/../uexec-sbx-neighbour-" + std::to_string(::getpid())) << "host";
  auto p = policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite);
  p.slash_tmp = policy::TmpPolicy::kPrivate;
  auto req = request({"/bin/sh", "-c", "touch made && echo wrote; ls /tmp | wc -l"}, false);
  req.cwd = ws;
  auto& a = start_in(f, req, namespaces(p));
  REQUIRE(f.wait_finished(a));
  CHECK(a.verdict()->status.code == 0);
  CHECK(all_output(a).find("wrote") != std::string::npos);
  CHECK(all_output(a).find("\n1\n") != std::string::npos);  // /tmp holds only the workspace's path
  CHECK(fs::exists(ws + "/made"));
  fs::remove_all(ws);
  fs::remove("/tmp/uexec-sbx-neighbour-" + std::to_string(::getpid()));
}

TEST_CASE("policy errors fail the spawn and name the cause; nothing runs unsandboxed") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  fs::create_directory_symlink(s.ws(), s.root / "link");
  auto p = policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite);
  auto req = request({"/usr/bin/touch", s.ws() + "/ran"}, false);
  req.cwd = (s.root / "link").string();
  auto id = f.pm->start(req, namespaces(p));
  REQUIRE_FALSE(id);
  CHECK(id.error().code == base::Errc::kPolicy);
  CHECK(id.error().context.find("SymlinkedRoot") != std::string::npos);
  CHECK_FALSE(fs::exists(s.ws() + "/ran"));

  // The Landlock-only backend refuses deny-read instead of dropping it.
  p.deny_read = {"*.env"};
  auto ll = policy::SandboxAttempt::select(p, policy::Backend::kLandlock);
  REQUIRE(ll);
  req.cwd = s.ws();
  auto id2 = f.pm->start(req, *ll);
  REQUIRE_FALSE(id2);
  CHECK(id2.error().context.find("PolicyNotExpressible") != std::string::npos);
}

TEST_CASE("100 sandboxed spawns leave no zombie, no extra fd and no stub behind") {
  if (!have_namespaces()) return;
  Scratch s;
  int fds_before;
  {
    ManagerFixture f;
    auto req = request({"/bin/true"});
    req.cwd = s.ws();
    auto& warm = start_in(f, req, namespaces());
    REQUIRE(f.wait_finished(warm));
    f.pm->remove(warm.id());
    f.run_for(std::chrono::milliseconds{5});
    fds_before = count_open_fds();
    for (int i = 0; i < 100; ++i) {
      req.tty = i % 2 == 0;
      auto& a = start_in(f, req, namespaces());
      REQUIRE(f.wait_finished(a));
      CHECK(a.verdict()->status.code == 0);
      f.pm->remove(a.id());
    }
    f.run_for(std::chrono::milliseconds{5});
    CHECK(count_zombie_children() == 0);
    CHECK(count_open_fds() == fds_before);
  }
  CHECK(fs::is_empty(s.ws()));  // the .codex/.uexec/… stubs went with their last session

  // A stub left behind by a manager that died (it carries uexec's mark) goes with the next
  // session; a directory of the user's with the same name stays.
  fs::create_directory(s.ws() + "/.codex");
  ::setxattr((s.ws() + "/.codex").c_str(), "user.uexec.stub", "1", 1, 0);
  fs::create_directory(s.ws() + "/.agents");
  {
    ManagerFixture f;
    auto req = request({"/bin/true"});
    req.cwd = s.ws();
    auto& a = start_in(f, req, namespaces());
    REQUIRE(f.wait_finished(a));
    f.pm->remove(a.id());
    f.run_for(std::chrono::milliseconds{5});
  }
  CHECK_FALSE(fs::exists(s.ws() + "/.codex"));
  CHECK(fs::exists(s.ws() + "/.agents"));
}

TEST_CASE("orchestrator with a real runner: on-failure retries a denied write once, unsandboxed") {
  if (!have_namespaces()) return;
  ManagerFixture f;
  Scratch s;
  std::vector<std::string> asked;
  policy::ToolOrchestrator orch([&](const policy::ApprovalRequest& r, std::function<void(policy::Decision)> answer) {
    asked.push_back(r.purpose);
    REQUIRE(r.denial);
    answer(policy::Decision::kApproved);
  });
  policy::ToolCall call;
  call.argv = {"/usr/bin/touch", s.outside()};
  call.cwd = s.ws();
  call.profile = policy::PermissionProfile::for_mode(policy::SandboxMode::kWorkspaceWrite);
  call.backend = policy::Backend::kNamespaces;
  call.policy = policy::ApprovalPolicy::kOnFailure;
  std::optional<policy::CallResult> result;
  auto runner = [&](const policy::SandboxAttempt& a, std::function<void(policy::AttemptOutcome)> done) {
    auto req = request(call.argv, false);
    req.cwd = call.cwd;
    auto id = f.pm->start(req, a);
    REQUIRE(id);
    session::Session* sess = f.pm->find(*id);
    // Poll for the verdict on the loop (as a front door would, from its exit notification).
    auto check = std::make_shared<std::function<void()>>();
    REQUIRE(f.run_until([&] { return sess->finished(); }));
    policy::AttemptOutcome o;
    o.exit_code = sess->verdict()->status.shell_code();
    if (sess->verdict()->sandbox_denied()) {
      o.kind = policy::AttemptOutcome::Kind::kDenied;
      o.denial = sess->verdict()->denial;
    }
    done(o);
  };
  orch.run(call, runner, [&](policy::CallResult r) { result = r; });
  REQUIRE(result);
  CHECK(result->kind == policy::CallResult::Kind::kCompleted);
  CHECK(result->attempts == 2);
  CHECK(result->sandbox == "none");
  CHECK(asked == std::vector<std::string>{"sandbox_retry"});
  CHECK(fs::exists(s.outside()));
}
