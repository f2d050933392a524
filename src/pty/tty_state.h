// tty_state.h: what the kernel says about a session's terminal and its readers.
//
// Used for `awaiting_input` (docs/agent.md §6.5): is some process of the session
// blocked reading the terminal (or its stdin pipe) right now, and in which mode. Kernel
// evidence comes from /proc: a process in state S whose /proc/<pid>/syscall is read/readv
// on an fd that resolves to our PTY slave (or stdin pipe). The termios of the slave, read
// through the master, gives the kind: ECHO off + ICANON on is a likely secret prompt.
// Pure reads of the kernel's state; no libuv. Loop thread only (it blocks briefly on /proc).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace uexec::pty {

struct TtyModes {
  bool echo = true;
  bool icanon = true;
  bool isig = true;
};

// The slave's termios flags, read through the master (Linux reports the slave's).
std::optional<TtyModes> tty_modes(int master_fd) noexcept;

// The device number of the PTY slave behind `master_fd` (0 on failure).
dev_t slave_rdev(int master_fd) noexcept;

// True when a process in process group `pgrp` sleeps in read(2)/readv(2) on an fd whose
// target is the character device `rdev` (a PTY slave), or in select/poll/epoll with the
// slave as its fd 0 (readline waits in pselect before it reads).
bool group_reading_tty(pid_t pgrp, dev_t rdev);

// True when a process in process group `pgrp` sleeps in read(2)/readv(2) on the pipe with
// inode `pipe_ino` (the session's stdin pipe).
bool group_reading_pipe(pid_t pgrp, ino_t pipe_ino);

}  // namespace uexec::pty
