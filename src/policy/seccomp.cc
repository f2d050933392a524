#include "policy/seccomp.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/netlink.h>


#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/fd_passing.h"
#include "pty/supervisor_protocol.h"
#include "pty/write_notice.h"

// libseccomp's SCMP_A0..A5 are C compound literals that leave datum_b out: fine in C, and
// accepted by both compilers in C++, which clang's -Wpedantic would otherwise report at
// every rule (the sanitizer build, tools/dev sanitize, uses clang).
#ifdef __clang__
#pragma clang diagnostic ignored "-Wc99-extensions"
#pragma clang diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace uexec::policy {

using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

// The seccomp context, freed on every path.
struct Ctx {
  scmp_filter_ctx c = nullptr;
  ~Ctx() {
    if (c) seccomp_release(c);
  }
};

constexpr std::array<unsigned long long, 8> kCloneNewBits = {
    CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
    CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, 0x00000080ULL /* CLONE_NEWTIME */};

Result<void> add(Ctx& ctx, uint32_t action, int nr, std::initializer_list<scmp_arg_cmp> args,
                 const char* what) {
  if (nr < 0) return {};  // not on this architecture
  int rc = seccomp_rule_add_array(ctx.c, action, nr, static_cast<unsigned>(args.size()),
                                  args.size() ? args.begin() : nullptr);
  if (rc < 0) return Error::sys(std::string("seccomp_rule_add ") + what, -rc);
  return {};
}

Result<std::shared_ptr<const BpfProgram>> compile(bool network, bool root, bool notify, bool deny_unix,
                                                  FileRecords files) {
  Ctx ctx;
  ctx.c = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx.c) return Error::sys("seccomp_init", ENOMEM);
  // i386 (int 0x80) and x32 calls are not the native ABI: kill the process (SIGSYS).
  if (int rc = seccomp_attr_set(ctx.c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc < 0)
    return Error::sys("seccomp badarch action", -rc);
  // A binary tree over syscall numbers instead of a linear chain: the kernel emulates the
  // filter for every syscall number when it is loaded (its allow cache), so the chain's
  // length is paid on every spawn, not only on denied calls.
  // (measured here: 0.21 ms to 0.14 ms per load for the root, network-off variant).
  if (int rc = seccomp_attr_set(ctx.c, SCMP_FLTATR_CTL_OPTIMIZE, 2); rc < 0)
    return Error::sys("seccomp binary tree", -rc);
  // "Evidence" rules: pid 1 answers EPERM and records them (notify), or the kernel does.
  const uint32_t eperm = notify ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM);
  const uint32_t enosys = SCMP_ACT_ERRNO(ENOSYS);
  auto rule = [&](uint32_t action, int nr, std::initializer_list<scmp_arg_cmp> args, const char* what) {
    return add(ctx, action, nr, args, what);
  };
#define TRY(expr)                                 \
  if (auto r_ = (expr); !r_) return std::move(r_).error()
  // Quiet: runtimes probe these and fall back.
  TRY(rule(enosys, SCMP_SYS(io_uring_setup), {}, "io_uring_setup"));
  TRY(rule(enosys, SCMP_SYS(io_uring_enter), {}, "io_uring_enter"));
  TRY(rule(enosys, SCMP_SYS(io_uring_register), {}, "io_uring_register"));
  TRY(rule(enosys, SCMP_SYS(clone3), {}, "clone3"));  // flags behind a pointer; glibc falls back
  // Namespaces: any CLONE_NEW* bit.
  for (auto bit : kCloneNewBits) {
    TRY(rule(eperm, SCMP_SYS(unshare), {SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit)}, "unshare"));
    if (bit != 0x80)  // in clone's flags the low byte is the exit signal; NEWTIME is unshare-only
      TRY(rule(eperm, SCMP_SYS(clone), {SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit)}, "clone"));
  }
  for (int nr : {SCMP_SYS(setns), SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv),
                 SCMP_SYS(process_vm_writev), SCMP_SYS(mount), SCMP_SYS(umount2),
                 SCMP_SYS(pivot_root), SCMP_SYS(open_tree), SCMP_SYS(move_mount), SCMP_SYS(fsopen),
                 SCMP_SYS(fsconfig), SCMP_SYS(fsmount), SCMP_SYS(fspick), SCMP_SYS(mount_setattr),
                 SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key), SCMP_SYS(bpf),
                 SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd), SCMP_SYS(kexec_load),
                 SCMP_SYS(kexec_file_load), SCMP_SYS(init_module), SCMP_SYS(finit_module),
                 SCMP_SYS(delete_module), SCMP_SYS(open_by_handle_at)})
    TRY(rule(eperm, nr, {}, "deny list"));
  // Terminal injection, compared on the low 32 bits of the request.
  for (unsigned long req : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)})
    TRY(rule(eperm, SCMP_SYS(ioctl), {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, req)}, "ioctl"));
  // Sockets.
  if (deny_unix) TRY(rule(eperm, SCMP_SYS(socket), {SCMP_A0(SCMP_CMP_EQ, AF_UNIX)}, "socket unix"));
  if (!network) {
    TRY(rule(eperm, SCMP_SYS(socket), {SCMP_A0(SCMP_CMP_NE, AF_UNIX)}, "socket"));
    TRY(rule(eperm, SCMP_SYS(socketpair), {SCMP_A0(SCMP_CMP_NE, AF_UNIX)}, "socketpair"));
  } else {
    for (int family = 0; family < AF_MAX; ++family) {
      if (family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK) continue;
      TRY(rule(eperm, SCMP_SYS(socket), {SCMP_A0(SCMP_CMP_EQ, static_cast<unsigned>(family))}, "socket"));
    }
    TRY(rule(eperm, SCMP_SYS(socket), {SCMP_A0(SCMP_CMP_GE, AF_MAX)}, "socket"));
    TRY(rule(eperm, SCMP_SYS(socket),
             {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE)}, "socket netlink"));
    TRY(rule(eperm, SCMP_SYS(socketpair), {SCMP_A0(SCMP_CMP_NE, AF_UNIX)}, "socketpair"));
  }
  // Root: no new setuid/setgid files (a setuid file left in a workspace outlives the sandbox).
  if (root) {
    for (unsigned long long bit : {static_cast<unsigned long long>(S_ISUID), static_cast<unsigned long long>(S_ISGID)}) {
      TRY(rule(eperm, SCMP_SYS(chmod), {SCMP_A1(SCMP_CMP_MASKED_EQ, bit, bit)}, "chmod"));
      TRY(rule(eperm, SCMP_SYS(fchmod), {SCMP_A1(SCMP_CMP_MASKED_EQ, bit, bit)}, "fchmod"));
      TRY(rule(eperm, SCMP_SYS(fchmodat), {SCMP_A2(SCMP_CMP_MASKED_EQ, bit, bit)}, "fchmodat"));
      TRY(rule(eperm, 452 /* fchmodat2: newer than these headers */, {SCMP_A2(SCMP_CMP_MASKED_EQ, bit, bit)}, "fchmodat2"));
      // The mode counts when O_CREAT or O_TMPFILE is set (an O_TMPFILE file can be linked in).
      for (unsigned long long creates : {static_cast<unsigned long long>(O_CREAT),
                                              static_cast<unsigned long long>(UEXEC_WN_TMPFILE_BIT)}) {
        TRY(rule(eperm, SCMP_SYS(open),
                 {SCMP_A1(SCMP_CMP_MASKED_EQ, creates, creates), SCMP_A2(SCMP_CMP_MASKED_EQ, bit, bit)}, "open"));
        TRY(rule(eperm, SCMP_SYS(openat),
                 {SCMP_A2(SCMP_CMP_MASKED_EQ, creates, creates), SCMP_A3(SCMP_CMP_MASKED_EQ, bit, bit)}, "openat"));
      }
      TRY(rule(eperm, SCMP_SYS(creat), {SCMP_A1(SCMP_CMP_MASKED_EQ, bit, bit)}, "creat"));
      TRY(rule(eperm, SCMP_SYS(mknod), {SCMP_A1(SCMP_CMP_MASKED_EQ, bit, bit)}, "mknod"));
      TRY(rule(eperm, SCMP_SYS(mknodat), {SCMP_A2(SCMP_CMP_MASKED_EQ, bit, bit)}, "mknodat"));
    }
    TRY(rule(enosys, SCMP_SYS(openat2), {}, "openat2"));  // its mode is behind a pointer
  }
  // File records (--log-denials): the calls that change a name and the opens that write, or
  // every open when reads are judged too, wait for the listener, which records the ones the
  // sandbox forbids and lets every one continue (pty/write_notice.h). The root rules above
  // are notify rules too: the listener tells them apart.
  if (notify && files != FileRecords::kNone) {
    for (int nr : uexec_wn_calls) {
      if (files == FileRecords::kWritesAndReads || (nr != SYS_open && nr != SYS_openat)) {
        TRY(rule(SCMP_ACT_NOTIFY, nr, {}, "file records"));
        continue;
      }
      const unsigned flags_arg = nr == SYS_open ? 1 : 2;
      for (unsigned long long bit : {static_cast<unsigned long long>(O_WRONLY), static_cast<unsigned long long>(O_RDWR),
                                     static_cast<unsigned long long>(O_CREAT), static_cast<unsigned long long>(O_TRUNC)})
        TRY(rule(SCMP_ACT_NOTIFY, nr, {SCMP_CMP(flags_arg, SCMP_CMP_MASKED_EQ, bit, bit)}, "file records (writes)"));
    }
  }
#undef TRY
  UniqueFd mem(static_cast<int>(::syscall(SYS_memfd_create, "uexec-bpf", MFD_CLOEXEC)));
  if (!mem) return Error::sys("memfd_create bpf");
  if (int rc = seccomp_export_bpf(ctx.c, mem.get()); rc < 0) return Error::sys("seccomp_export_bpf", -rc);
  off_t size = ::lseek(mem.get(), 0, SEEK_END);
  if (size <= 0 || size % sizeof(sock_filter) != 0) return Error::sys("seccomp export size", EINVAL);
  auto prog = std::make_shared<BpfProgram>();
  prog->insns.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
  if (::pread(mem.get(), prog->insns.data(), static_cast<std::size_t>(size), 0) != size)
    return Error::sys("read back bpf");
  prog->fprog.len = static_cast<unsigned short>(prog->insns.size());
  prog->fprog.filter = prog->insns.data();
  return std::shared_ptr<const BpfProgram>(std::move(prog));
}

}  // namespace

Result<std::shared_ptr<const BpfProgram>> seccomp_program(bool network, bool root, bool notify, bool deny_unix,
                                                         FileRecords files) {
  static std::mutex mu;
  static std::shared_ptr<const BpfProgram> cache[2][2][2][2][3];
  std::lock_guard<std::mutex> lock(mu);
  if (!notify) files = FileRecords::kNone;
  auto& slot = cache[network ? 1 : 0][root ? 1 : 0][notify ? 1 : 0][deny_unix ? 1 : 0][static_cast<int>(files)];
  if (!slot) {
    auto p = compile(network, root, notify, deny_unix, files);
    if (!p) return std::move(p).error();
    slot = *p;
  }
  return slot;
}

FileRecords file_records_for(const pty::FileView* view) noexcept {
  if (!view) return FileRecords::kNone;
  return view->judges_reads ? FileRecords::kWritesAndReads : FileRecords::kWrites;
}

Result<UniqueFd> seccomp_memfd(const BpfProgram& program) {
  UniqueFd mem(static_cast<int>(::syscall(SYS_memfd_create, "uexec-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  if (!mem) return Error::sys("memfd_create seccomp");
  std::size_t bytes = program.insns.size() * sizeof(sock_filter);
  if (::write(mem.get(), program.insns.data(), bytes) != static_cast<ssize_t>(bytes))
    return Error::sys("write seccomp memfd");
  ::lseek(mem.get(), 0, SEEK_SET);
  ::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return mem;
}

int apply_seccomp_notify(const void* arg, int) noexcept {
  const auto* st = static_cast<const SeccompNotifyStep*>(arg);
  long listener = uexec_seccomp_listen(&st->notify->fprog);
  if (listener < 0) {
    if (errno != EBUSY) return errno;
    // Someone above us listens already (nested sandbox): the kernel answers instead.
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &st->fallback->fprog) < 0) return errno;
    return 0;
  }
  int fd = static_cast<int>(listener);
  int err = base::send_fd(st->channel, fd);
  ::close(fd);
  return err;
}

namespace {

// The call's name for `arch` ("openat"), or "syscall N" when libseccomp does not know it.
std::string syscall_name(int nr, unsigned arch) {
  char* n = seccomp_syscall_resolve_num_arch(arch, nr);
  if (!n) return "syscall " + std::to_string(nr);
  std::string name = n;
  std::free(n);
  return name;
}

}  // namespace

SeccompRecordText describe_seccomp_record(int nr, unsigned arch, const std::uint64_t args[3]) {
  const std::string name = syscall_name(nr, arch);
  auto family = [](std::uint64_t f) -> std::string {
    switch (f) {
      case AF_INET: return "AF_INET";
      case AF_INET6: return "AF_INET6";
      case AF_NETLINK: return "AF_NETLINK";
      case AF_PACKET: return "AF_PACKET";
      case AF_UNIX: return "AF_UNIX";
      default: return "family " + std::to_string(f);
    }
  };
  if (name == "socket" || name == "socketpair") return {"network", name + "(" + family(args[0]) + ")"};
  if (name == "ptrace" || name == "process_vm_readv" || name == "process_vm_writev") return {"ptrace", name};
  if (name == "unshare" || name == "clone" || name == "setns") return {"namespace", name};
  if (name == "ioctl") {
    unsigned req = static_cast<unsigned>(args[1]);
    return {"tty_ioctl", std::string("ioctl(") + (req == TIOCSTI ? "TIOCSTI" : req == TIOCLINUX ? "TIOCLINUX" : std::to_string(req)) + ")"};
  }
  for (const char* m : {"mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig",
                        "fsmount", "fspick", "mount_setattr"})
    if (name == m) return {"mount", name};
  for (const char* f : {"chmod", "fchmod", "fchmodat", "fchmodat2", "open", "openat", "creat", "mknod", "mknodat"})
    if (name == f) return {"fs_write", name + " (setuid/setgid bits)"};
  return {"kernel", name};
}

SeccompRecordText describe_file_record(int nr, unsigned arch, const std::string& path, bool read) {
  return {read ? "fs_read" : "fs_write", syscall_name(nr, arch) + " " + path};
}

int apply_seccomp(const void* program, int) noexcept {
  const auto* p = static_cast<const BpfProgram*>(program);
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p->fprog) < 0) return errno;
  return 0;
}

}  // namespace uexec::policy
