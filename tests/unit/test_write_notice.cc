// Unit tests for the write-record judge (pty/write_notice.h) and the record table
// (pty/supervisor_protocol.h): held calls are built here as seccomp_data whose pointers point
// into this process, which the judge reads back with process_vm_readv like any caller's.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "helpers/temp_dir.h"
#include "pty/supervisor_protocol.h"
#include "pty/write_notice.h"

namespace {

// A scratch tree: `ws` is writable, everything else is read-only, `outside/hidden` unreadable
// (the listener's rule).
struct Tree : uexec::test::TempDir {
  std::string real;  // the tree's path with its own symlinks resolved (the judge's answers)
  Tree() : TempDir("uexec-write-notice", "/var/tmp") {
    char buf[PATH_MAX];
    real = ::realpath(path.c_str(), buf) ? buf : path;
    ::mkdir((*this / "ws").c_str(), 0755);
    ::mkdir((*this / "outside").c_str(), 0755);
  }
};

bool within(const char* path, const std::string& root) {
  return std::strncmp(path, root.c_str(), root.size()) == 0 && (path[root.size()] == '\0' || path[root.size()] == '/');
}

int forbids_outside_ws(void* ctx, const char* path, enum uexec_wn_place place) {
  const std::string& real = static_cast<Tree*>(ctx)->real;
  if (place == UEXEC_WN_READ) return within(path, real + "/outside/hidden");
  return !within(path, real + "/ws");
}

std::uint64_t ptr(const std::string& s) { return reinterpret_cast<std::uintptr_t>(s.c_str()); }

seccomp_data call(int nr, std::initializer_list<std::uint64_t> args) {
  seccomp_data d{};
  d.nr = nr;
  int i = 0;
  for (std::uint64_t a : args) d.args[i++] = a;
  return d;
}

// The judge's answer: the listed path, or "" when the call is not listed; `place` gets where.
std::string judge(Tree& t, const seccomp_data& d, int* place = nullptr) {
  char out[4096];
  int at = uexec_wn_judge(::getpid(), &d, forbids_outside_ws, &t, out, sizeof out);
  if (place) *place = at;
  return at ? std::string(out) : std::string();
}

constexpr std::uint64_t kAtFdcwd = static_cast<std::uint64_t>(static_cast<std::int64_t>(AT_FDCWD));

}  // namespace

TEST_CASE("file records: a dangling symlink opened with O_CREAT is judged where it points") {
  Tree t;
  ::symlink((t.real + "/outside/made").c_str(), (t / "ws/dangle").c_str());
  const std::string link = t / "ws/dangle";
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(link), O_WRONLY | O_CREAT, 0644})) == t.real + "/outside/made");
  // Without O_CREAT (ENOENT), with O_NOFOLLOW (ELOOP) or O_EXCL (EEXIST): nothing is made.
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(link), O_WRONLY, 0})).empty());
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(link), O_WRONLY | O_CREAT | O_NOFOLLOW, 0644})).empty());
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(link), O_WRONLY | O_CREAT | O_EXCL, 0644})).empty());
  // A relative target is taken from the link's directory.
  ::symlink("../outside/rel", (t / "ws/dangle-rel").c_str());
  const std::string rel = t / "ws/dangle-rel";
  CHECK(judge(t, call(SYS_open, {ptr(rel), O_WRONLY | O_CREAT, 0644})) == t.real + "/outside/rel");
  // One that points into the workspace is allowed.
  ::symlink("inside", (t / "ws/dangle-in").c_str());
  const std::string in = t / "ws/dangle-in";
  CHECK(judge(t, call(SYS_open, {ptr(in), O_WRONLY | O_CREAT, 0644})).empty());
}

TEST_CASE("file records: \"..\" after a symlink leads where the kernel goes, not back lexically") {
  Tree t;
  ::mkdir((t / "outside/deep").c_str(), 0755);
  ::symlink((t.real + "/outside/deep").c_str(), (t / "ws/planted").c_str());
  const std::string through = t / "ws/planted/../x";
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(through), O_WRONLY | O_CREAT, 0644})) == t.real + "/outside/x");
  const std::string plain = t / "ws/sub/../y";
  ::mkdir((t / "ws/sub").c_str(), 0755);
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(plain), O_WRONLY | O_CREAT, 0644})).empty());
  // A last component "." or ".." adds or writes no name.
  const std::string dots = t / "outside/..";
  CHECK(judge(t, call(SYS_mkdir, {ptr(dots), 0755})).empty());
}

TEST_CASE("file records: calls the kernel refuses before its write check are not listed") {
  Tree t;
  const std::string dir = t / "outside";
  CHECK(judge(t, call(SYS_open, {ptr(dir), O_WRONLY, 0})).empty());  // EISDIR
  t.write("ws/a", "a");
  t.write("outside/there", "b");
  const std::string a = t / "ws/a", missing = t / "outside/missing", there = t / "outside/there";
  constexpr std::uint64_t kExchange = 2;  // RENAME_EXCHANGE
  CHECK(judge(t, call(SYS_renameat2, {kAtFdcwd, ptr(a), kAtFdcwd, ptr(missing), kExchange})).empty());
  CHECK(judge(t, call(SYS_renameat2, {kAtFdcwd, ptr(a), kAtFdcwd, ptr(there), kExchange})) == t.real + "/outside/there");
  CHECK(judge(t, call(SYS_rename, {ptr(a), ptr(missing)})) == t.real + "/outside/missing");
}

TEST_CASE("file records: O_TMPFILE names its directory, \".\" and \"..\" included") {
  Tree t;
  ::mkdir((t / "outside/sub").c_str(), 0755);
  const std::string dot = t / "outside/.", dotdot = t / "outside/sub/..", inside = t / "ws/.";
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(dot), O_TMPFILE | O_WRONLY, 0600})) == t.real + "/outside");
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(dotdot), O_TMPFILE | O_WRONLY, 0600})) == t.real + "/outside");
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(inside), O_TMPFILE | O_WRONLY, 0600})).empty());
}

TEST_CASE("file records: linkat(fd, \"\", AT_EMPTY_PATH) judges the new name") {
  Tree t;
  const std::string empty, target = t / "outside/linked", inside = t / "ws/linked";
  CHECK(judge(t, call(SYS_linkat, {3, ptr(empty), kAtFdcwd, ptr(target), AT_EMPTY_PATH})) == t.real + "/outside/linked");
  CHECK(judge(t, call(SYS_linkat, {3, ptr(empty), kAtFdcwd, ptr(inside), AT_EMPTY_PATH})).empty());
  // Without the flag an empty old name is ENOENT.
  CHECK(judge(t, call(SYS_linkat, {3, ptr(empty), kAtFdcwd, ptr(target), 0})).empty());
}

TEST_CASE("file records: O_TMPFILE counts as a create for the root variant's setuid rule") {
  seccomp_data tmpfile = call(SYS_openat, {kAtFdcwd, 0, O_TMPFILE | O_WRONLY, 04755});
  CHECK(uexec_wn_makes_setid(&tmpfile) == 1);
  seccomp_data plain = call(SYS_openat, {kAtFdcwd, 0, O_TMPFILE | O_WRONLY, 0755});
  CHECK(uexec_wn_makes_setid(&plain) == 0);
  seccomp_data creat = call(SYS_open, {0, O_WRONLY | O_CREAT, 02755});
  CHECK(uexec_wn_makes_setid(&creat) == 1);
  seccomp_data reading = call(SYS_open, {0, O_RDONLY, 04755});  // the mode is ignored
  CHECK(uexec_wn_makes_setid(&reading) == 0);
}

TEST_CASE("file records: a long path keeps its head and file name; records merge only on equal fits") {
  char fitted[UEXEC_SUP_PATH_MAX];
  uexec_sup_fit_path(fitted, "/short/path");
  CHECK(std::string(fitted) == "/short/path");
  const std::string middle_a(300, 'a');
  const std::string long_a = "/head" + middle_a + "/file-one", long_b = "/head" + middle_a + "/file-two";
  uexec_sup_fit_path(fitted, long_a.c_str());
  const std::string got = fitted;
  CHECK(got.size() == UEXEC_SUP_PATH_MAX - 1);
  CHECK(got.rfind("/head", 0) == 0);
  CHECK(got.find("...") != std::string::npos);
  CHECK(got.substr(got.size() - 9) == "/file-one");

  uexec_sup_record table[4]{};
  unsigned n = 0, dropped = 0;
  seccomp_notif note{};
  note.data.nr = SYS_openat;
  uexec_sup_count(table, &n, 4, &dropped, UEXEC_SUP_WRITE, &note, long_a.c_str());
  uexec_sup_count(table, &n, 4, &dropped, UEXEC_SUP_WRITE, &note, long_b.c_str());  // another file name
  uexec_sup_count(table, &n, 4, &dropped, UEXEC_SUP_WRITE, &note, long_a.c_str());
  CHECK(n == 2);
  CHECK(table[0].count == 2);
  CHECK(table[1].count == 1);
  CHECK(dropped == 0);
}

TEST_CASE("file records: an open that writes nothing is judged as a read, missing names too") {
  Tree t;
  ::mkdir((t / "outside/hidden").c_str(), 0755);
  t.write("outside/hidden/secret", "s");
  t.write("outside/plain", "p");
  const std::string secret = t / "outside/hidden/secret", missing = t / "outside/hidden/gone",
                    plain = t / "outside/plain", dir = t / "outside/hidden";
  int place = 0;
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(secret), O_RDONLY, 0}), &place) == t.real + "/outside/hidden/secret");
  CHECK(place == UEXEC_WN_READ);
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(missing), O_RDONLY, 0})) == t.real + "/outside/hidden/gone");
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(dir), O_RDONLY | O_DIRECTORY, 0})) == t.real + "/outside/hidden");
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(plain), O_RDONLY, 0})).empty());
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(secret), O_PATH, 0})).empty());  // no permission check
  // Below a file the kernel says ENOTDIR: nothing was hidden.
  const std::string below_file = t / "outside/hidden/secret/zz";
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(below_file), O_RDONLY, 0})).empty());
  // Written, it is a write (the rule's other answer), landing on the file.
  CHECK(judge(t, call(SYS_openat, {kAtFdcwd, ptr(secret), O_WRONLY, 0}), &place) == t.real + "/outside/hidden/secret");
  CHECK(place == UEXEC_WN_FILE);
}
