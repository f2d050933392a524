// Policy layer, pure parts: the denial predicates (Codex's and ours), globs, profile
// resolution against a real scratch tree, and the bwrap argv goldens.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
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
#include "policy/control_registry.h"
#include "policy/denial.h"
#include "policy/glob.h"
#include "policy/hidden_paths.h"
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

TEST_CASE("resolve refuses a path with a NUL byte (fuzz_policy: \"\\0~/.ssh/**\" masked the whole cwd)") {
  Scratch s;
  fs::create_directories(s / "ws/src");
  auto p = PermissionProfile::for_mode(SandboxMode::kWorkspaceWrite);
  p.deny_read = {std::string("\0~/.ssh/**", 10)};
  auto r = resolve(p, ResolveInput{s / "ws", {"HOME=/nonexistent"}, {}, false});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == uexec::base::Errc::kInvalidArgument);
  CHECK(r.error().context.find("deny-read entry contains a NUL byte") != std::string::npos);
  p.deny_read.clear();
  p.writable_roots = {std::string("/tmp\0/etc", 9)};
  auto w = resolve(p, ResolveInput{s / "ws", {"HOME=/nonexistent"}, {}, false});
  REQUIRE_FALSE(w);
  CHECK(w.error().context.find("writable root entry contains a NUL byte (after \"/tmp\")") != std::string::npos);
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
  auto r = resolve(p, ResolveInput{s / "ws", {"HOME=/nonexistent"}, {}, true, {}});
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
    auto bad = resolve(p, ResolveInput{s / "ws", {}, {}, true, {}});
    REQUIRE_FALSE(bad);
    CHECK(bad.error().context.find("SymlinkedCarveOut") == 0);
  }
  SUBCASE("read-only mode has no writable roots and no /tmp") {
    auto ro = resolve(PermissionProfile::for_mode(SandboxMode::kReadOnly), ResolveInput{s / "ws", {}, {}, true, {}});
    REQUIRE(ro);
    CHECK(ro->writable.empty());
    CHECK(ro->stubs.empty());
  }
  SUBCASE("danger-full-access with deny entries writes everywhere but still masks") {
    auto full = PermissionProfile::for_mode(SandboxMode::kDangerFullAccess);
    CHECK(full.unrestricted());
    full.deny_read = {"*.env"};
    CHECK_FALSE(full.unrestricted());
    auto fr = resolve(full, ResolveInput{s / "ws", {}, {}, true, {}});
    REQUIRE(fr);
    CHECK(fr->full_write);
    CHECK(has(fr->deny_files, s / "ws/secret.env"));
  }
}

TEST_CASE("resolve: nested .git, gitdir targets in writable trees, and the pins that keep them in place") {
  Scratch s;
  fs::create_directories(s / "ws/.git");
  fs::create_directories(s / "ws/sub/.git/hooks");
  fs::create_directories(s / "ws/deep/er/repo/.git");
  fs::create_directories(s / "ws/modules/lib");
  fs::create_directories(s / "ws/lib");
  std::ofstream(s / "ws/lib/.git") << "gitdir: ../modules/lib\n";
  fs::create_directories(s / "ws/gone");
  std::ofstream(s / "ws/gone/.git") << "gitdir: ../store/gone\n";
  fs::create_directories(s / "ws/sub/.git/objects");  // never entered: no .git inside a .git is looked for
  fs::create_directories(s / "ws/sub/.git/objects/x/.git");
  auto p = PermissionProfile::for_mode(SandboxMode::kWorkspaceWrite);
  auto r = resolve(p, ResolveInput{s / "ws", {"HOME=/nonexistent"}, {}});
  REQUIRE(r);
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  CHECK(has(r->read_only, s / "ws/.git"));
  CHECK(has(r->read_only, s / "ws/sub/.git"));
  CHECK(has(r->read_only, s / "ws/deep/er/repo/.git"));
  CHECK(has(r->read_only, s / "ws/lib/.git"));
  CHECK(has(r->read_only, s / "ws/modules/lib"));
  CHECK(has(r->read_only, s / "ws/gone/.git"));
  CHECK_FALSE(has(r->read_only, s / "ws/sub/.git/objects/x/.git"));
  // A missing gitdir target in a writable root: its first missing component is a stub.
  CHECK(has(r->stubs, s / "ws/store"));
  // Every directory on the way to them, inside the root and outside any carve-out, is pinned.
  for (const char* d : {"ws/sub", "ws/deep", "ws/deep/er", "ws/deep/er/repo", "ws/modules", "ws/lib", "ws/gone"})
    CHECK_MESSAGE(has(r->pins, s / d), d);
  CHECK_FALSE(has(r->pins, s / "ws"));              // the root is a mount point already
  CHECK_FALSE(has(r->pins, s / "ws/modules/lib"));  // a carve-out, not a pin
  for (const auto& pin : r->pins) CHECK(path_within(pin, s / "ws"));

  SUBCASE("a gitdir reached through a symlink inside a writable root is refused") {
    fs::create_directory_symlink(s / "ws/modules", s / "ws/link");
    std::ofstream(s / "ws/lib/.git", std::ios::trunc) << "gitdir: ../link/lib\n";
    auto bad = resolve(p, ResolveInput{s / "ws", {}, {}});
    REQUIRE_FALSE(bad);
    CHECK(bad.error().context.find("SymlinkedCarveOut") == 0);
  }
  SUBCASE("a .git config that is a symlink into the workspace protects its target") {
    std::ofstream(s / "ws/cfg") << "[core]\n";
    fs::create_symlink("../../cfg", s / "ws/sub/.git/config");
    auto l = resolve(p, ResolveInput{s / "ws", {}, {}});
    REQUIRE(l);
    CHECK(has(l->read_only, s / "ws/cfg"));
  }
  SUBCASE("a nested .git that is a symlink is refused") {
    fs::create_directories(s / "ws/other");
    fs::create_directory_symlink(s / "ws/sub/.git", s / "ws/other/.git");
    auto bad = resolve(p, ResolveInput{s / "ws", {}, {}});
    REQUIRE_FALSE(bad);
    CHECK(bad.error().context.find("SymlinkedCarveOut") == 0);
  }
  SUBCASE("a writable root inside another pins the directories between them") {
    auto q = p;
    q.writable_roots = {s.root};
    auto n = resolve(q, ResolveInput{s / "ws/deep/er/repo", {}, {}});
    REQUIRE(n);
    CHECK(has(n->pins, s / "ws/deep"));
    CHECK(has(n->pins, s / "ws/deep/er"));
  }
}

TEST_CASE("resolve: the nested .git walk of a tree of 10 000 directories") {
  Scratch s;
  for (int i = 0; i < 100; ++i)
    for (int j = 0; j < 100; ++j) fs::create_directories(s / ("ws/d" + std::to_string(i) + "/e" + std::to_string(j)));
  fs::create_directories(s / "ws/d7/e7/.git");
  auto p = PermissionProfile::for_mode(SandboxMode::kWorkspaceWrite);
  auto r = resolve(p, ResolveInput{s / "ws", {}, {}});
  REQUIRE(r);
  CHECK(std::find(r->read_only.begin(), r->read_only.end(), s / "ws/d7/e7/.git") != r->read_only.end());
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
    check_golden("bwrap/read-only.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("workspace-write") { check_golden("bwrap/workspace-write.argv", lines(bwrap_argv(golden_policy(), golden_input()))); }
  SUBCASE("network on") {
    auto p = golden_policy();
    p.network = true;
    check_golden("bwrap/network-on.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("deny-read") {
    auto p = golden_policy();
    p.deny_files = {"/home/u/proj/.env"};
    p.deny_dirs = {"/home/u/proj/secrets"};
    check_golden("bwrap/deny-read.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("missing stubs") {
    auto p = golden_policy();
    p.stubs = {"/home/u/proj/.agents", "/home/u/proj/.codex", "/home/u/proj/.uexec"};
    check_golden("bwrap/missing-stubs.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("private tmp") {
    auto p = golden_policy();
    p.writable = {"/home/u/proj"};
    p.private_tmp = true;
    check_golden("bwrap/private-tmp.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("pins") {
    auto p = golden_policy();
    p.writable = {"/home/u/proj", "/home/u/proj/vendor/inner", "/tmp"};
    p.pins = {"/home/u/proj/modules", "/home/u/proj/vendor"};
    p.read_only = {"/home/u/proj/.git", "/home/u/proj/modules/lib"};
    check_golden("bwrap/pins.argv", lines(bwrap_argv(p, golden_input())));
  }
  SUBCASE("hidden sockets") {
    auto p = golden_policy();
    p.hide_dirs = {"/run/user/1000"};
    p.hide_files = {"/run/dbus/system_bus_socket", "/run/docker.sock"};
    check_golden("bwrap/hidden-sockets.argv", lines(bwrap_argv(p, golden_input())));
  }
}

TEST_CASE("control registry: an entry lives as long as its registration; stale ones are dropped") {
  Scratch s;
  std::string reg = (s.root / "reg").string();
  fs::create_directories(s.root / "ctl");
  fs::permissions(s.root / "ctl", fs::perms::owner_all);
  std::string sock = (s.root / "ctl" / "d.sock").string();
  std::ofstream(sock) << "";
  std::string token = (s.root / "tok").string();
  std::ofstream(token) << "t\n";
  {
    ControlPlane plane;
    plane.socket = sock;
    plane.token_files = {token};
    plane.tcp_ports = {8022};
    auto r = ControlRegistration::add(plane, reg);
    REQUIRE(r.has_value());
    CHECK((fs::status(reg).permissions() & fs::perms::all) == fs::perms::owner_all);
    auto live = live_control_planes(reg);
    REQUIRE(live.size() == 1);
    CHECK(live[0].pid == ::getpid());
    CHECK(live[0].socket == sock);
    CHECK(live[0].token_files == std::vector<std::string>{token});
    CHECK(live[0].tcp_ports == std::vector<int>{8022});
  }
  CHECK(live_control_planes(reg).empty());  // the registration went: so did its entry
  CHECK(fs::is_empty(reg));

  // A dead daemon's entry (removed), and one whose pid lives on with another start time.
  pid_t child = ::fork();
  if (child == 0) _exit(0);
  ::waitpid(child, nullptr, 0);
  std::ofstream(reg + "/" + std::to_string(child) + ".json") << "{\"pid\":" << child << ",\"start_time\":5}";
  std::ofstream(reg + "/" + std::to_string(::getpid()) + ".json") << "{\"pid\":" << ::getpid() << ",\"start_time\":1}";
  std::ofstream(reg + "/junk.json") << "not json";
  CHECK(live_control_planes(reg).empty());
  CHECK(!fs::exists(reg + "/" + std::to_string(child) + ".json"));
  CHECK(fs::exists(reg + "/" + std::to_string(::getpid()) + ".json"));  // skipped, left for its pid
}

TEST_CASE("resolve hides every registered control plane, even inside a writable root") {
  Scratch s;
  std::string reg = (s.root / "reg").string();
  fs::create_directories(s.root / "ws" / "ctl");
  fs::create_directories(s.root / "other");
  fs::permissions(s.root / "other", fs::perms::owner_all);
  std::string ws_sock = (s.root / "ws" / "ctl" / "a.sock").string();  // in the workspace
  std::string other_sock = (s.root / "other" / "b.sock").string();     // its own 0700 dir
  std::string ws_token = (s.root / "ws" / "tok").string();
  for (const auto& f : {ws_sock, other_sock, ws_token}) std::ofstream(f) << "";
  ControlPlane a, b;
  a.socket = ws_sock;
  a.token_files = {ws_token};
  b.socket = other_sock;
  auto ra = ControlRegistration::add(a, reg + "/a");
  REQUIRE(ra.has_value());
  auto rb = ControlRegistration::add(b, reg + "/b");  // two registries: one entry per pid each
  REQUIRE(rb.has_value());
  for (const char* sub : {"/a", "/b"}) {
    ResolveInput in;
    in.cwd = (s.root / "ws").string();
    in.registry_dir = reg + sub;
    auto r = resolve(PermissionProfile::for_mode(SandboxMode::kWorkspaceWrite), in);
    REQUIRE(r.has_value());
    auto has = [](const std::vector<std::string>& v, const std::string& x) {
      return std::find(v.begin(), v.end(), x) != v.end();
    };
    CHECK(has(r->hide_dirs, reg + sub));
    CHECK(has(r->control_plane, reg + sub));
    if (std::string(sub) == "/a") {
      CHECK(has(r->hide_files, ws_sock));   // the socket's dir is not 0700: the socket alone
      CHECK(has(r->hide_files, ws_token));  // a token inside the writable root
      CHECK(has(r->control_plane, ws_token));
    } else {
      CHECK(has(r->hide_dirs, (s.root / "other").string()));
      CHECK(!has(r->hide_files, other_sock));  // inside a hidden directory already
    }
  }
}

TEST_CASE("reachable_without_privilege: another user's 0700 directory on the way") {
  if (::geteuid() != 0) return;  // needs a directory of another user
  Scratch s;
  fs::create_directories(s.root / "theirs" / "deeper");
  REQUIRE(::chown((s.root / "theirs").c_str(), 65534, 65534) == 0);
  fs::permissions(s.root / "theirs", fs::perms::owner_all);
  CHECK(reachable_without_privilege((s.root / "theirs").string()));  // the entry itself: yes
  CHECK(!reachable_without_privilege((s.root / "theirs" / "deeper" / "t.sock").string()));
  fs::permissions(s.root / "theirs", fs::perms::owner_all | fs::perms::others_exec);
  CHECK(reachable_without_privilege((s.root / "theirs" / "deeper" / "t.sock").string()));
  REQUIRE(::chown((s.root / "theirs").c_str(), 0, 0) == 0);
  fs::permissions(s.root / "theirs", fs::perms::none);  // ours: we could chmod it back
  CHECK(reachable_without_privilege((s.root / "theirs" / "deeper" / "t.sock").string()));
  fs::permissions(s.root / "theirs", fs::perms::owner_all);
}
