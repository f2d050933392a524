"""soak_proc.py: /proc probes and the private daemon, for the soak suite."""
import os
import resource
import signal
import socket
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def read_text(path, default=None):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return default


def stat_fields(pid):
    """(comm, fields after the comm) of /proc/PID/stat, or None."""
    st = read_text(f"/proc/{pid}/stat")
    if not st:
        return None
    lp, rp = st.find("("), st.rfind(")")
    return st[lp + 1:rp], st[rp + 2:].split()


def status_kib(pid, field):
    txt = read_text(f"/proc/{pid}/status", "")
    for line in txt.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def rss_kib(pid):
    return status_kib(pid, "VmRSS")


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def fd_targets(pid):
    out = {}
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in names:
        try:
            out[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    return out


def cpu_seconds(pid):
    f = stat_fields(pid)
    if not f:
        return 0.0
    return (int(f[1][11]) + int(f[1][12])) / CLK_TCK


def malloc_trim(pid):
    """Diagnosis only: calls malloc_trim(0) inside the process with gdb, so a VmRSS that stays
    high can be told apart (allocator retention vs. live memory). None without gdb."""
    import shutil
    if not shutil.which("gdb"):
        return None
    try:
        subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "call (int)malloc_trim(0)"],
                       capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return rss_kib(pid)


def malloc_in_use(pid, log_path):
    """glibc's "in use bytes" (all arenas and mmaps) of a daemon whose stderr goes to log_path:
    malloc_stats() is called through gdb and its report read back from the log. None without gdb."""
    import re
    import shutil
    if not shutil.which("gdb"):
        return None
    try:
        start = os.path.getsize(log_path)
        subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "call (void)malloc_stats()"],
                       capture_output=True, timeout=60)
        with open(log_path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Total \(incl\. mmap\):\s+system bytes\s+=\s+(\d+)\s+in use bytes\s+=\s+(\d+)", text)
    return int(m.group(2)) if m else None


def all_pids():
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def children(ppid):
    """[(pid, comm, state)] of the processes whose parent is ppid."""
    out = []
    for pid in all_pids():
        f = stat_fields(pid)
        if f and len(f[1]) > 2 and int(f[1][1]) == ppid:
            out.append((pid, f[0], f[1][0]))
    return out


def zombies(ppid):
    return [c for c in children(ppid) if c[2] == "Z"]


def marked(marker):
    """Live (non-zombie) processes whose environment carries `marker` (NAME=VALUE)."""
    needle = marker.encode()
    out = []
    me = os.getpid()
    for pid in all_pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            f = stat_fields(pid)
            if f and f[1][0] != "Z":
                out.append((pid, f[0], f[1][0]))
    return out


def kill_marked(marker, rounds=50):
    """SIGKILLs every process carrying `marker`, repeatedly (a fork bomb may still fork)."""
    n = 0
    for _ in range(rounds):
        left = marked(marker)
        if not left:
            break
        for pid, _, _ in left:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        for pid, _, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except OSError:
                pass
        time.sleep(0.05)
    return n


def cmdline_has(text):
    needle = text.encode()
    out = []
    me = os.getpid()
    for pid in all_pids():
        if pid == me:
            continue
        c = read_text(f"/proc/{pid}/cmdline")
        if c and needle in c.encode():
            out.append((pid, c.replace("\0", " ")[:120]))
    return out


def wait_for(pred, timeout, step=0.05):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= end:
            return v
        time.sleep(step)


class Daemon:
    """A private `uexec serve --socket <tmp>/uexec.sock --no-ws`, its log in a file."""

    def __init__(self, uexec, tmpdir, name="daemon", nofile=None, env=None):
        self.uexec = uexec
        self.dir = os.path.join(tmpdir, name)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        os.chmod(self.dir, 0o700)
        self.sock = os.path.join(self.dir, "uexec.sock")
        self.log_path = os.path.join(self.dir, "serve.log")
        self.nofile = nofile
        self.env = dict(env or os.environ, UEXEC_SOCKET=self.sock)
        self.proc = None
        self.holder = None  # `uexec serve` is the holder; the daemon proper is its child
        self._daemon = None
        self.exit_code = None

    @property
    def pid(self):
        """The daemon: the holder's child named uexec (src/holder/holder.h); a new one after a
        crash. The holder itself when it has none (started with --no-holder, or in between)."""
        if self.holder is None:
            return None
        if self._daemon is not None:
            f = stat_fields(self._daemon)
            if f and len(f[1]) > 2 and int(f[1][1]) == self.holder and f[1][0] != "Z":
                return self._daemon
        kids = [c[0] for c in children(self.holder) if c[1] == "uexec" and c[2] != "Z"]
        self._daemon = kids[0] if kids else None
        return self._daemon if self._daemon is not None else self.holder

    def start(self, timeout=15):
        log = open(self.log_path, "ab")
        pre = None
        if self.nofile:
            n = self.nofile

            def pre():  # the daemon raises its soft limit to the hard one: lower both
                resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
        self.proc = subprocess.Popen([self.uexec, "serve", "--socket", self.sock, "--no-ws"],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env,
                                     cwd=self.dir, preexec_fn=pre, start_new_session=True)
        log.close()
        self.holder = self.proc.pid
        # The socket file appears at bind(), a moment before listen(): wait for a connection.
        ok = wait_for(lambda: self._connectable() or self.proc.poll() is not None, timeout, 0.02)
        if not ok or self.proc.poll() is not None:
            raise RuntimeError(f"daemon did not start (exit {self.proc.poll()}): {self.log_tail()}")
        return self

    def _connectable(self):
        if not os.path.exists(self.sock):
            return False
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.sock)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def exit_text(self):
        rc = self.proc.poll() if self.proc else None
        if rc is None:
            return "running"
        if rc < 0:
            try:
                return f"killed by {signal.Signals(-rc).name}"
            except ValueError:
                return f"killed by signal {-rc}"
        return f"exit {rc}"

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=3000):
        t = read_text(self.log_path, "")
        return t[-n:]

    def log_grep(self, *words):
        t = read_text(self.log_path, "")
        return [ln for ln in t.splitlines() if any(w in ln for w in words)]

    def stop(self, timeout=20):
        """SIGTERM, as an operator would; returns the exit code (None if it had to be killed)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.exit_code = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.exit_code = None
        else:
            self.exit_code = self.proc.returncode
        return self.exit_code
