// Unit tests for base and pty vocabulary: Result, Error messages, exit status, signal names.
#include <doctest/doctest.h>
#include <signal.h>

#include "base/result.h"
#include "pty/exit_status.h"
#include "pty/spawn.h"

using namespace uexec;

TEST_CASE("Error::message names the step, the errno text and its name") {
  base::Error e{base::Errc::kExecFailed, ENOENT, "execve /nonexistent"};
  CHECK(e.message() == "execve /nonexistent: No such file or directory (ENOENT)");
  base::Result<int> r = e;
  CHECK(!r);
  CHECK(r.error().sys_errno == ENOENT);
  base::Result<int> ok = 5;
  CHECK(*ok == 5);
}

TEST_CASE("exit status: shell codes and descriptions") {
  pty::ExitStatus term{0, SIGTERM, false};
  CHECK(term.shell_code() == 143);
  CHECK(term.describe() == "signal SIGTERM");
  pty::ExitStatus kill{0, SIGKILL, false};
  CHECK(kill.shell_code() == 137);
  pty::ExitStatus seven{7, 0, false};
  CHECK(seven.shell_code() == 7);
  CHECK(seven.describe() == "exit 7");
}

TEST_CASE("signal names both ways") {
  CHECK(pty::signal_from_name("SIGINT") == SIGINT);
  CHECK(pty::signal_from_name("term") == SIGTERM);
  CHECK(pty::signal_from_name("9") == 9);
  CHECK(pty::signal_from_name("SIGNOPE") == 0);
  CHECK(pty::signal_from_name("99999") == 0);
  CHECK(pty::signal_name(SIGHUP) == "SIGHUP");
}

TEST_CASE("resolve_program looks up the child's PATH and tells ENOENT from EACCES") {
  auto sh = pty::resolve_program("sh", {"PATH=/nonexistent-dir:/bin"}, "");
  REQUIRE(sh);
  CHECK(*sh == "/bin/sh");
  auto missing = pty::resolve_program("definitely-not-a-program-xyz", {"PATH=/bin"}, "");
  REQUIRE(!missing);
  CHECK(missing.error().sys_errno == ENOENT);
  auto with_slash = pty::resolve_program("./x", {}, "");
  CHECK(*with_slash == "./x");
}
