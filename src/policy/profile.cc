#include "policy/profile.h"

#include <sys/stat.h>

#include <algorithm>

#include "policy/carve_outs.h"
#include "policy/deny_scan.h"
#include "policy/env_lookup.h"
#include "policy/hidden_paths.h"

namespace uexec::policy {

using base::Error;
using base::Result;

const char* sandbox_mode_name(SandboxMode m) noexcept {
  switch (m) {
    case SandboxMode::kReadOnly: return "read-only";
    case SandboxMode::kWorkspaceWrite: return "workspace-write";
    case SandboxMode::kDangerFullAccess: return "danger-full-access";
  }
  return "?";
}

Result<SandboxMode> parse_sandbox_mode(std::string_view s) {
  if (s == "read-only") return SandboxMode::kReadOnly;
  if (s == "workspace-write") return SandboxMode::kWorkspaceWrite;
  if (s == "danger-full-access") return SandboxMode::kDangerFullAccess;
  return Error::invalid("unknown sandbox mode \"" + std::string(s) +
                        "\" (read-only, workspace-write or danger-full-access)");
}

PermissionProfile PermissionProfile::for_mode(SandboxMode mode) {
  PermissionProfile p;
  p.mode = mode;
  p.slash_tmp = mode == SandboxMode::kReadOnly ? TmpPolicy::kNone : TmpPolicy::kHost;
  p.network = mode == SandboxMode::kDangerFullAccess;
  return p;
}

namespace {

// The plan cache's key: every list of `r` and its three switches (FNV-1a).
std::uint64_t fingerprint(const ResolvedPolicy& r) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
  };
  for (const auto* v : {&r.writable, &r.read_only, &r.stubs, &r.pins, &r.deny_files, &r.deny_dirs,
                        &r.hide_dirs, &r.hide_files, &r.control_plane}) {
    for (const auto& s : *v) mix(s);
    mix("|");
  }
  mix(r.full_write ? "W" : "w");
  mix(r.private_tmp ? "T" : "t");
  mix(r.network ? "N" : "n");
  return h;
}

// A path with a NUL byte names no file: the C calls below would see only its head (a deny
// entry "\0~/x/**" would be scanned from the cwd and mask all of it), so it is refused.
Result<void> refuse_nul_bytes(const PermissionProfile& p, const ResolveInput& in) {
  auto check = [](const std::vector<std::string>& v, const char* what) -> Result<void> {
    for (const auto& s : v)
      if (auto at = s.find('\0'); at != std::string::npos)
        return Error::invalid(std::string("sandbox: a ") + what + " entry contains a NUL byte (after \"" +
                              s.substr(0, std::min<std::size_t>(at, 80)) + "\")");
    return {};
  };
  if (in.cwd.find('\0') != std::string::npos) return Error::invalid("sandbox: the cwd contains a NUL byte");
  for (const auto& [v, what] : {std::pair{&p.writable_roots, "writable root"}, {&p.deny_read, "deny-read"},
                                {&p.extra_protected_names, "protected name"}, {&p.allow_unix_sockets, "unix socket"},
                                {&p.read_only_paths, "read-only path"}})
    if (auto c = check(*v, what); !c) return c;
  return {};
}

}  // namespace

Result<ResolvedPolicy> resolve(const PermissionProfile& p, const ResolveInput& in) {
  if (in.cwd.empty() || in.cwd[0] != '/') return Error::invalid("sandbox: cwd must be absolute");
  if (auto n = refuse_nul_bytes(p, in); !n) return std::move(n).error();
  ResolvedPolicy r;
  r.network = p.network && !p.network_hard_deny;
  r.deny_configured = p.has_deny_entries();
  const std::string home = env_get(in.env, "HOME").empty() ? own_env("HOME") : env_get(in.env, "HOME");
  std::vector<std::string> tmp_roots;  // writable, but without protected names

  if (p.mode == SandboxMode::kDangerFullAccess) {
    r.full_write = true;
  } else if (p.mode == SandboxMode::kWorkspaceWrite) {
    auto cwd = canonical_root(in.cwd, "/");
    if (!cwd) return std::move(cwd).error();
    if (p.cwd_writable) r.writable.push_back(*cwd);
    for (const auto& w : p.writable_roots) {
      std::string expanded = (w.rfind("~/", 0) == 0 && !home.empty()) ? home + w.substr(1) : w;
      auto c = canonical_root(expanded, *cwd);
      if (!c) return std::move(c).error();
      r.writable.push_back(*c);
    }
    if (p.slash_tmp == TmpPolicy::kHost) {
      r.writable.push_back("/tmp");
      tmp_roots.push_back("/tmp");
      std::string tmpdir = env_get(in.env, "TMPDIR");
      if (!tmpdir.empty() && path_exists(tmpdir)) {
        std::string t = real_path(tmpdir);
        if (!path_within(t, "/tmp")) {
          r.writable.push_back(t);
          tmp_roots.push_back(t);
        }
      }
    } else if (p.slash_tmp == TmpPolicy::kPrivate) {
      r.private_tmp = true;
    }
  }
  sort_unique(r.writable);

  if (auto c = add_carve_outs(p.extra_protected_names, tmp_roots, r); !c) return std::move(c).error();
  for (const auto& ro : p.read_only_paths) {
    std::string path = absolute_path(ro, in.cwd);
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) r.read_only.push_back(real_path(path));
  }
  // uexec's config is read-only in every sandbox; its control and state dirs are hidden.
  std::string xdg_config = own_env("XDG_CONFIG_HOME");
  std::string config_dir = !xdg_config.empty() ? xdg_config + "/uexec" : (home.empty() ? "" : home + "/.config/uexec");
  // Only where a writable root covers it: elsewhere it is read-only already, and a carve-out
  // would cost the mount backends one more bind mount per spawn.
  if (!config_dir.empty() && path_exists(config_dir)) {
    std::string dir = real_path(config_dir);
    if (r.full_write || std::any_of(r.writable.begin(), r.writable.end(), [&](const std::string& w) { return path_within(dir, w); }))
      r.read_only.push_back(dir);
  }

  if (auto h = add_hidden_paths(p, in, home, r); !h) return std::move(h).error();

  // Deny-read: globs expanded now (a launch-time snapshot), plain paths kept when present.
  for (const auto& entry : p.deny_read)
    if (auto d = add_deny_read(entry, home, in.cwd, r); !d) return std::move(d).error();
  sort_unique(r.deny_files);
  sort_unique(r.deny_dirs);
  if (auto h = mask_hard_links(r, in.cwd); !h) return std::move(h).error();
  // Deny-read inside a hidden directory is already unreadable (and unreachable to mask).
  for (auto* v : {&r.deny_files, &r.deny_dirs})
    std::erase_if(*v, [&r](const std::string& s) {
      for (const auto& h : r.hide_dirs)
        if (path_within(s, h)) return true;
      return false;
    });
  if (r.private_tmp) {
    // A private /tmp shows nothing of the host's: no masks are needed (or possible) there.
    for (auto* v : {&r.deny_files, &r.deny_dirs, &r.hide_dirs, &r.hide_files})
      std::erase_if(*v, [](const std::string& s) { return path_within(s, "/tmp"); });
  }
  // A mask nobody here could reach protects nothing, and the mount backends could not place
  // it (another user's socket in their 0700 directory: EACCES even to pid 1 of the view).
  for (auto* v : {&r.deny_files, &r.deny_dirs, &r.hide_dirs, &r.hide_files})
    std::erase_if(*v, [](const std::string& s) { return !reachable_without_privilege(s); });
  for (auto* v : {&r.read_only, &r.stubs, &r.deny_files, &r.deny_dirs, &r.hide_files}) sort_unique(*v);
  // A stub inside a carve-out is read-only already (and could not be made there).
  std::erase_if(r.stubs, [&r](const std::string& s) {
    for (const auto& c : r.read_only)
      if (path_within(s, c)) return true;
    return false;
  });
  r.pins = pins_for(r);
  r.fingerprint = fingerprint(r);
  return r;
}

}  // namespace uexec::policy
