#include "pty/seccomp_listener.h"

#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "base/fd_passing.h"
#include "base/log.h"
#include "pty/write_notice.h"

namespace uexec::pty {

base::Result<std::unique_ptr<SeccompListener>> SeccompListener::watch(loop::Loop& loop, int channel,
                                                                      std::shared_ptr<const FileView> files) {
  std::unique_ptr<SeccompListener> self(new SeccompListener(loop, channel, std::move(files)));
  if (!self->take_listener())
    if (auto r = self->poll_on(channel); !r) return std::move(r).error();
  return self;
}

base::Result<std::unique_ptr<SeccompListener>> SeccompListener::adopt(loop::Loop& loop, base::UniqueFd listener,
                                                                      std::shared_ptr<const FileView> files) {
  std::unique_ptr<SeccompListener> self(new SeccompListener(loop, -1, std::move(files)));
  self->fd_ = std::move(listener);
  if (auto r = self->poll_on(self->fd_.get()); !r) return std::move(r).error();
  return self;
}

base::Result<void> SeccompListener::poll_on(int fd) {
  poll_.close();
  auto poll = loop::make_handle<uv_poll_t>([&](uv_poll_t* p) { return uv_poll_init(loop_->get(), p, fd); },
                                           "uv_poll_init seccomp listener");
  if (!poll) return std::move(poll).error();
  poll_ = std::move(*poll);
  poll_.get()->data = this;
  if (int rc = uv_poll_start(poll_.get(), UV_READABLE | UV_DISCONNECT, &SeccompListener::on_poll); rc < 0)
    return base::Error::uv(rc, "uv_poll_start seccomp listener");
  return {};
}

bool SeccompListener::take_listener() noexcept {
  if (fd_) return true;
  if (channel_ < 0) return false;
  int fd = base::recv_fd(channel_);
  if (fd < 0) return false;
  fd_.reset(fd);
  channel_ = -1;
  // A held call wakes our loop on the caller's CPU (Linux 6.6+; ignored before): the round
  // trip of a held write drops by about a third (docs/sandbox.md §5.4).
  ::ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
  if (auto r = poll_on(fd); !r) {
    // No poll: nobody would answer, and the command's denied calls would hang. Closing the
    // listener makes the kernel fail them (ENOSYS) instead.
    UEXEC_LOG(kWarn, "seccomp listener: {}; its calls now fail with ENOSYS, unrecorded", r.error().message());
    stop();
  }
  return true;
}

SeccompListener::~SeccompListener() { stop(); }

void SeccompListener::stop() noexcept {
  poll_.close();
  fd_.reset();
  channel_ = -1;
}

void SeccompListener::on_poll(uv_poll_t* h, int status, int events) noexcept {
  auto* self = static_cast<SeccompListener*>(h->data);
  if (!self) return;
  if (!self->fd_) {  // still waiting on the channel
    if (status < 0 || !self->take_listener()) {
      if (status < 0 || (events & UV_DISCONNECT)) self->stop();  // the command never sent one
    }
    return;
  }
  if (status < 0) return self->stop();
  if (events & UV_READABLE) self->answer_one();
  // The last process with the filter is gone (the kernel's POLLHUP).
  if (events & UV_DISCONNECT) self->stop();
}

bool SeccompListener::answer_one() noexcept {
  if (!fd_) return false;
  seccomp_notif req{};
  if (::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
    // ENOENT: the caller died before we took it. Anything else: the listener is broken.
    if (errno != ENOENT && errno != EINTR) stop();
    return false;
  }
  seccomp_notif_resp resp{};
  resp.id = req.id;
  if (files_ && uexec_wn_is_file_call(&req.data) && !(files_->setid_evidence && uexec_wn_makes_setid(&req.data))) {
    note_file_call(req);
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  } else {
    uexec_sup_count(table_.data(), &kept_, UEXEC_SUP_MAX_RECORDS, &dropped_, UEXEC_SUP_DENY, &req, nullptr);
    resp.error = -EPERM;
  }
  ::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp);  // ENOENT: the caller died meanwhile
  return true;
}

void SeccompListener::note_file_call(const seccomp_notif& n) noexcept {
  // The policy's lists decide (FileView); uexec_wn_judge's rule is a C callback.
  auto by_view = [](void* view, const char* path, uexec_wn_place place) -> int {
    try {
      const auto* v = static_cast<const FileView*>(view);
      return (place == UEXEC_WN_READ ? v->forbids_read(path) : v->forbids_write(path)) ? 1 : 0;
    } catch (const std::bad_alloc&) {
      return 0;
    }
  };
  char path[4096];
  auto* view = const_cast<FileView*>(files_.get());
  int place = uexec_wn_judge(static_cast<pid_t>(n.pid), &n.data, by_view, view, path, sizeof path);
  if (!place) return;
  // The path was read from the caller that is still waiting, not from a reused pid.
  __u64 id = n.id;
  if (::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0) return;
  uexec_sup_count(table_.data(), &kept_, UEXEC_SUP_MAX_RECORDS, &dropped_,
                  place == UEXEC_WN_READ ? UEXEC_SUP_READ : UEXEC_SUP_WRITE, &n, path);
}

void SeccompListener::drain() noexcept {
  take_listener();
  for (int i = 0; fd_ && i < 4096; ++i) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) return;
    if (!answer_one()) return;
  }
}

}  // namespace uexec::pty
