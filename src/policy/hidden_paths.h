// hidden_paths.h: what a sandbox must not reach that is not a file it could read by mistake
// but a door out (docs/sandbox.md §3.5): uexec's own control and state directories, the
// control plane of every live uexec daemon of this user wherever it lives (its socket or the
// socket's 0700 directory, its token files, the registry: control_registry.h), the user's
// $XDG_RUNTIME_DIR, well-known host sockets and directories (docker, containerd, podman, the
// system bus, X11, tmux, ssh-agent), and every listening pathname socket outside the
// writable roots (at most kMaxSocketMasks; socket_sweep_truncated beyond). The mount backends
// mask hide_dirs and hide_files; the Landlock-only backend leaves `control_plane` out of its
// read grant instead. Reads the file system and /proc/net/unix, never changes them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/profile.h"

namespace uexec::policy {

constexpr std::size_t kMaxSocketMasks = 256;

// Fills r.control_plane and, when in.masks, r.hide_dirs and r.hide_files (r.writable final;
// `home` is the request's HOME). ControlRegistryFull when the registry holds more daemons
// than it may: hiding only some would leave the others reachable.
[[nodiscard]] base::Result<void> add_hidden_paths(const PermissionProfile& p, const ResolveInput& in,
                                                  const std::string& home, ResolvedPolicy& r);

// The `ssh-*` directories in `tmp` (ssh-agent's sockets, hidden by the mount backends), as
// "<tmp>/ssh-…". A listing is reused until an inotify watch on `tmp` sees an `ssh-*` name
// appear (see hidden_paths.cc). Thread-safe.
std::vector<std::string> ssh_agent_dirs(const char* tmp);

}  // namespace uexec::policy
