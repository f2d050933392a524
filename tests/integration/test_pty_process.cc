// The PTY layer on real PTYs and pipes: exec errors, what the child inherits, sizes,
// signals and exit reporting.
#include <doctest/doctest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "integration/session_helpers.h"

using namespace uexec;
using namespace uexec::test;

TEST_CASE("exec failures are errno-specific errors, never a session that exits 127") {
  ManagerFixture f;
  SUBCASE("missing program") {
    auto id = f.pm->start(request({"/nonexistent"}));
    REQUIRE(!id);
    CHECK(id.error().code == base::Errc::kExecFailed);
    CHECK(id.error().sys_errno == ENOENT);
    CHECK(id.error().message().find("execve /nonexistent") != std::string::npos);
  }
  SUBCASE("not on PATH") {
    auto id = f.pm->start(request({"no-such-program-uexec"}, false));
    REQUIRE(!id);
    CHECK(id.error().sys_errno == ENOENT);
  }
  SUBCASE("not executable") {
    char path[] = "/tmp/uexec-noexec-XXXXXX";
    int fd = ::mkstemp(path);
    ::close(fd);
    auto id = f.pm->start(request({path}));
    ::unlink(path);
    REQUIRE(!id);
    CHECK(id.error().sys_errno == EACCES);
  }
  SUBCASE("bad cwd") {
    auto req = request({"/bin/true"});
    req.cwd = "/definitely/not/here";
    auto id = f.pm->start(req);
    REQUIRE(!id);
    CHECK(id.error().sys_errno == ENOENT);
    CHECK(id.error().context == "chdir /definitely/not/here");
  }
  CHECK(f.pm->size() == 0);
  CHECK(count_zombie_children() == 0);
}

TEST_CASE("the child sees only fds 0, 1 and 2") {
  ManagerFixture f;
  // Open an fd without CLOEXEC in the manager: it must still not reach the child.
  int leaky = ::open("/dev/null", O_RDONLY);
  for (bool tty : {true, false}) {
    CAPTURE(tty);
    auto& s = f.start(request({pty_child(), "print-fds"}, tty));
    REQUIRE(f.wait_finished(s));
    CHECK(all_output(s).find("fds: 0 1 2") != std::string::npos);
  }
  ::close(leaky);
}

TEST_CASE("signal mask and dispositions are reset; the env is exactly the one given; cwd is set") {
  ManagerFixture f;
  // Ignore a signal and block another in the manager; neither may reach the child.
  auto old = ::signal(SIGUSR1, SIG_IGN);
  sigset_t block, saved;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &block, &saved);
  auto& s = f.start(request({pty_child(), "print-signals"}));
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  ::signal(SIGUSR1, old);
  REQUIRE(f.wait_finished(s));
  std::string out = all_output(s);
  CHECK(out.find("SigBlk:\t0000000000000000") != std::string::npos);
  CHECK(out.find("SigIgn:\t0000000000000000") != std::string::npos);

  auto req = request({pty_child(), "print-env"}, false);
  req.env = std::vector<std::string>{"ONLY=this", "PATH=/usr/bin:/bin"};
  auto& e = f.start(req);
  REQUIRE(f.wait_finished(e));
  CHECK(all_output(e) == "ONLY=this\nPATH=/usr/bin:/bin\n");

  auto pwd = request({"/bin/pwd"}, false);
  pwd.cwd = "/usr/share";
  auto& p = f.start(pwd);
  REQUIRE(f.wait_finished(p));
  CHECK(all_output(p) == "/usr/share\n");
}

TEST_CASE("tty: a /dev/pts controlling terminal, the child leads its session and the foreground") {
  ManagerFixture f;
  auto& s = f.start(request({pty_child(), "print-tty"}));
  REQUIRE(f.wait_finished(s));
  std::string out = all_output(s);
  CHECK(out.find("isatty=1 tty=/dev/pts/") != std::string::npos);
  CHECK(out.find("sid=self pgrp=self fg=self") != std::string::npos);

  auto& p = f.start(request({pty_child(), "print-tty"}, false));
  REQUIRE(f.wait_finished(p));
  CHECK(all_output(p).find("isatty=0 tty=none sid=self pgrp=self") != std::string::npos);
}

TEST_CASE("stty size matches the requested size and follows a resize; the child sees SIGWINCH") {
  ManagerFixture f;
  auto req = request({"/bin/sh", "-c", "stty size; read x; stty size"});
  req.size = {33, 101};
  auto& s = f.start(req);
  REQUIRE(f.wait_output(s, "33 101"));
  REQUIRE(s.resize({40, 120}));
  REQUIRE(s.write(std::string_view("\n")));
  REQUIRE(f.wait_finished(s));
  CHECK(all_output(s).find("40 120") != std::string::npos);

  auto& w = f.start(request({pty_child(), "print-winsize"}));
  REQUIRE(f.wait_output(w, "size 24 80"));
  REQUIRE(w.resize({50, 132}));
  CHECK(f.wait_output(w, "size 50 132"));
  REQUIRE(w.write(std::string_view("\x04")));  // VEOF: the child's read returns 0
  REQUIRE(f.wait_finished(w));
  CHECK(w.verdict()->status.code == 0);
}

TEST_CASE("exit codes and signals are both reported") {
  ManagerFixture f;
  for (bool tty : {true, false}) {
    CAPTURE(tty);
    auto& a = f.start(request({"/bin/sh", "-c", "exit 7"}, tty));
    auto& b = f.start(request({pty_child(), "kill-self", std::to_string(SIGTERM)}, tty));
    auto& c = f.start(request({pty_child(), "kill-self", std::to_string(SIGKILL)}, tty));
    REQUIRE(f.wait_finished(a));
    REQUIRE(f.wait_finished(b));
    REQUIRE(f.wait_finished(c));
    CHECK(a.verdict()->status.shell_code() == 7);
    CHECK(a.verdict()->status.signal == 0);
    CHECK(b.verdict()->status.signal == SIGTERM);
    CHECK(b.verdict()->status.shell_code() == 143);
    CHECK(c.verdict()->status.signal == SIGKILL);
    CHECK(c.verdict()->status.shell_code() == 137);
  }
}

TEST_CASE("terminate escalates to SIGKILL for a child that ignores SIGHUP and SIGTERM") {
  base::Config cfg;
  cfg.terminate_grace = std::chrono::milliseconds{200};
  ManagerFixture f(cfg);
  for (bool tty : {true, false}) {
    CAPTURE(tty);
    auto& s = f.start(request({pty_child(), "ignore-hup"}, tty));
    REQUIRE(f.wait_output(s, "ready"));
    s.terminate();
    REQUIRE(f.wait_finished(s));
    CHECK(s.verdict()->status.signal == SIGKILL);
  }
}

TEST_CASE("pipes: stdout and stderr are tagged apart; stdin is a pipe when asked, else closed") {
  ManagerFixture f;
  auto& s = f.start(request({"/bin/sh", "-c", "echo out; echo err >&2"}, false));
  REQUIRE(f.wait_finished(s));
  auto r = s.output().read_from(0, 1000);
  std::string out, err;
  for (const auto& p : r.pieces) {
    std::string text(reinterpret_cast<const char*>(p.bytes.data()), p.bytes.size());
    (p.stream == pty::Stream::kStderr ? err : out) += text;
    CHECK(p.stream != pty::Stream::kPty);
  }
  CHECK(out == "out\n");
  CHECK(err == "err\n");

  auto req = request({"/bin/cat"}, false);
  req.stdin_pipe = true;
  auto& c = f.start(req);
  REQUIRE(c.write(std::string_view("piped input\n")));
  REQUIRE(c.close_stdin());
  REQUIRE(f.wait_finished(c));
  CHECK(all_output(c) == "piped input\n");
  CHECK(c.verdict()->status.code == 0);

  auto& closed = f.start(request({"/bin/cat"}, false));
  REQUIRE(f.wait_finished(closed));  // stdin is /dev/null: cat ends at once
  CHECK(!closed.write(std::string_view("x")));
}
