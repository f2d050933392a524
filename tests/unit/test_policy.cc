// Policy layer, pure parts: the denial predicates (Codex's and ours), globs, profile
// resolution against a real scratch tree, and the bwrap argv goldens.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "helpers/golden.h"
#include "policy/bwrap.h"
#include "policy/denial.h"
#include "policy/profile.h"
#include "policy/sandbox_attempt.h"

using namespace uexec::policy;
using uexec::test::check_golden;
namespace fs = std::filesystem;

namespace {


ExecOutput out(int code, std::string err = "", std::string so = "", std::string agg = "") {
  return ExecOutput{code, std::move(so), std::move(err), std::move(agg)};
}

// A scratch directory removed at the end of the test.
struct Scratch {
  fs::path root;
  Scratch() {
    char tmpl[] = "/var/tmp/uexec-policy-XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  ~Scratch() { fs::remove_all(root); }
  std::string operator/(const std::string& rel) const { return (root / rel).string(); }
};

}  // namespace

TEST_CASE("is_likely_sandbox_denied mirrors Codex's cases") {
  SUBCASE("no keyword: not denied") { CHECK_FALSE(is_likely_sandbox_denied(true, true, out(1, "boom"))); }
  SUBCASE("a keyword in stderr") {
    CHECK(is_likely_sandbox_denied(true, true, out(1, "touch: cannot touch 'x': Read-only file system")));
    CHECK(is_likely_sandbox_denied(true, false, out(1, "Operation not permitted")));
    CHECK(is_likely_sandbox_denied(true, true, out(1, "error: Failed to write file /etc/x")));
  }
  SUBCASE("quick-reject codes do not reject a keyword (Codex's order)") {
    CHECK(is_likely_sandbox_denied(true, true, out(127, "sh: 1: x: Permission denied")));
    CHECK_FALSE(is_likely_sandbox_denied(true, true, out(2, "usage")));
    CHECK_FALSE(is_likely_sandbox_denied(true, true, out(126, "cannot execute")));
    CHECK_FALSE(is_likely_sandbox_denied(true, true, out(127, "not found")));
  }
  SUBCASE("SandboxType None never denies") {
    CHECK_FALSE(is_likely_sandbox_denied(false, false, out(1, "Permission denied")));
  }
  SUBCASE("exit 0 never denies") { CHECK_FALSE(is_likely_sandbox_denied(true, true, out(0, "Permission denied"))); }
  SUBCASE("the aggregated output is scanned too") {
    CHECK(is_likely_sandbox_denied(true, true, out(1, "", "", "mkdir: Read-only file system")));
    CHECK(is_likely_sandbox_denied(true, true, out(1, "", "landlock says no")));
  }
  SUBCASE("SIGSYS under a Linux seccomp kind") {
    CHECK(is_likely_sandbox_denied(true, true, out(128 + SIGSYS)));
    CHECK_FALSE(is_likely_sandbox_denied(true, false, out(128 + SIGSYS)));
  }
}

TEST_CASE("classify_exit: uexec's narrowing of the predicate") {
  using uexec::pty::ExitStatus;
  ExitStatus fail{1, 0, false};
  SUBCASE("tool names are not words: ./sandbox/main.c and sandbox-exec never match") {
    CHECK_FALSE(classify_exit(fail, nullptr, "./sandbox/main.c: syntax error", true, true));
    CHECK_FALSE(classify_exit(fail, nullptr, "see sandbox-exec(1)", true, true));
    CHECK(classify_exit(fail, nullptr, "blocked by the sandbox: write denied", true, true));
    CHECK(classify_exit(fail, nullptr, "seccomp killed it", true, true));
  }
  SUBCASE("quick reject comes before the keyword scan") {
    CHECK_FALSE(classify_exit(ExitStatus{127, 0, false}, nullptr, "Permission denied", true, true));
    CHECK_FALSE(classify_exit(ExitStatus{2, 0, false}, nullptr, "Operation not permitted", true, true));
  }
  SUBCASE("EBUSY and EXDEV texts count only with a mount view") {
    CHECK(classify_exit(fail, nullptr, "mv: Device or resource busy", true, true));
    CHECK_FALSE(classify_exit(fail, nullptr, "mv: Device or resource busy", true, false));
    CHECK(classify_exit(fail, nullptr, "ln: Invalid cross-device link", false, true));
    CHECK_FALSE(classify_exit(fail, nullptr, "ln: Invalid cross-device link", false, false));
  }
  SUBCASE("executor records count on any non-zero exit, even 127; never on exit 0") {
    DenialLog log;
    log.records.push_back({"seccomp", "network", "socket(AF_INET)"});
    auto d = classify_exit(ExitStatus{127, 0, false}, &log, "", true, true);
    REQUIRE(d);
    CHECK(d->source == DenialSource::kExecutor);
    CHECK(d->describe() == "executor: seccomp socket(AF_INET)");
    CHECK_FALSE(classify_exit(ExitStatus{0, 0, false}, &log, "", true, true));
  }
  SUBCASE("SIGSYS is evidence under seccomp") {
    auto d = classify_exit(ExitStatus{0, SIGSYS, false}, nullptr, "", true, false);
    REQUIRE(d);
    CHECK(d->mechanism == "seccomp");
    CHECK_FALSE(classify_exit(ExitStatus{0, SIGSYS, false}, nullptr, "", false, false));
  }
}

TEST_CASE("finalize_exec_result: timeout first; an ordinary failure stays ordinary") {
  using uexec::pty::ExitStatus;
  auto t = finalize_exec_result(ExitStatus{1, 0, false}, true, true, nullptr, "Permission denied", true, true);
  CHECK(t.kind == FinalKind::kTimeout);
  CHECK_FALSE(t.denial);
  auto d = finalize_exec_result(ExitStatus{1, 0, false}, false, true, nullptr, "touch: Read-only file system", true, true);
  CHECK(d.kind == FinalKind::kDenied);
  CHECK(d.exit_code == 1);
  auto o = finalize_exec_result(ExitStatus{3, 0, false}, false, true, nullptr, "make: *** [all] Error 3", true, true);
  CHECK(o.kind == FinalKind::kCompleted);
  CHECK(o.exit_code == 3);
  auto u = finalize_exec_result(ExitStatus{1, 0, false}, false, false, nullptr, "Permission denied", false, false);
  CHECK(u.kind == FinalKind::kCompleted);
  auto z = finalize_exec_result(ExitStatus{0, 0, false}, false, true, nullptr, "Permission denied", true, true);
  CHECK(z.kind == FinalKind::kCompleted);
}

TEST_CASE("seatbelt requested on Linux is a clear SeatbeltUnavailable, never a silent None") {
  auto a = SandboxAttempt::select(PermissionProfile::for_mode(SandboxMode::kWorkspaceWrite), Backend::kSeatbelt);
  REQUIRE(a);
  CHECK(a->kind() == SandboxKind::kMacosSeatbelt);
  ExecRequest req;
  req.argv = {"/bin/true"};
  req.cwd = "/";
  auto spec = a->env_for(req);
  REQUIRE_FALSE(spec);
  CHECK(spec.error().code == uexec::base::Errc::kPolicy);
  CHECK(spec.error().context.rfind("SeatbeltUnavailable", 0) == 0);
}

TEST_CASE("env markers describe the sandbox that runs; inherited ones never survive") {
  ExecRequest req;
  req.argv = {"/bin/true"};
  req.cwd = "/";
  req.env = std::vector<std::string>{"PATH=/bin", "UEXEC_SANDBOX=linux-ns", "CODEX_SANDBOX=seatbelt",
                                     "CODEX_SANDBOX_NETWORK_DISABLED=1"};
  auto none = SandboxAttempt::none().env_for(req);
  REQUIRE(none);
  CHECK(none->env == std::vector<std::string>{"PATH=/bin"});
  auto full = SandboxAttempt::select(PermissionProfile::for_mode(SandboxMode::kDangerFullAccess));
  REQUIRE(full);
  CHECK(full->kind() == SandboxKind::kNone);  // nothing to enforce: no wrapper at all
}

TEST_CASE("glob_match: components, '**' at any depth") {
  CHECK(glob_match("/w/*.env", "/w/secret.env"));
  CHECK_FALSE(glob_match("/w/*.env", "/w/sub/secret.env"));
  CHECK(glob_match("/w/**/*.env", "/w/secret.env"));
  CHECK(glob_match("/w/**/*.env", "/w/a/b/c.env"));
  CHECK(glob_match("/w/**/id_?sa", "/w/x/id_rsa"));
  CHECK(glob_match("/w/[ab].key", "/w/a.key"));
  CHECK_FALSE(glob_match("/w/[ab].key", "/w/c.key"));
  CHECK(glob_match("/w/.env*", "/w/.env.local"));
}

TEST_CASE("glob_match: '**' edge cases, and many of them (was exponential, fuzz_policy)") {
  CHECK(glob_match("/**", "/"));
  CHECK(glob_match("/**", "/a/b"));
  CHECK(glob_match("**", ""));
  CHECK(glob_match("/a/**", "/a"));  // zero components
  CHECK_FALSE(glob_match("/a/**/b", "/a/c"));
  CHECK(glob_match("/a/**/**/b", "/a/b"));
  CHECK(glob_match("/a/**/x/**/y", "/a/1/x/2/3/y"));
  CHECK_FALSE(glob_match("/a/**/x/**/y", "/a/1/y/2/3/x"));
  CHECK(glob_match("/**/a/*/b", "/q/a/z/b"));
  CHECK_FALSE(glob_match("/**/a/*/b", "/q/a/b"));
  CHECK(glob_match("/a/x**y/c", "/a/xqqy/c"));  // '**' inside a component is fnmatch's '*'
  CHECK_FALSE(glob_match("/a/x**y/c", "/a/x/y/c"));
  CHECK_FALSE(glob_match("/a", "/a/b"));
  CHECK_FALSE(glob_match("/a/b", "/a"));
  // fuzz/regressions/fuzz_policy/glob-double-star-exponential: 13 '**' before a component
  // that never matches, against 40 components. Trying every split of every '**' took
  // about 40^13 steps; the answer is all this test asserts.
  std::string pattern, path;
  for (int i = 0; i < 13; ++i) pattern += "/**";
  pattern += "/x";
  for (int i = 0; i < 40; ++i) path += "/a";
  CHECK_FALSE(glob_match(pattern, path));
  CHECK(glob_match(pattern, path + "/x"));
  std::string many;
  for (int i = 0; i < 200; ++i) many += "/**/a";
  CHECK_FALSE(glob_match(many + "/b", path + path + path + path + path));
  CHECK(glob_match(many, std::string(path + path + path + path + path).substr(0, 400)));
}

TEST_CASE("glob_may_match_below: where the deny-read watcher descends") {
  CHECK(glob_may_match_below("/a/*/x.pem", "/"));
  CHECK(glob_may_match_below("/a/*/x.pem", "/a"));
  CHECK(glob_may_match_below("/a/*/x.pem", "/a/b"));
  CHECK_FALSE(glob_may_match_below("/a/*/x.pem", "/c"));
  CHECK_FALSE(glob_may_match_below("/a/*/x.pem", "/a/b/x.pem"));  // a match itself, nothing below
  CHECK_FALSE(glob_may_match_below("/a/*/x.pem", "/a/b/c"));
  CHECK(glob_may_match_below("/missing/**/*.pem", "/"));
  CHECK_FALSE(glob_may_match_below("/missing/**/*.pem", "/proc"));
  CHECK(glob_may_match_below("/missing/**/*.pem", "/missing/x/y/z"));
  CHECK(glob_may_match_below("/**", "/proc/1"));
  CHECK_FALSE(glob_may_match_below("/a/b", "/a/b"));
}

TEST_CASE("ssh_agent_dirs: a kept listing never hides a directory made later") {
  Scratch s;
  const std::string tmp = s.root.string();
  auto sorted = [&](const char* dir) {
    auto v = ssh_agent_dirs(dir);
    std::sort(v.begin(), v.end());
    return v;
  };
  using V = std::vector<std::string>;
  fs::create_directory(s / "ssh-one");
  fs::create_directory(s / "other");
  CHECK(sorted(tmp.c_str()) == V{s / "ssh-one"});
  CHECK(sorted(tmp.c_str()) == V{s / "ssh-one"});  // kept
  fs::create_directory(s / "ssh-two");              // made after the listing
  CHECK(sorted(tmp.c_str()) == V{s / "ssh-one", s / "ssh-two"});
  fs::create_directory(s / "elsewhere");
  fs::rename(s / "elsewhere", s / "ssh-three");     // moved in
  CHECK(sorted(tmp.c_str()) == V{s / "ssh-one", s / "ssh-three", s / "ssh-two"});
  // The directory itself replaced: another inode at the same path is listed afresh.
  fs::rename(s.root, tmp + ".old");
  fs::create_directory(s.root);
  fs::create_directory(s / "ssh-four");
  CHECK(sorted(tmp.c_str()) == V{s / "ssh-four"});
  fs::remove_all(tmp + ".old");
  // Deleted and made again (the watch is gone with it): still right.
  fs::remove_all(s.root);
  fs::create_directory(s.root);
  CHECK(sorted(tmp.c_str()).empty());
  fs::create_directory(s / "ssh-five");
  CHECK(sorted(tmp.c_str()) == V{s / "ssh-five"});
  CHECK(ssh_agent_dirs((s / "missing").c_str()).empty());
}

TEST_CASE("canonical_root refuses symlinked and missing roots") {
  Scratch s;
  fs::create_directories(s / "real/sub");
  fs::create_directory_symlink(s / "real", s / "link");
  auto ok = canonical_root(s / "real/./sub/../sub", "/");
  REQUIRE(ok);
  CHECK(*ok == s / "real/sub");
  auto linked = canonical_root(s / "link/sub", "/");
  REQUIRE_FALSE(linked);
  CHECK(linked.error().code == uexec::base::Errc::kPolicy);
  CHECK(linked.error().context.find("SymlinkedRoot") == 0);
  auto missing = canonical_root(s / "nope", "/");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().context.find("MissingRoot") == 0);
  // Relative roots resolve against the base.
  auto rel = canonical_root("sub", s / "real");
  REQUIRE(rel);
  CHECK(*rel == s / "real/sub");
}

TEST_CASE("resolve: deny-read globs at any depth, through symlinked directories, with every hard link") {
  Scratch s;
  fs::path ws = s.root / "ws";
  std::string deep = "ws";
  for (int i = 0; i < 24; ++i) deep += "/d" + std::to_string(i);
  fs::create_directories(s / deep);
  std::ofstream(s / (deep + "/k.pem")) << "x";
  fs::create_directories(s / "outside");
  std::ofstream(s / "outside/o.pem") << "x";
  std::ofstream(s / "outside/plain.txt") << "x";
  fs::create_directory_symlink(s / "outside", ws / "linkout");
  fs::create_directory_symlink(".", ws / "loop");  // a cycle: the walk must end
  fs::create_symlink(s / "outside/plain.txt", ws / "alias.pem");
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  auto p = PermissionProfile::for_mode(SandboxMode::kWorkspaceWrite);
  p.deny_read = {"**/*.pem"};
  auto r = resolve(p, ResolveInput{ws.string(), {"HOME=/nonexistent"}, {}, false});
  REQUIRE(r);
  CHECK(has(r->deny_files, s / (deep + "/k.pem")));     // 24 directories down
  CHECK(has(r->deny_files, s / "outside/o.pem"));       // through linkout, at its real path
  CHECK(has(r->deny_files, s / "outside/plain.txt"));   // a matching link masks its target
  CHECK_FALSE(has(r->deny_files, (ws / "alias.pem").string()));

  SUBCASE("the other names of a hard-linked match under the cwd are masked too") {
    fs::create_hard_link(s / (deep + "/k.pem"), ws / "notes.txt");
    auto h = resolve(p, ResolveInput{ws.string(), {"HOME=/nonexistent"}, {}, false});
    REQUIRE(h);
    CHECK(has(h->deny_files, (ws / "notes.txt").string()));
  }
  SUBCASE("a hard link outside the writable roots and the cwd refuses the policy") {
    fs::create_directories(s / "far");
    fs::create_hard_link(s / (deep + "/k.pem"), s / "far/copy.txt");
    auto h = resolve(p, ResolveInput{ws.string(), {"HOME=/nonexistent"}, {}, false});
    REQUIRE_FALSE(h);
    CHECK(h.error().context.find("deny_read_hard_link") != std::string::npos);
  }
}

TEST_CASE("resolve: carve-outs, stubs, gitdir files, deny-read globs") {
  Scratch s;
  fs::create_directories(s / "ws/.git");
  fs::create_directories(s / "ws/sub");
  fs::create_directories(s / "wt");
  fs::create_directories(s / "main.git/worktrees/wt");
  std::ofstream(s / "wt/.git") << "gitdir: ../main.git/worktrees/wt\n";
  std::ofstream(s / "main.git/worktrees/wt/commondir") << "../..\n";
  std::ofstream(s / "ws/secret.env") << "x";
  std::ofstream(s / "ws/sub/deep.env") << "x";
  std::ofstream(s / "ws/keep.txt") << "x";

  auto p = PermissionProfile::for_mode(SandboxMode::kWorkspaceWrite);
  p.writable_roots = {s / "wt"};
  p.deny_read = {"**/*.env"};
  auto r = resolve(p, ResolveInput{s / "ws", {"HOME=/nonexistent"}, {}});
  REQUIRE(r);
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  CHECK(has(r->writable, s / "ws"));
  CHECK(has(r->writable, s / "wt"));
  CHECK(has(r->writable, "/tmp"));
  CHECK(has(r->read_only, s / "ws/.git"));
  CHECK(has(r->stubs, s / "ws/.codex"));
  CHECK(has(r->stubs, s / "ws/.uexec"));
  CHECK_FALSE(has(r->stubs, "/tmp/.codex"));  // no stubs in /tmp
  // The worktree's .git file, its gitdir and the common dir it names are read-only.
  CHECK(has(r->read_only, s / "wt/.git"));
  CHECK(has(r->read_only, s / "main.git/worktrees/wt"));
  CHECK(has(r->read_only, s / "main.git"));
  CHECK(has(r->deny_files, s / "ws/secret.env"));
  CHECK(has(r->deny_files, s / "ws/sub/deep.env"));
  CHECK_FALSE(has(r->deny_files, s / "ws/keep.txt"));
  CHECK_FALSE(r->network);

  SUBCASE("a protected name that is a symlink is refused") {
    fs::create_directory_symlink(s / "ws/sub", s / "ws/.codex");
    auto bad = resolve(p, ResolveInput{s / "ws", {}, {}});
    REQUIRE_FALSE(bad);
    CHECK(bad.error().context.find("SymlinkedCarveOut") == 0);
  }
  SUBCASE("read-only mode has no writable roots and no /tmp") {
    auto ro = resolve(PermissionProfile::for_mode(SandboxMode::kReadOnly), ResolveInput{s / "ws", {}, {}});
    REQUIRE(ro);
    CHECK(ro->writable.empty());
    CHECK(ro->stubs.empty());
  }
  SUBCASE("danger-full-access with deny entries writes everywhere but still masks") {
    auto full = PermissionProfile::for_mode(SandboxMode::kDangerFullAccess);
    CHECK(full.unrestricted());
    full.deny_read = {"*.env"};
    CHECK_FALSE(full.unrestricted());
    auto fr = resolve(full, ResolveInput{s / "ws", {}, {}});
    REQUIRE(fr);
    CHECK(fr->full_write);
    CHECK(has(fr->deny_files, s / "ws/secret.env"));
  }
}

namespace {

// A fixed policy for the goldens: no file system behind it, so the argv never drifts.
ResolvedPolicy golden_policy() {
  ResolvedPolicy p;
  p.writable = {"/home/u/proj", "/tmp"};
  p.read_only = {"/home/u/proj/.git"};
  return p;
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += a + "\n";
  return s;
}

BwrapInput golden_input() {
  BwrapInput in;
  in.cwd = "/home/u/proj";
  in.mask_file = "/run/user/1000/uexec/mask-empty";
  in.command = {"bash", "-lc", "make test"};
  return in;
}

}  // namespace

TEST_CASE("bwrap argv goldens") {
  SUBCASE("read-only") {
    ResolvedPolicy p;
    check_golden("../policy/golden/bwrap/read-only.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("workspace-write") { check_golden("../policy/golden/bwrap/workspace-write.argv", lines(bwrap_argv(golden_policy(), golden_input()))); }
  SUBCASE("network on") {
    auto p = golden_policy();
    p.network = true;
    check_golden("../policy/golden/bwrap/network-on.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("deny-read") {
    auto p = golden_policy();
    p.deny_files = {"/home/u/proj/.env"};
    p.deny_dirs = {"/home/u/proj/secrets"};
    check_golden("../policy/golden/bwrap/deny-read.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("missing stubs") {
    auto p = golden_policy();
    p.stubs = {"/home/u/proj/.agents", "/home/u/proj/.codex", "/home/u/proj/.uexec"};
    check_golden("../policy/golden/bwrap/missing-stubs.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("private tmp") {
    auto p = golden_policy();
    p.writable = {"/home/u/proj"};
    p.private_tmp = true;
    check_golden("../policy/golden/bwrap/private-tmp.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("hidden sockets") {
    auto p = golden_policy();
    p.hide_dirs = {"/run/user/1000"};
    p.hide_files = {"/run/dbus/system_bus_socket", "/run/docker.sock"};
    check_golden("../policy/golden/bwrap/hidden-sockets.argv", lines(bwrap_argv(p, golden_input())));
  }
}
