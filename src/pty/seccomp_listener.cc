#include "pty/seccomp_listener.h"

#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "base/fd_passing.h"
#include "base/log.h"

namespace uexec::pty {

namespace {

constexpr int kIoctlNr = 16;  // x86_64 ioctl: two ioctls are told apart by their request

std::uint64_t key_arg(const seccomp_data& d) { return d.nr == kIoctlNr ? d.args[1] : d.args[0]; }

void note(std::vector<uexec_sup_record>& records, const seccomp_notif& n) {
  for (auto& r : records)
    if (r.nr == n.data.nr && r.arch == n.data.arch && (r.nr == kIoctlNr ? r.args[1] : r.args[0]) == key_arg(n.data)) {
      ++r.count;
      return;
    }
  if (records.size() == UEXEC_SUP_MAX_RECORDS) return;
  uexec_sup_record r{};
  r.type = UEXEC_SUP_DENY;
  r.nr = n.data.nr;
  r.arch = n.data.arch;
  r.pid = static_cast<std::int32_t>(n.pid);
  r.count = 1;
  for (int i = 0; i < 3; ++i) r.args[i] = n.data.args[i];
  records.push_back(r);
}

}  // namespace

base::Result<std::unique_ptr<SeccompListener>> SeccompListener::watch(loop::Loop& loop, int channel) {
  std::unique_ptr<SeccompListener> self(new SeccompListener(loop, channel));
  if (!self->take_listener())
    if (auto r = self->poll_on(channel); !r) return std::move(r).error();
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
  note(records_, req);
  seccomp_notif_resp resp{};
  resp.id = req.id;
  resp.error = -EPERM;
  ::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp);  // ENOENT: the caller died meanwhile
  return true;
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
