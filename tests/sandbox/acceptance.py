#!/usr/bin/env python3
"""The security acceptance table (docs/sandbox.md §7) against `uexec sandbox`.

usage: acceptance.py UEXEC SANDBOX_PROBE [TSV] [--backend namespaces]

Every row of acceptance.tsv runs once per mode (read-only, workspace-write, workspace-write
with network, danger-full-access) in a fresh workspace, through
`uexec sandbox --mode MODE --log-denials -- sandbox-probe PROBE ARGS`, and the probe's
answer is compared with the table. Denied rows whose errno the denial predicate must
recognise (EROFS, EACCES, EPERM, EBUSY, EXDEV) and SIGSYS rows must also be reported as
sandbox denials by uexec; ESRCH, ENOSYS, ECONNREFUSED and ENOENT must not be. Rows the
host cannot run are printed as SKIP with the reason, rows not built yet as TODO: neither
counts as a pass.
"""
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

MODES = [("RO", ["--mode", "read-only"]),
         ("WW", ["--mode", "workspace-write"]),
         ("WW+N", ["--mode", "workspace-write", "--network", "on"]),
         ("FULL", ["--mode", "danger-full-access"])]
PREDICATE_ERRNOS = {"EROFS", "EACCES", "EPERM", "EBUSY", "EXDEV"}
QUIET_ERRNOS = {"ESRCH", "ENOSYS", "ECONNREFUSED", "ENOENT"}
# Probes whose EPERM comes from the seccomp filter: the namespace backend's init must also
# report them as authoritative records ("seccomp denied …"), not only through the predicate.
SECCOMP_PROBES = {"tcp_connect", "tcp_listen", "udp_send", "netlink_route", "netlink_other",
                  "ptrace_child", "process_vm_readv", "mount_tmpfs", "unshare_user", "setuid_file",
                  "setuid_tmpfile", "open_by_handle_at", "tiocsti", "tioclinux"}
# Where a backend differs from the table on purpose (docs/sandbox.md §3.9): bwrap has no Landlock
# layer, so nothing scopes abstract unix sockets once the network namespace is the host's.
BACKEND_DIFFERENCES = {
    ("bwrap", "connect to a host abstract unix socket", "WW+N"): "allow",
    # bwrap has no pid 1 of ours to mask later: deny-read is a launch-time snapshot there.
    ("bwrap", "read deny-read file created after launch", "RO"): "allow",
    ("bwrap", "read deny-read file created after launch", "WW"): "allow",
    ("bwrap", "read deny-read file created after launch", "WW+N"): "allow",
    ("bwrap", "read deny-read file created after launch", "FULL"): "allow",
}


def load(tsv):
    rows = []
    for line in open(tsv, encoding="utf-8"):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if len(f) != 8:
            sys.exit(f"acceptance.tsv: 8 columns expected: {line!r}")
        rows.append({"name": f[0], "probe": f[1], "args": f[2], "flags": f[3],
                     "expect": dict(zip([m for m, _ in MODES], f[4:]))})
    return rows


class Host:
    """What the probes reach for on the host: listeners, a host pid, an open fd."""

    def __init__(self, base):
        self.base = base
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(64)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.abstract_name = f"uexec-acceptance-{os.getpid()}"
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen(64)
        self.sock_path = os.path.join(base, "host.sock")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.sock_path)
        self.unix.listen(64)
        self.fd_target = os.path.join(base, "fd-target")
        fd = os.open(self.fd_target, os.O_WRONLY | os.O_CREAT, 0o644)
        self.fd = 7
        os.dup2(fd, self.fd, inheritable=True)
        os.close(fd)
        self.outside = os.path.join(base, "outside-file")
        with open(self.outside, "w") as f:
            f.write("outside\n")
        # A host process that is not our ancestor.
        self.sleeper = subprocess.Popen(["sleep", "600"])

    def close(self):
        self.sleeper.kill()
        self.sleeper.wait()
        for s in (self.tcp, self.udp, self.abstract, self.unix):
            s.close()


def make_workspace(base, n):
    ws = os.path.join(base, f"ws{n}")
    os.makedirs(os.path.join(ws, ".git", "hooks"))
    with open(os.path.join(ws, ".git", "config"), "w") as f:
        f.write("[core]\n")
    with open(os.path.join(ws, "secret.env"), "w") as f:
        f.write("TOKEN=hunter2\n")
    os.symlink("/etc/uexec-acceptance-link", os.path.join(ws, "link-to-etc"))
    return ws


def outcome(proc):
    """allow | deny:ERRNO | sigsys | error:..."""
    if proc.returncode in (128 + 31, -31):
        return "sigsys"
    out = proc.stdout.strip().splitlines()
    first = out[0] if out else ""
    if proc.returncode == 0 and first == "allow":
        return "allow"
    if proc.returncode == 1 and first.startswith("deny "):
        return "deny:" + first.split()[1].rstrip(":")
    return f"error:exit {proc.returncode}: {proc.stdout.strip()} {proc.stderr.strip()}"[:300]


def matches(expect, got):
    if expect == "allow":
        return got == "allow"
    if expect == "deny":
        return got.startswith("deny:") or got == "sigsys"
    if expect.startswith("deny:"):
        return got == expect
    if expect == "sigsys":
        return got == "sigsys"
    return False


def main():
    uexec, probe = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tsv = sys.argv[3] if len(sys.argv) > 3 and not sys.argv[3].startswith("--") else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "acceptance.tsv")
    backend = "namespaces"
    if "--backend" in sys.argv:
        backend = sys.argv[sys.argv.index("--backend") + 1]
    rows = load(tsv)
    check = subprocess.run([uexec, "sandbox", "--check"], capture_output=True, text=True)
    print(check.stdout, end="")
    if "user namespaces: yes" not in check.stdout:
        print("SKIP all rows: user namespaces do not work on this host (the namespace backend refuses)")
        return 0
    base = tempfile.mkdtemp(prefix="uexec-acceptance-", dir="/var/tmp")
    # The probe runs from outside /tmp: a private /tmp would hide a build tree under /tmp.
    shutil.copy2(probe, os.path.join(base, "sandbox-probe"))
    probe = os.path.join(base, "sandbox-probe")
    host = Host(base)
    home = os.environ.get("HOME", "/root")
    # Probes whose mechanism this kernel lacks outside any sandbox: nothing there to deny.
    # int 0x80 faults (SIGSEGV) when the kernel has no IA32 emulation (CONFIG_IA32_EMULATION
    # off, or ia32_emulation=0): seen on some kernels of this machine kind.
    missing = {}
    plain = subprocess.run([probe, "i386"], capture_output=True, text=True, timeout=60)
    if plain.returncode in (-11, 128 + 11):
        missing["i386"] = "this kernel has no 32-bit syscall entry (int 0x80 faults unsandboxed too)"
    counts = {"pass": 0, "fail": 0, "todo": 0, "skip": 0}
    n = 0
    try:
        for row in rows:
            for mode, mode_flags in MODES:
                n += 1
                expect = row["expect"][mode]
                label = f"{row['name']} [{mode}]"
                if (backend, row["name"], mode) in BACKEND_DIFFERENCES:
                    expect = BACKEND_DIFFERENCES[(backend, row["name"], mode)]
                    label += f" ({backend} differs by design)"
                if expect.startswith("todo:"):
                    counts["todo"] += 1
                    print(f"TODO {label}: {expect[5:]}")
                    continue
                if expect == "host":
                    counts["skip"] += 1
                    continue  # host permissions decide; nothing of ours to check
                if row["probe"] in missing:
                    counts["skip"] += 1
                    print(f"SKIP {label}: {missing[row['probe']]}")
                    continue
                if row["probe"] in ("setuid_file", "setuid_tmpfile") and os.geteuid() != 0:
                    counts["skip"] += 1
                    print(f"SKIP {label}: needs root")
                    continue
                ws = make_workspace(base, n)
                subs = {"ws": ws, "outside": host.outside, "port": str(host.tcp.getsockname()[1]),
                        "udp": str(host.udp.getsockname()[1]), "abstract": host.abstract_name,
                        "sock": host.sock_path, "hostpid": str(host.sleeper.pid), "fd": str(host.fd),
                        "home": home, "pid": str(os.getpid())}
                if row["probe"] == "append" and row["args"] == "{ws}/hardlink":
                    os.link(host.outside, os.path.join(ws, "hardlink"))
                args = [] if row["args"] == "-" else [a.format(**subs) for a in row["args"].split(" ")]
                flags = [] if row["flags"] in ("-", "tty") else row["flags"].split(" ")
                if row["flags"] == "tty":
                    sandbox_flags = [f if f != "--mode" else "--sandbox" for f in mode_flags]
                    cmd = [uexec, "run", "--tty", *sandbox_flags, "--backend", backend, "--log-denials"]
                else:
                    cmd = [uexec, "sandbox", *mode_flags, "--backend", backend, "--log-denials", *flags]
                if mode == "FULL" and not flags and row["flags"] != "tty":
                    cmd = [c for c in cmd if c not in ("--backend", backend)]  # nothing to enforce
                cmd += ["--", probe, row["probe"], *args]
                if row["probe"] == "read_late":
                    # The host writes the file after the sandbox started: once the probe says it
                    # is waiting (its first stderr line; a slow start, under a sanitizer or a
                    # loaded machine, must not let the file exist at launch), then 0.3 s later.
                    child = subprocess.Popen(cmd, cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             text=True, pass_fds=(host.fd,), stdin=subprocess.DEVNULL)
                    seen, deadline = b"", time.time() + 30
                    while b"waiting\n" not in seen and time.time() < deadline:
                        ready, _, _ = select.select([child.stderr], [], [], 1)
                        if ready:  # read the fd itself: the text wrapper keeps no bytes back
                            piece = os.read(child.stderr.fileno(), 4096)
                            if not piece:
                                break
                            seen += piece
                    time.sleep(0.3)
                    with open(args[0], "w") as f:
                        f.write("TOKEN=late\n")
                    out, err = child.communicate(timeout=60)
                    err = seen.decode(errors="replace") + err
                    proc = subprocess.CompletedProcess(cmd, child.returncode, out, err)
                else:
                    proc = subprocess.run(cmd, cwd=ws, capture_output=True, text=True, timeout=60,
                                          pass_fds=(host.fd,), stdin=subprocess.DEVNULL)
                got = outcome(proc)
                ok = matches(expect, got)
                why = ""
                sandboxed = mode != "FULL" or bool(flags)
                reported = "sandbox (" in proc.stderr and "denied:" in proc.stderr
                if ok and sandboxed:
                    errno_name = got.split(":", 1)[1] if got.startswith("deny:") else ""
                    if (errno_name in PREDICATE_ERRNOS or got == "sigsys") and not reported:
                        ok, why = False, "denied, but uexec did not report a sandbox denial"
                    if (backend == "namespaces" and errno_name == "EPERM" and row["probe"] in SECCOMP_PROBES
                            and "seccomp denied" not in proc.stderr):
                        ok, why = False, "no seccomp record from the sandbox's init"
                    if errno_name in QUIET_ERRNOS and reported:
                        ok, why = False, "reported as a sandbox denial, which this errno must not be"
                if ok:
                    counts["pass"] += 1
                    print(f"ok   {label}: {got}")
                else:
                    counts["fail"] += 1
                    print(f"FAIL {label}: expected {expect}, got {got} {why}\n     {' '.join(cmd)}\n"
                          f"     stderr: {proc.stderr.strip()[:400]}")
                for leftover in (f"/tmp/uexec-acceptance-{os.getpid()}", f"{ws}-moved"):
                    if os.path.isdir(leftover):
                        shutil.rmtree(leftover, ignore_errors=True)
                    elif os.path.exists(leftover):
                        os.unlink(leftover)
    finally:
        host.close()
        shutil.rmtree(base, ignore_errors=True)
    print(f"acceptance ({backend}): {counts['pass']} passed, {counts['fail']} failed, "
          f"{counts['todo']} todo, {counts['skip']} skipped (host-decided or missing mechanism)")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
