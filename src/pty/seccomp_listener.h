// seccomp_listener.h: answering a sandboxed command's "evidence" system calls in the manager.
//
// The namespace backend's pid 1 (uexec-init) answers the seccomp filter's notify rules
// (policy/seccomp.h) and records them. The Landlock-only and bwrap backends have no pid 1 of
// ours: their command loads the notify flavour with SECCOMP_FILTER_FLAG_NEW_LISTENER and
// sends the listener over a datagram socket (SpawnSpec::seccomp_listener_channel) before it
// execs; this class takes it from there when it comes (at once for Landlock, once bwrap has
// built its namespaces for bwrap) and then answers, on the loop, each notification with EPERM
// (never CONTINUE, so there is nothing to race) and counts it by syscall, architecture and key
// argument (socket's family, ioctl's request) as init does, UEXEC_SUP_MAX_RECORDS distinct at
// most.
//
// Only denied calls reach us; each waits for a loop turn, allowed calls cost nothing. A denied
// call made before the listener is taken waits in the kernel until it is. When the listener
// closes (the process freed, the manager gone) the kernel fails the same calls with ENOSYS
// instead of EPERM: still denied. Processes the command leaves behind keep the filter, so the
// listener stays open until the kernel hangs it up or the PtyProcess goes.
#pragma once

#include <memory>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "loop/loop.h"
#include "loop/uv_handle.h"
#include "pty/supervisor_protocol.h"

namespace uexec::pty {

class SeccompListener {
 public:
  // Takes the listener from `channel` (borrowed: it must outlive this object) when it comes,
  // then answers its notifications on `loop`.
  [[nodiscard]] static base::Result<std::unique_ptr<SeccompListener>> watch(loop::Loop& loop, int channel);
  ~SeccompListener();
  SeccompListener(const SeccompListener&) = delete;
  SeccompListener& operator=(const SeccompListener&) = delete;

  // Answers every notification pending right now (the command has exited: its last calls),
  // taking the listener first if it is still in the channel.
  void drain() noexcept;
  // What was denied so far, aggregated (type UEXEC_SUP_DENY).
  const std::vector<uexec_sup_record>& records() const noexcept { return records_; }

 private:
  SeccompListener(loop::Loop& loop, int channel) : loop_(&loop), channel_(channel) {}
  static void on_poll(uv_poll_t* h, int status, int events) noexcept;
  base::Result<void> poll_on(int fd);
  bool take_listener() noexcept;  // from the channel; true when it came
  bool answer_one() noexcept;     // false when nothing was pending or the listener failed
  void stop() noexcept;

  loop::Loop* loop_;
  int channel_;         // until the listener came
  base::UniqueFd fd_;   // the listener
  loop::UvHandle<uv_poll_t> poll_;
  std::vector<uexec_sup_record> records_;
};

}  // namespace uexec::pty
