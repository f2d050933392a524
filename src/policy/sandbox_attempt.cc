#include "policy/sandbox_attempt.h"

#include <unistd.h>

#include <climits>

#include "policy/bwrap.h"
#include "policy/landlock.h"
#include "policy/linux_sandbox.h"

extern char** environ;

namespace uexec::policy {

using base::Errc;
using base::Error;
using base::Result;

const char* sandbox_kind_name(SandboxKind kind) noexcept {
  switch (kind) {
    case SandboxKind::kNone: return "none";
    case SandboxKind::kFake: return "fake";
    case SandboxKind::kLinuxNamespaces: return "linux-ns";
    case SandboxKind::kLinuxLandlock: return "linux-landlock";
    case SandboxKind::kLinuxBwrap: return "linux-bwrap";
    case SandboxKind::kMacosSeatbelt: return "seatbelt";
  }
  return "?";
}

Result<Backend> parse_backend(std::string_view s) {
  if (s == "auto") return Backend::kAuto;
  if (s == "namespaces") return Backend::kNamespaces;
  if (s == "landlock") return Backend::kLandlock;
  if (s == "bwrap") return Backend::kBwrap;
  if (s == "seatbelt") return Backend::kSeatbelt;
  return Error::invalid("unknown sandbox backend \"" + std::string(s) +
                        "\" (auto, namespaces, landlock, bwrap or seatbelt)");
}

Result<SandboxAttempt> SandboxAttempt::select(const PermissionProfile& profile, Backend preference) {
  SandboxKind kind = SandboxKind::kNone;
  if (!profile.unrestricted()) {
    switch (preference) {
      case Backend::kNamespaces: kind = SandboxKind::kLinuxNamespaces; break;
      case Backend::kLandlock: kind = SandboxKind::kLinuxLandlock; break;
      case Backend::kBwrap: kind = SandboxKind::kLinuxBwrap; break;
      case Backend::kSeatbelt: kind = SandboxKind::kMacosSeatbelt; break;
      case Backend::kAuto: {
        const HostSupport& host = host_support();
        if (host.userns && host.init) {
          kind = SandboxKind::kLinuxNamespaces;
        } else if (host.landlock_abi >= 2) {
          kind = SandboxKind::kLinuxLandlock;
        } else {
          return Error{Errc::kPolicy, 0,
                       "BackendUnavailable: no user namespaces (" + host.userns_detail +
                           ") and no Landlock ABI 2; refusing to run unsandboxed"};
        }
        break;
      }
    }
  }
  SandboxAttempt a(kind, kind == SandboxKind::kNone ? nullptr : std::make_shared<DenialLog>());
  a.profile_ = std::make_shared<const PermissionProfile>(profile);
  return a;
}

namespace {

bool is_marker(const std::string& kv) {
  return kv.rfind("UEXEC_SANDBOX", 0) == 0 || kv.rfind("CODEX_SANDBOX", 0) == 0;
}

}  // namespace

Result<pty::SpawnSpec> SandboxAttempt::env_for(const ExecRequest& req) const {
  if (req.argv.empty() || req.argv[0].empty()) return Error::invalid("argv must name a program");
  if (req.tty && (req.size.rows == 0 || req.size.cols == 0))
    return Error::invalid("size: rows and cols must be >= 1");
  pty::SpawnSpec spec;
  spec.argv = req.argv;
  if (req.arg0) {
    spec.program = req.argv[0];
    spec.argv[0] = *req.arg0;
  }
  spec.cwd = req.cwd;
  std::vector<std::string> env;
  if (req.env) {
    env = *req.env;
  } else {
    for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  }
  // Markers describe the sandbox that runs: inherited ones never survive.
  for (auto& kv : env)
    if (!is_marker(kv)) spec.env.push_back(std::move(kv));
  if (!sandboxed()) return spec;

  spec.env.push_back(std::string("UEXEC_SANDBOX=") + sandbox_kind_name(kind_));
  if (kind_ == SandboxKind::kFake) return spec;
  if (profile_ && !profile_->network) {
    spec.env.emplace_back("UEXEC_SANDBOX_NETWORK_DISABLED=1");
    spec.env.emplace_back("CODEX_SANDBOX_NETWORK_DISABLED=1");
  }
  if (kind_ == SandboxKind::kMacosSeatbelt)
    return Error{Errc::kPolicy, 0, "SeatbeltUnavailable: the seatbelt backend needs macOS's /usr/bin/sandbox-exec"};

  std::string cwd = req.cwd;
  if (cwd.empty()) {
    char buf[PATH_MAX];
    if (!::getcwd(buf, sizeof buf)) return Error::sys("getcwd");
    cwd = buf;
  }
  // The command always chdirs into the view: an inherited cwd would still point into the
  // host's mount under the view (past read-only roots and deny-read masks).
  spec.cwd = cwd;
  // What :cwd and relative entries mean: the operator's workspace when the front door says so
  // (a model's `workdir` must not choose the writable root), else the process's cwd.
  std::string policy_cwd = req.sandbox_policy_cwd.empty() ? cwd : req.sandbox_policy_cwd;
  ResolveInput in;
  in.cwd = policy_cwd;
  in.env = spec.env;
  in.masks = kind_ != SandboxKind::kLinuxLandlock;  // it cannot mount masks
  auto policy = resolve(*profile_, in);
  if (!policy) return std::move(policy).error();
  if (record_files_ && seccomp()) {
    auto view = std::make_shared<pty::FileView>();
    view->setid_evidence = ::geteuid() == 0;  // the filter's root rules (seccomp.h)
    view->by_mounts = kind_ == SandboxKind::kLinuxNamespaces;
    view->full_write = policy->full_write;
    view->private_tmp = policy->private_tmp;
    view->writable = policy->writable;
    view->read_only = policy->read_only;
    view->read_only.insert(view->read_only.end(), policy->stubs.begin(), policy->stubs.end());
    if (kind_ == SandboxKind::kLinuxLandlock) {
      view->unreadable = landlock_unreadable(*policy);
    } else {
      // The host's other sockets (the rest of hide_files) are left out: open() of a socket
      // fails with ENXIO anyway.
      for (const auto* list : {&policy->deny_files, &policy->deny_dirs, &policy->hide_dirs, &policy->control_plane})
        view->unreadable.insert(view->unreadable.end(), list->begin(), list->end());
    }
    view->judges_reads = !view->unreadable.empty() ||
                         (kind_ == SandboxKind::kLinuxNamespaces && !policy->deny_patterns.empty());
    spec.file_records = std::move(view);
  }
  Result<void> added;
  switch (kind_) {
    case SandboxKind::kLinuxNamespaces: added = add_namespace_sandbox(*policy, spec); break;
    case SandboxKind::kLinuxLandlock: added = add_landlock_sandbox(*policy, spec); break;
    case SandboxKind::kLinuxBwrap: added = add_bwrap_sandbox(*policy, cwd, spec); break;
    default: break;
  }
  if (!added) return std::move(added).error();
  return spec;
}

}  // namespace uexec::policy
