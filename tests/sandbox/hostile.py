"""Shared harness for the hostile-workspace regression suites (tests/sandbox/holes_*.py).

Each suite attacks the sandbox the way an agent inside it would, once per backend that this
host can run and once per identity: root, and an unprivileged user that the set-up creates
(`uexec-unpriv`) when the suite runs as root. A suite is a list of cases; each case is a
function `case(ctx) -> None` that raises `Fail(why)` (or `Skip(why)`) and otherwise passes.

    from hostile import Suite, Fail, Skip
    suite = Suite("write-paths", uexec, probe)
    @suite.case("symlink at the top of the workspace", backends=("landlock", "namespaces", "bwrap"))
    def _(ctx):
        ctx.symlink("/etc", "e")
        r = ctx.sandbox(["sh", "-c", "echo x > e/uexec-hole"])
        ...
    sys.exit(suite.run())

`ctx` gives a fresh workspace owned by the identity (its cwd), `ctx.sandbox(argv, flags)` runs
`uexec sandbox --backend B FLAGS -- argv` as that identity, and `ctx.outside` is a directory
outside the workspace that the identity owns (so a write there succeeding is a real escape,
not a permission failure). The closing line is "N passed, N failed, N skipped".
"""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import traceback

UNPRIV_USER = "uexec-unpriv"
ALL_BACKENDS = ("namespaces", "landlock", "bwrap")


class Fail(Exception):
    pass


class Skip(Exception):
    pass


class Identity:
    def __init__(self, name, uid, gid, home):
        self.name, self.uid, self.gid, self.home = name, uid, gid, home

    @property
    def is_root(self):
        return self.uid == 0

    def wrap(self, argv):
        """argv run as this identity (setpriv keeps no capabilities for a non-root uid)."""
        if self.uid == os.geteuid():
            return list(argv)
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--", *argv]

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("XDG_", "UEXEC_", "SSH_AUTH_SOCK")) or k == "UEXEC_PTY_CHILD"}
        env.update({"HOME": self.home, "USER": self.name, "LOGNAME": self.name,
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        if extra:
            env.update(extra)
        return env

    def chown(self, path):
        if os.geteuid() == 0 and self.uid != 0:
            for root, dirs, files in os.walk(path):
                for n in dirs + files:
                    try:
                        os.lchown(os.path.join(root, n), self.uid, self.gid)
                    except FileNotFoundError:
                        pass  # a stub (.uexec, …) a sandbox that just ended released meanwhile
            os.lchown(path, self.uid, self.gid)


def ensure_unpriv_user():
    """The unprivileged test user, created (no password, a home) when missing. Root only."""
    try:
        pw = pwd.getpwnam(UNPRIV_USER)
    except KeyError:
        made = subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", UNPRIV_USER],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:  # a suite running beside this one may have made it first
            pw = pwd.getpwnam(UNPRIV_USER)
        except KeyError:
            raise subprocess.CalledProcessError(made.returncode, "useradd " + UNPRIV_USER)
    return Identity(pw.pw_name, pw.pw_uid, pw.pw_gid, pw.pw_dir)


def identities():
    me = pwd.getpwuid(os.geteuid())
    out = [Identity(me.pw_name, me.pw_uid, me.pw_gid, os.environ.get("HOME", me.pw_dir))]
    if os.geteuid() == 0:
        try:
            out.append(ensure_unpriv_user())
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"note: no unprivileged user ({e}); root only")
    return out


def host_backends(uexec):
    """Backends `uexec sandbox --check` says this host runs."""
    out = subprocess.run([uexec, "sandbox", "--check"], capture_output=True, text=True).stdout
    have = []
    if "user namespaces: yes" in out and "uexec-init:      loaded" in out:
        have.append("namespaces")
    for line in out.splitlines():
        if line.startswith("landlock ABI:"):
            try:
                if int(line.split(":", 1)[1].split()[0]) >= 2:
                    have.append("landlock")
            except ValueError:
                pass
    if "bwrap:" in out and "not installed" not in out:
        have.append("bwrap")
    return have, out


class Ctx:
    """One case, one backend, one identity: a fresh workspace and an outside directory."""

    def __init__(self, suite, backend, ident, base):
        self.suite, self.backend, self.ident = suite, backend, ident
        self.base = base
        self.ws = os.path.join(base, "ws")
        self.outside = os.path.join(base, "outside")
        os.makedirs(os.path.join(self.ws, ".git"))
        with open(os.path.join(self.ws, ".git", "config"), "w") as f:
            f.write("[core]\n")
        os.makedirs(self.outside)
        ident.chown(base)

    def path(self, rel):
        return rel if rel.startswith("/") else os.path.join(self.ws, rel)

    def write(self, rel, text="x\n", mode=None):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        if mode is not None:
            os.chmod(p, mode)
        self.ident.chown(self.base)
        return p

    def mkdir(self, rel):
        p = self.path(rel)
        os.makedirs(p, exist_ok=True)
        self.ident.chown(self.base)
        return p

    def symlink(self, target, rel):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        os.symlink(target, p)
        self.ident.chown(self.base)
        return p

    def run(self, argv, timeout=60, env=None, cwd=None, **kw):
        """argv as this identity in the workspace (outside any sandbox)."""
        return subprocess.run(self.ident.wrap(argv), cwd=cwd or self.ws, env=self.ident.env(env),
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, **kw)

    def sandbox(self, argv, flags=(), timeout=60, env=None, cwd=None):
        """`uexec sandbox --backend B FLAGS -- argv` as this identity, cwd the workspace."""
        cmd = [self.suite.uexec, "sandbox", "--backend", self.backend, *flags, "--", *argv]
        return self.run(cmd, timeout=timeout, env=env, cwd=cwd)

    def popen_sandbox(self, argv, flags=(), env=None, **kw):
        cmd = [self.suite.uexec, "sandbox", "--backend", self.backend, *flags, "--", *argv]
        return subprocess.Popen(self.ident.wrap(cmd), cwd=self.ws, env=self.ident.env(env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL, **kw)


class Suite:
    def __init__(self, name, uexec, probe=None):
        self.name = name
        self.uexec = os.path.abspath(uexec)
        self.probe = os.path.abspath(probe) if probe else None
        self.cases = []

    def case(self, label, backends=ALL_BACKENDS, root_only=False, unpriv_only=False):
        def deco(fn):
            self.cases.append((label, fn, tuple(backends), root_only, unpriv_only))
            return fn
        return deco

    def run(self):
        have, check = host_backends(self.uexec)
        print(check, end="")
        idents = identities()
        counts = {"pass": 0, "fail": 0, "skip": 0}
        for label, fn, backends, root_only, unpriv_only in self.cases:
            for ident in idents:
                if (root_only and not ident.is_root) or (unpriv_only and ident.is_root):
                    continue
                for backend in backends:
                    tag = f"{label} [{backend}, {ident.name}]"
                    if backend not in have:
                        counts["skip"] += 1
                        print(f"SKIP {tag}: this host has no {backend} backend")
                        continue
                    base = tempfile.mkdtemp(prefix=f"uexec-{self.name}-", dir="/var/tmp")
                    os.chmod(base, 0o755)
                    try:
                        fn(Ctx(self, backend, ident, base))
                        counts["pass"] += 1
                        print(f"ok   {tag}")
                    except Skip as e:
                        counts["skip"] += 1
                        print(f"SKIP {tag}: {e}")
                    except Fail as e:
                        counts["fail"] += 1
                        print(f"FAIL {tag}: {e}")
                    except Exception:  # a broken case is a failure, with its trace
                        counts["fail"] += 1
                        print(f"FAIL {tag}: the case raised\n{traceback.format_exc()}")
                    finally:
                        subprocess.run(["chattr", "-R", "-i", base], capture_output=True)
                        for root, dirs, _ in os.walk(base):
                            for d in dirs:
                                try:
                                    os.chmod(os.path.join(root, d), 0o755)
                                except OSError:
                                    pass
                        shutil.rmtree(base, ignore_errors=True)
        print(f"{self.name}: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
        return 1 if counts["fail"] else 0


def expect(cond, why):
    if not cond:
        raise Fail(why)


def describe(proc):
    return f"exit {proc.returncode}; stdout {proc.stdout.strip()[:200]!r}; stderr {proc.stderr.strip()[:300]!r}"
