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
// most. With file records (a FileView), every open and the calls that change a name are held
// too: the path each writes or reads is read from the caller (pty/write_notice.h), recorded
// when the view forbids it, and the call continues (the kernel's layers decide, as without
// records).
//
// Only denied calls reach us; each waits for a loop turn, allowed calls cost nothing. A denied
// call made before the listener is taken waits in the kernel until it is. When the listener
// closes (the process freed, the manager gone) the kernel fails the same calls with ENOSYS
// instead of EPERM: still denied. Processes the command leaves behind keep the filter, so the
// listener stays open until the kernel hangs it up or the PtyProcess goes.
#pragma once

#include <array>
#include <memory>
#include <span>

#include "base/result.h"
#include "base/unique_fd.h"
#include "loop/loop.h"
#include "loop/uv_handle.h"
#include "pty/supervisor_protocol.h"
#include "pty/file_view.h"

namespace uexec::pty {

class SeccompListener {
 public:
  // Takes the listener from `channel` (borrowed: it must outlive this object) when it comes,
  // then answers its notifications on `loop`.
  // `files`: hold and record file calls by this view (null: none).
  [[nodiscard]] static base::Result<std::unique_ptr<SeccompListener>> watch(
      loop::Loop& loop, int channel, std::shared_ptr<const FileView> files = nullptr);
  // Answers the notifications of `listener`, taken over from an earlier daemon (holder/).
  [[nodiscard]] static base::Result<std::unique_ptr<SeccompListener>> adopt(
      loop::Loop& loop, base::UniqueFd listener, std::shared_ptr<const FileView> files = nullptr);
  ~SeccompListener();
  SeccompListener(const SeccompListener&) = delete;
  SeccompListener& operator=(const SeccompListener&) = delete;

  // Answers every notification pending right now (the command has exited: its last calls),
  // taking the listener first if it is still in the channel.
  void drain() noexcept;
  // What was denied so far, aggregated (UEXEC_SUP_DENY; UEXEC_SUP_WRITE, UEXEC_SUP_READ for forbidden file calls).
  std::span<const uexec_sup_record> records() const noexcept { return {table_.data(), kept_}; }
  // Records not kept: more than UEXEC_SUP_MAX_RECORDS distinct ones.
  unsigned dropped() const noexcept { return dropped_; }
  // The listener, borrowed (-1 until it came from the channel, or once stopped).
  int listener_fd() const noexcept { return fd_.get(); }
  const std::shared_ptr<const FileView>& files() const noexcept { return files_; }

 private:
  SeccompListener(loop::Loop& loop, int channel, std::shared_ptr<const FileView> files)
      : loop_(&loop), channel_(channel), files_(std::move(files)) {}
  static void on_poll(uv_poll_t* h, int status, int events) noexcept;
  base::Result<void> poll_on(int fd);
  bool take_listener() noexcept;  // from the channel; true when it came
  bool answer_one() noexcept;     // false when nothing was pending or the listener failed
  void note_file_call(const seccomp_notif& n) noexcept;  // a held file call: recorded if forbidden
  void stop() noexcept;

  loop::Loop* loop_;
  int channel_;         // until the listener came
  base::UniqueFd fd_;   // the listener
  loop::UvHandle<uv_poll_t> poll_;
  std::shared_ptr<const FileView> files_;
  std::array<uexec_sup_record, UEXEC_SUP_MAX_RECORDS> table_{};
  unsigned kept_ = 0;     // records in table_
  unsigned dropped_ = 0;
};

}  // namespace uexec::pty
