// containment.h: no descendant outlives its session (agent-semantics.md §5.2).
//
// A session's processes leave its process group freely: `setsid -f`, a double-forked
// daemon, `nohup cmd &`. Three tiers find them again, best first:
//
//   cgroup         each session gets its own cgroup v2 below `uexec-<manager pid>-<n>`, which the
//                  manager made in its own cgroup (a writable delegated subtree: here, root on
//                  the hybrid hierarchy's /sys/fs/cgroup/unified). The child joins it right
//                  after setsid, before exec, so nothing it forks is ever outside. Members are
//                  cgroup.procs; `cgroup.kill` kills them all at once, escapees included.
//   pid namespace  a sandboxed session's own pid namespace: the kernel kills every member
//                  when its init goes. Nothing to do here.
//   tracked        otherwise: one /proc scan finds processes whose session id is the leader's
//                  (what `&` and `nohup` keep), orphans re-parented to the manager (a child
//                  subreaper, see ChildReaper::adopt_orphans) whose environment carries the
//                  session's `UEXEC_SESSION_ID=<id>`, and every descendant of those. Each is
//                  killed through a pidfd after its start time is checked again (no pid-reuse
//                  kills), in up to 3 sweeps.
//
// A session ending (`closed`) kills what is left and records it as lingering processes.
// Loop thread only; the scans are synchronous and small (one file, or /proc's stat files).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/unique_fd.h"

namespace uexec::session {

// kNone: containment is off (Config::containment), descendants are left alone.
enum class ContainmentTier : unsigned char { kCgroup, kPidNamespace, kTracked, kNone };
const char* tier_name(ContainmentTier tier) noexcept;  // "cgroup", "pid-namespace", "tracked", "none"

// A process found alive when its session ended.
struct LingeringProcess {
  pid_t pid = 0;
  std::string comm;     // the kernel's name for it (/proc/<pid>/comm)
  std::string command;  // its cmdline, NULs as spaces, at most 200 characters
  bool killed = false;  // SIGKILL was delivered
};

class ContainmentGroup;

// One per manager: the cgroup subtree, when there is one.
class Containment {
 public:
  // Probes for a writable cgroup v2 (kAuto, kCgroup) and makes `uexec-<pid>` in it; falls
  // back to tracking (logged, with the reason). kCgroup without cgroups also falls back.
  explicit Containment(base::ContainmentMode mode);
  // Kills everything still in the subtree and removes it.
  ~Containment();
  Containment(const Containment&) = delete;
  Containment& operator=(const Containment&) = delete;

  bool cgroups() const noexcept { return root_fd_.valid(); }
  const std::string& cgroup_root() const noexcept { return root_; }  // empty without cgroups
  const std::string& why_not_cgroups() const noexcept { return why_not_; }

  // A group for one session; `env` is the session's environment (for the tracked tier's
  // UEXEC_SESSION_ID marker). Falls back to a tracked group if the cgroup cannot be made.
  std::unique_ptr<ContainmentGroup> make_group(const std::vector<std::string>& env);

 private:
  friend class ContainmentGroup;
  void retire(std::string path);  // rmdir now, or later if it is still populated
  void sweep_retired();
  void remove_stale_in(const std::string& parent);  // subtrees of managers that died

  std::string root_;
  base::UniqueFd root_fd_;
  std::string why_not_;
  std::uint64_t next_ = 1;
  std::vector<std::string> retired_;  // emptied cgroups waiting for their last zombie
};

// One session's processes.
class ContainmentGroup {
 public:
  ~ContainmentGroup();
  ContainmentGroup(const ContainmentGroup&) = delete;
  ContainmentGroup& operator=(const ContainmentGroup&) = delete;

  ContainmentTier tier() const noexcept { return tier_; }
  // The cgroup's directory, for the child to be born in (SpawnSpec::cgroup_fd), or -1.
  int cgroup_fd() const noexcept { return dir_.get(); }
  // The session's leader (its pid is its session id). Call once spawned.
  void set_leader(pid_t pid) noexcept { leader_ = pid; }
  // The session's processes alive now, the leader excluded.
  std::vector<pid_t> members() const;
  // Kills every member (cgroup.kill, or per pid) and says who they were.
  std::vector<LingeringProcess> kill_all();

 private:
  friend class Containment;
  ContainmentGroup(Containment* owner, ContainmentTier tier) : owner_(owner), tier_(tier) {}
  std::vector<pid_t> tracked_members() const;

  Containment* owner_;
  ContainmentTier tier_;
  std::string path_;         // the cgroup's directory
  base::UniqueFd dir_;       // the cgroup's directory
  std::string marker_;       // "UEXEC_SESSION_ID=<id>", or empty
  pid_t leader_ = -1;
};

// Waits at most `max` for killed processes to be gone, reaping those that are our children
// (re-parented orphans). For shutdown: it blocks.
void await_gone(const std::vector<pid_t>& pids, std::chrono::milliseconds max);

// `pid` as a LingeringProcess (not killed): its comm and command line (NULs as spaces,
// ≤ 200 characters; the comm in brackets when it has none).
LingeringProcess describe_process(pid_t pid);

}  // namespace uexec::session
