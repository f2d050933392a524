// containment.h: no descendant outlives its session (docs/agent.md §5.2).
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
//
// Limits (base::SessionLimits: memory, pids, cpu) use the same cgroups, by controller:
//   v2   the controller is (or can be) enabled in the subtree: the session's own cgroup
//        gets memory.max, pids.max and cpu.max. Needs the cgroup tier.
//   v1   a hybrid machine (this one: the controllers on systemd's v1 hierarchies, an empty
//        v2): each controller's own hierarchy gets `uexec-<pid>-<n>` beside the manager's
//        cgroup there and one directory per session below it (memory.limit_in_bytes,
//        pids.max, cpu.cfs_quota_us). The session's first process joins them by writing
//        "0" to their cgroup.procs, opened here (SpawnSpec::join_cgroups).
// A session asking for a controller that neither has is refused, never run unlimited.
// Loop thread only; the scans are synchronous and small (one file, or /proc's stat files).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/result.h"
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
class LimitGroup;

// One per manager: the cgroup subtree, when there is one.
class Containment {
 public:
  // Probes for a writable cgroup v2 (kAuto, kCgroup) and makes `uexec-<pid>` in it; falls
  // back to tracking (logged, with the reason). kCgroup without cgroups also falls back.
  // `owner`: the pid the subtree is named after (base::Config::containment_owner; 0: ours).
  // Another process's name means a subtree already there is taken over, not emptied.
  explicit Containment(base::ContainmentMode mode, pid_t owner = 0);
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
  // The group of a session taken over from an earlier daemon (holder/holder.h): its cgroup
  // `path` when it lies in our subtree and still exists, else tracked by its leader and `marker`
  // ("UEXEC_SESSION_ID=<id>", may be empty).
  // `adoptable`: adoptable_cgroup(path) when the caller looked already.
  std::unique_ptr<ContainmentGroup> adopt_group(const std::string& path, pid_t leader, std::string marker,
                                                std::optional<bool> adoptable = std::nullopt);
  // Whether `path` is a cgroup adopt_group may take: directly in our subtree, and there.
  bool adoptable_cgroup(const std::string& path) const;
  // The cgroup side of `limits` (memory, pids, cpu) for one session whose containment group
  // is `group` (may be null); `supervised`: a sandbox's namespaces (not in `group`'s cgroup).
  // kUnsupported, saying why, when a controller it needs is nowhere the manager can write.
  base::Result<std::unique_ptr<LimitGroup>> make_limits(const base::SessionLimits& limits,
                                                        ContainmentGroup* group, bool supervised);

 private:
  friend class ContainmentGroup;
  friend class LimitGroup;
  // Where one controller is: the v2 subtree, a v1 hierarchy (our directory there), or none.
  struct ControllerHome {
    bool probed = false;
    bool v2 = false;
    std::string v1_dir;  // "<mount><own path>/uexec-<pid>-<n>", made on first use
    std::string why;     // why it is in neither
  };
  ControllerHome& home(int controller);
  void retire(std::string path);  // rmdir now, or later if it is still populated
  void sweep_retired();
  void remove_stale_in(const std::string& parent);  // subtrees of managers that died

  std::string root_;
  base::UniqueFd root_fd_;
  std::string why_not_;
  unsigned instance_ = 0;  // the <n> of uexec-<pid>-<n>
  pid_t owner_;            // the <pid>
  std::uint64_t next_ = 1;
  ControllerHome homes_[3];  // memory, pids, cpu
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
  // The session's leader (its pid is its session id). Call once spawned: the directory's fd,
  // needed only for the leader to be born in the cgroup, is closed (one fd less per session
  // for the manager to hold and every later child to copy and close at its exec).
  void set_leader(pid_t pid) noexcept {
    leader_ = pid;
    dir_.reset();
  }
  // The session's processes alive now, the leader excluded.
  std::vector<pid_t> members() const;
  // Its cgroup's directory; empty for the other tiers.
  const std::string& path() const noexcept { return path_; }
  // "UEXEC_SESSION_ID=<id>" when the tracked tier looks for it, or empty.
  const std::string& marker() const noexcept { return marker_; }
  // Kills every member (cgroup.kill, or per pid) and says who they were.
  std::vector<LingeringProcess> kill_all();

 private:
  friend class Containment;
  ContainmentGroup(Containment* owner, ContainmentTier tier) : owner_(owner), tier_(tier) {}
  std::vector<pid_t> tracked_members() const;

  Containment* owner_;
  ContainmentTier tier_;
  std::string path_;         // the cgroup's directory
  base::UniqueFd dir_;       // the cgroup's directory, until the leader is spawned
  std::string marker_;       // "UEXEC_SESSION_ID=<id>", or empty
  pid_t leader_ = -1;
};

// What the kernel did to a session under its limits (summed over its controllers).
struct LimitEvents {
  std::uint64_t oom_kills = 0;      // processes the OOM killer ended under memory_max_bytes
  std::uint64_t pids_max_hits = 0;  // forks refused by pids_max
  std::uint64_t throttled_us = 0;   // time cpu_max held it back
};

// One session's limit cgroups. Destroying it removes them (later, when killed processes are
// still exiting).
class LimitGroup {
 public:
  ~LimitGroup();
  LimitGroup(const LimitGroup&) = delete;
  LimitGroup& operator=(const LimitGroup&) = delete;

  // cgroup.procs fds for SpawnSpec::join_cgroups.
  std::vector<int> join_fds() const;
  LimitEvents events() const;

 private:
  friend class Containment;
  explicit LimitGroup(Containment* owner) : owner_(owner) {}
  struct Dir {
    int controller;
    bool v2;
    std::string path;
    bool owned;  // made for this group (v1), not the containment group's cgroup (v2)
    base::UniqueFd procs;
  };
  Containment* owner_;
  std::vector<Dir> dirs_;
};

// Waits at most `max` for killed processes to be gone, reaping those that are our children
// (re-parented orphans). For shutdown: it blocks.
void await_gone(const std::vector<pid_t>& pids, std::chrono::milliseconds max);

// `pid` as a LingeringProcess (not killed): its comm and command line (NULs as spaces,
// ≤ 200 characters; the comm in brackets when it has none).
LingeringProcess describe_process(pid_t pid);

}  // namespace uexec::session
