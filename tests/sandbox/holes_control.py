"""The sandbox never reaches the control plane, and unreachable sockets are never fatal.

    python3 tests/sandbox/holes_control.py build/src/uexec [build/tests/sandbox/sandbox-probe]

Cases (each backend, as root and as the unprivileged user; see hostile.py):
  - a daemon (`uexec serve`) with its socket in a custom directory, its token in another one
    and a WebSocket port: from inside each backend, in read-only and workspace-write, with the
    network on and off, reading the token, connecting to the socket and opening a WebSocket
    session on the port all fail (with the network off the TCP connect itself fails), and a
    plain `echo ok` works; `--log-denials` lists the token's read with its path;
  - the same with the socket and token in /tmp, a writable root: masked in namespaces and
    bwrap; refused by the Landlock-only backend with the network on;
  - another user's listening socket in a 0700 directory (as root: the unprivileged user's; as
    that user: root's): `uexec sandbox -- echo ok` prints ok;
  - bwrap twice in a row (its mask file must not block the second run);
  - bwrap with a private XDG_RUNTIME_DIR.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import Suite, Fail, Skip, expect, describe, identities  # noqa: E402

uexec = sys.argv[1] if len(sys.argv) > 1 else "build/src/uexec"
probe = sys.argv[2] if len(sys.argv) > 2 else None
suite = Suite("control-plane", uexec, probe)

# Run inside the sandbox: what of the control plane it can reach, one word per reach.
REACH = r"""
import socket, sys
tok, sock, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
reached = []
token = ""
try:
    token = open(tok).read().strip()
    reached.append("read-token")
except OSError:
    pass
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sock)
    reached.append("connect-socket")
except OSError:
    pass
tcp = False
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    tcp = True
    s.sendall(("GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
               "Authorization: Bearer %s\r\n\r\n" % (port, token or "none")).encode())
    head = s.recv(200).decode("latin-1")
    if " 101 " in head.split("\r\n", 1)[0]:
        reached.append("open-websocket")
except OSError:
    pass
if tcp:
    reached.append("tcp-connect")
print("REACHED=" + ",".join(reached))
"""


def wait_for(pred, what, proc, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise Fail(f"{what} (daemon exit {proc.poll()})")


class Daemon:
    """`uexec serve` as the case's identity: socket in base/ctl, token in base/secret."""

    def __init__(self, ctx, ctl=None, secret=None):
        self.ctx = ctx
        self.ctl = ctl or os.path.join(ctx.base, "ctl")
        self.secret = secret or os.path.join(ctx.base, "secret")
        os.makedirs(self.ctl, mode=0o700, exist_ok=True)
        os.makedirs(self.secret, mode=0o700, exist_ok=True)
        self.sock = os.path.join(self.ctl, "d.sock")
        self.token_file = os.path.join(self.secret, "tok")
        with open(self.token_file, "w") as f:
            f.write("control-plane-test-token\n")
        os.chmod(self.token_file, 0o600)
        for d in (ctx.base, self.ctl, self.secret):
            ctx.ident.chown(d)
        self.err = tempfile.TemporaryFile(mode="w+")
        cmd = [ctx.suite.uexec, "serve", "--socket", self.sock, "--ws", "127.0.0.1:0", "--no-web",
               "--token-file", self.token_file]
        self.proc = subprocess.Popen(ctx.ident.wrap(cmd), cwd=ctx.base, env=ctx.ident.env(),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        self.port = 0

        def listening():
            self.err.seek(0)
            text = self.err.read()
            if "listening on ws://" not in text:
                return False
            self.port = int(text.split("listening on ws://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
            return True
        wait_for(listening, "the daemon did not listen", self.proc)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


@suite.case("a daemon's token, socket and WebSocket from every mode, network on and off")
def _(ctx):
    d = Daemon(ctx)
    try:
        # The harness itself reaches all three outside any sandbox: the probe is sound.
        outside = ctx.run(["python3", "-c", REACH, d.token_file, d.sock, str(d.port)])
        expect("REACHED=read-token,connect-socket,open-websocket,tcp-connect" in outside.stdout,
               "outside the sandbox the probe should reach everything: " + describe(outside))
        problems = []
        for mode in ("read-only", "workspace-write"):
            for network in ("on", "off"):
                flags = ["--sandbox", mode, "--network", network]
                r = ctx.sandbox(["python3", "-c", REACH, d.token_file, d.sock, str(d.port)], flags)
                line = next((l for l in r.stdout.splitlines() if l.startswith("REACHED=")), None)
                if r.returncode != 0 or line is None:
                    problems.append(f"{mode}/network {network}: the probe did not run: {describe(r)}")
                    continue
                reached = [w for w in line[len("REACHED="):].split(",") if w]
                bad = [w for w in reached if w != "tcp-connect" or network == "off"]
                if bad:
                    problems.append(f"{mode}/network {network}: reached {','.join(bad)}")
                ok = ctx.sandbox(["echo", "ok"], flags)
                if ok.stdout.strip() != "ok":
                    problems.append(f"{mode}/network {network}: echo ok: {describe(ok)}")
        expect(not problems, "; ".join(problems))
        # --log-denials names the read of what the sandbox hides, with the path (row 12).
        r = ctx.sandbox(["python3", "-c", REACH, d.token_file, d.sock, str(d.port)], ["--log-denials"])
        expect(f"filesystem denied openat {d.token_file} (fs_read)" in r.stderr,
               "the token's read is not listed: " + describe(r))
    finally:
        d.close()


@suite.case("a daemon whose socket and token lie in /tmp, a writable root")
def _(ctx):
    tmp_ctl = tempfile.mkdtemp(prefix="uexec-control-tmp-", dir="/tmp")
    try:
        d = Daemon(ctx, ctl=tmp_ctl, secret=tmp_ctl)
        try:
            for network in ("on", "off"):
                flags = ["--sandbox", "workspace-write", "--network", network]
                r = ctx.sandbox(["python3", "-c", REACH, d.token_file, d.sock, str(d.port)], flags)
                if ctx.backend == "landlock" and network == "on":
                    # Landlock cannot take a path out of a writable root: refused, never weakened.
                    expect(r.returncode == 125 and "PolicyNotExpressible" in r.stderr and d.token_file in r.stderr,
                           "landlock, network on, a token in /tmp: should be refused: " + describe(r))
                    continue
                line = next((l for l in r.stdout.splitlines() if l.startswith("REACHED=")), "")
                reached = [w for w in line[len("REACHED="):].split(",") if w]
                if ctx.backend == "landlock":
                    # Network off: the token stays readable (documented), nothing else is reachable.
                    expect(line and not set(reached) - {"read-token"}, f"network {network}: {describe(r)}")
                else:
                    bad = [w for w in reached if w != "tcp-connect" or network == "off"]
                    expect(line and not bad, f"network {network}: reached {bad}: {describe(r)}")
        finally:
            d.close()
    finally:
        shutil.rmtree(tmp_ctl, ignore_errors=True)


@suite.case("a daemon whose socket lies beside the workspace: its lock is hidden with the socket",
            backends=("namespaces", "bwrap"))
def _(ctx):
    # The socket's directory holds the workspace, so it cannot be hidden whole: the socket and
    # the lock serve holds beside it are hidden one by one. A sandbox that could open the lock
    # could hold it while no daemon runs and keep every later `uexec serve` there from starting.
    os.chmod(ctx.base, 0o700)
    d = Daemon(ctx, ctl=ctx.base, secret=os.path.join(ctx.base, "secret"))
    try:
        lock = d.sock + ".lock"
        expect(os.path.exists(lock), f"serve made no {lock}: {d.stderr()}")
        probe = ("import os, sys\n"
                 "try:\n    os.open(sys.argv[1], os.O_RDONLY); print('OPENED')\n"
                 "except OSError as e:\n    print('NOOPEN', e.errno)\n")
        for mode in ("read-only", "workspace-write"):
            r = ctx.sandbox(["python3", "-c", probe, lock], ["--sandbox", mode])
            expect(r.returncode == 0 and r.stdout.startswith("NOOPEN"), f"{mode}: {describe(r)}")
    finally:
        d.close()


def other_identity(ctx):
    """The other identity of the harness (root for the unprivileged user and vice versa)."""
    if os.geteuid() != 0:
        raise Skip("needs root (a second user)")
    for ident in identities():
        if ident.uid != ctx.ident.uid:
            return ident
    raise Skip("no second identity on this host")


@suite.case("another user's listening socket in a 0700 directory")
def _(ctx):
    other = other_identity(ctx)
    d = tempfile.mkdtemp(prefix="uexec-control-other-", dir="/run" if os.path.isdir("/run") else "/var/tmp")
    os.chmod(d, 0o700)
    listener = None
    try:
        path = os.path.join(d, "t.sock")
        script = ("import socket, sys, time\n"
                  "s = socket.socket(socket.AF_UNIX)\n"
                  f"s.bind({path!r}); s.listen(1)\n"
                  "print('listening', flush=True)\n"
                  "time.sleep(600)\n")
        os.chown(d, other.uid, other.gid)
        listener = subprocess.Popen(other.wrap(["python3", "-c", script]), stdout=subprocess.PIPE, text=True,
                                    env=other.env(), cwd="/")
        expect(listener.stdout.readline().strip() == "listening", "the other user's socket did not listen")
        for flags in ((), ("--sandbox", "read-only"), ("--network", "on")):
            r = ctx.sandbox(["echo", "ok"], list(flags))
            expect(r.returncode == 0 and r.stdout.strip() == "ok",
                   f"echo ok {' '.join(flags) or '(defaults)'} beside {path}: {describe(r)}")
    finally:
        if listener:
            listener.kill()
            listener.wait()
        shutil.rmtree(d, ignore_errors=True)


@suite.case("bwrap twice in a row", backends=("bwrap",))
def _(ctx):
    for i in (1, 2):
        r = ctx.sandbox(["echo", "ok"])
        expect(r.returncode == 0 and r.stdout.strip() == "ok", f"run {i}: {describe(r)}")


@suite.case("bwrap with a private XDG_RUNTIME_DIR", backends=("bwrap",))
def _(ctx):
    runtime = ctx.mkdir(os.path.join(ctx.base, "runtime"))
    os.chmod(runtime, 0o700)
    for flags in ((), ("--sandbox", "read-only")):
        r = ctx.sandbox(["echo", "ok"], list(flags), env={"XDG_RUNTIME_DIR": runtime})
        expect(r.returncode == 0 and r.stdout.strip() == "ok",
               f"echo ok {' '.join(flags) or '(defaults)'} with XDG_RUNTIME_DIR={runtime}: {describe(r)}")


sys.exit(suite.run())
