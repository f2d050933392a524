// seccomp.h: the sandbox's system-call filter (sandbox.md §3.7), compiled with libseccomp.
//
// Default action: allow. Denied groups: foreign ABIs (i386, x32) kill the process (SIGSYS);
// io_uring and clone3 fail with ENOSYS (runtimes probe them and fall back); new namespaces,
// setns, ptrace and process_vm_*, the mount family, TIOCSTI/TIOCLINUX, the kernel surface
// (keyctl, bpf, perf_event_open, userfaultfd, modules, kexec, open_by_handle_at) fail with
// EPERM; with the network off every socket family but AF_UNIX fails with EPERM, and with it on
// only UNIX, INET, INET6 and NETLINK_ROUTE are allowed; when the manager is root, setting
// setuid/setgid bits (chmod family, open/creat with O_CREAT, mknod) fails with EPERM.
//
// Each variant (network × root) is compiled once per process, exported with
// seccomp_export_bpf into a memfd (libseccomp 2.5.4 has no in-memory export) and read back,
// so a spawn only points the child at ready BPF: apply_seccomp is one syscall.
#pragma once

#include <linux/filter.h>

#include <memory>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace uexec::policy {

struct BpfProgram {
  std::vector<sock_filter> insns;
  sock_fprog fprog{};  // points into insns
};

// The compiled filter for this variant; cached for the life of the process.
[[nodiscard]] base::Result<std::shared_ptr<const BpfProgram>> seccomp_program(bool network, bool root);

// The program as raw BPF in a sealed memfd, for bwrap's --seccomp FD.
[[nodiscard]] base::Result<base::UniqueFd> seccomp_memfd(const BpfProgram& program);

// Child step (async-signal-safe): loads `program` (a const BpfProgram*). Needs no_new_privs.
int apply_seccomp(const void* program, int tty) noexcept;

}  // namespace uexec::policy
