// seccomp.h: the sandbox's system-call filter (docs/sandbox.md §3.7), compiled with libseccomp.
//
// Default action: allow. Denied groups: foreign ABIs (i386, x32) kill the process (SIGSYS);
// io_uring and clone3 fail with ENOSYS (runtimes probe them and fall back); new namespaces,
// setns, ptrace and process_vm_*, the mount family, TIOCSTI/TIOCLINUX, the kernel surface
// (keyctl, bpf, perf_event_open, userfaultfd, modules, kexec, open_by_handle_at) fail with
// EPERM; with the network off every socket family but AF_UNIX fails with EPERM, and with it on
// only UNIX, INET, INET6 and NETLINK_ROUTE are allowed; when the manager is root, setting
// setuid/setgid bits (chmod family, open/creat with O_CREAT, mknod) fails with EPERM.
//
// Two flavours of every variant: errno, and notify, where every "evidence" rule returns
// SECCOMP_RET_USER_NOTIF instead, so that the sandbox's pid 1 (uexec-init) answers the call
// with EPERM itself and records it: which syscall, its key arguments, how often. Quiet rules
// (io_uring, clone3, openat2) stay plain errno: runtimes probe them. The command's process
// loads the notify flavour with NEW_LISTENER and hands the listener over a socket to pid 1
// (namespaces) or to the manager (Landlock-only; bwrap, through `uexec-init --exec`), which
// answers the same way (pty/seccomp_listener.h); when an outer listener exists already
// (EBUSY) it loads the errno flavour instead.
//
// Each variant (network × root × flavour) is compiled once per process, exported with
// seccomp_export_bpf into a memfd (libseccomp 2.5.4 has no in-memory export) and read back,
// so a spawn only points the child at ready BPF: apply_seccomp is one syscall.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "pty/file_view.h"

namespace uexec::policy {

struct BpfProgram {
  std::vector<sock_filter> insns;
  sock_fprog fprog{};  // points into insns
};

// The compiled filter for this variant; cached for the life of the process.
// `deny_unix`: socket(AF_UNIX) fails too (socketpair stays): the Landlock-only backend cannot
// hide host pathname sockets, so it refuses to make unix sockets at all (docs/sandbox.md §3.6).
// `files` (notify flavour only): the calls that change a name, and the opens that write (or,
// with kWritesAndReads, every open), are held for the listener too, which records the ones
// the sandbox forbids (pty/write_notice.h).
enum class FileRecords : std::uint8_t { kNone, kWrites, kWritesAndReads };
[[nodiscard]] base::Result<std::shared_ptr<const BpfProgram>> seccomp_program(bool network, bool root,
                                                                              bool notify = false,
                                                                              bool deny_unix = false,
                                                                              FileRecords files = FileRecords::kNone);
// What a spawn's file records need held: reads only when its view hides something.
FileRecords file_records_for(const pty::FileView* view) noexcept;

// The program as raw BPF in a sealed memfd, for bwrap's --seccomp FD.
[[nodiscard]] base::Result<base::UniqueFd> seccomp_memfd(const BpfProgram& program);

// Child step (async-signal-safe): loads `program` (a const BpfProgram*). Needs no_new_privs.
int apply_seccomp(const void* program, int tty) noexcept;

// Child step for the notify flavour; `arg` is a const SeccompNotifyStep*.
struct SeccompNotifyStep {
  const BpfProgram* notify = nullptr;
  const BpfProgram* fallback = nullptr;  // errno flavour, when a listener exists already
  int channel = -1;                      // where the listener goes (SCM_RIGHTS), to pid 1
};
int apply_seccomp_notify(const void* arg, int tty) noexcept;

// What a seccomp record from pid 1 means: "socket(AF_INET)" and its kind ("network", …).
struct SeccompRecordText {
  std::string kind;
  std::string detail;
};
SeccompRecordText describe_seccomp_record(int nr, unsigned arch, const std::uint64_t args[3]);
// What a file record (--log-denials) means: kind "fs_write" (or "fs_read" for a read of what
// the sandbox hides), detail "openat /etc/hosts".
SeccompRecordText describe_file_record(int nr, unsigned arch, const std::string& path, bool read);

}  // namespace uexec::policy
