#!/usr/bin/env python3
"""The sandbox's file rows through fs/* (issue 18): a sandboxed file call meets process/start's policy.

usage: holes_fs.py UEXEC [SANDBOX_PROBE]

Each case starts `uexec exec-server --listen stdio` as the identity in a hostile workspace and
sends fs/* calls carrying uexec's short-form sandbox (`workspace-write`, the backend under test,
deny-read globs), as a client that uses uexec as its whole execution environment would. The
rows: writes outside the writable roots, the `.git` carve-out (write, remove, rename over it by
copy), a symlink planted at the top of the workspace pointing outside, deny-read files read
directly, through a hard link that existed before the call and through a symlinked directory,
and reads of what the sandbox hides (the workspace's own files stay readable). Every refusal
must leave the file system as it was and say `sandboxDenied` (or, for a masked path, be an
error at all: a mask can read as missing). Per backend and identity, as the other hole suites.
"""
import base64
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import Suite, expect  # noqa: E402

if len(sys.argv) < 2:
    sys.exit(__doc__)
suite = Suite("holes-fs", sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)


class Files:
    """An exec-server as the case's identity, in its workspace, speaking NDJSON on stdio."""

    def __init__(self, ctx, deny_read=()):
        self.ctx, self.deny_read = ctx, list(deny_read)
        argv = ctx.ident.wrap([suite.uexec, "exec-server", "--listen", "stdio"])
        self.proc = subprocess.Popen(argv, cwd=ctx.ws, env=ctx.ident.env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next = 0
        self.call("initialize", {"clientName": "holes-fs"}, sandboxed=False)
        self.send({"method": "initialized", "params": {}})

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def call(self, method, params, sandboxed=True):
        if sandboxed:
            sb = {"mode": "workspace-write", "backend": self.ctx.backend}
            if self.deny_read:
                sb["denyRead"] = self.deny_read
            params = dict(params, sandbox=sb)
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            expect(line, f"{method}: the server closed its stdout")
            msg = json.loads(line)
            if msg.get("id") == self.next:
                return msg

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def uri(path):
    return "file://" + path


def b64(text):
    return base64.b64encode(text.encode()).decode()


def refused(r, what):
    """The call failed as a sandbox denial."""
    err = r.get("error")
    expect(err is not None, f"{what} succeeded: {r}")
    expect((err.get("data") or {}).get("kind") == "sandboxDenied", f"{what}: not reported as a sandbox denial: {err}")


def failed(r, what):
    """The call failed (a masked path may read as missing rather than denied)."""
    expect("error" in r, f"{what} succeeded: {json.dumps(r)[:300]}")


def with_files(ctx, fn, deny_read=()):
    f = Files(ctx, deny_read)
    try:
        fn(f)
    finally:
        f.close()


@suite.case("fs/writeFile, fs/createDirectory, fs/copy outside the workspace are refused; inside they work")
def _(ctx):
    ctx.write("src.txt", "payload\n")
    ctx.mkdir("sub")  # Landlock-only: nothing new at a root's top level beside a carve-out (docs/sandbox.md §3.6)

    def run(f):
        r = f.call("fs/writeFile", {"path": uri(ctx.path("sub/in.txt")), "dataBase64": b64("ok")})
        expect("result" in r, f"a write inside the workspace failed: {r}")
        refused(f.call("fs/writeFile", {"path": uri(ctx.outside + "/x"), "dataBase64": b64("escape")}), "a write outside")
        refused(f.call("fs/createDirectory", {"path": uri(ctx.outside + "/d")}), "a mkdir outside")
        refused(f.call("fs/copy", {"sourcePath": uri(ctx.path("src.txt")), "destinationPath": uri(ctx.outside + "/c"),
                                   "recursive": False}), "a copy outside")
        expect(os.listdir(ctx.outside) == [], f"something landed outside: {os.listdir(ctx.outside)}")
        expect(open(ctx.path("sub/in.txt")).read() == "ok", "the inside write did not land")
    with_files(ctx, run)


@suite.case("the .git carve-out holds against fs/writeFile, fs/remove and fs/copy over it")
def _(ctx):
    ctx.write("evil-config", "[core]\n\tfsmonitor = touch /tmp/pwned\n")

    def run(f):
        git_config = ctx.path(".git/config")
        refused(f.call("fs/writeFile", {"path": uri(git_config), "dataBase64": b64("[core]\n\tfsmonitor = x\n")}),
                "a write to .git/config")
        failed(f.call("fs/remove", {"path": uri(ctx.path(".git"))}), "removing .git")
        failed(f.call("fs/copy", {"sourcePath": uri(ctx.path("evil-config")), "destinationPath": uri(git_config),
                                  "recursive": False}), "copying over .git/config")
        expect(open(git_config).read() == "[core]\n", "the protected .git/config changed")
    with_files(ctx, run)


@suite.case("a symlink at the top of the workspace carries no write to its target")
def _(ctx):
    ctx.symlink(ctx.outside, "out")

    def run(f):
        refused(f.call("fs/writeFile", {"path": uri(ctx.path("out/x")), "dataBase64": b64("escape")}),
                "a write through the symlink")
        refused(f.call("fs/createDirectory", {"path": uri(ctx.path("out/d"))}), "a mkdir through the symlink")
        expect(os.listdir(ctx.outside) == [], f"something landed through the link: {os.listdir(ctx.outside)}")
    with_files(ctx, run)


@suite.case("deny-read: direct, through a hard link made before, through a symlinked directory")
def _(ctx):
    secret = ctx.write("keys/id.pem", "SECRET\n")
    outside_secret = os.path.join(ctx.outside, "key.pem")
    with open(outside_secret, "w") as fh:
        fh.write("OUTSIDE SECRET\n")
    ctx.ident.chown(ctx.base)
    os.link(secret, ctx.path("innocent.txt"))
    ctx.symlink(ctx.outside, "linkout")
    ctx.write("readme.txt", "public\n")

    def run(f):
        if ctx.backend == "landlock":  # Landlock has no deny rule: such a policy is refused, never weakened
            r = f.call("fs/readFile", {"path": uri(ctx.path("readme.txt"))})
            expect((r.get("error", {}).get("data") or {}).get("kind") == "sandboxUnavailable",
                   f"landlock with deny-read was not refused: {r}")
            return
        for path, what in ((secret, "the deny-read file"), (ctx.path("innocent.txt"), "its hard link"),
                           (ctx.path("linkout/key.pem"), "a deny-read file through a symlinked directory")):
            r = f.call("fs/readFile", {"path": uri(path)})
            failed(r, f"reading {what}")
            expect("SECRET" not in json.dumps(r) and "U0VDUkVU" not in json.dumps(r), f"{what} leaked: {r}")
        r = f.call("fs/readFile", {"path": uri(ctx.path("readme.txt"))})
        expect(base64.b64decode(r.get("result", {}).get("dataBase64", "")) == b"public\n",
               f"an ordinary file was not readable: {r}")
        r = f.call("fs/copy", {"sourcePath": uri(secret), "destinationPath": uri(ctx.path("copied.txt")),
                               "recursive": False})
        expect(not os.path.exists(ctx.path("copied.txt")) or "SECRET" not in open(ctx.path("copied.txt")).read(),
               "fs/copy copied the deny-read file's content")
    with_files(ctx, run, deny_read=["**/*.pem"])


sys.exit(suite.run())
