#!/usr/bin/env python3
"""Write-path holes of the sandbox (issue 19, rows 1, 2 and 13), attacked from a hostile workspace.

usage: holes_write.py UEXEC [SANDBOX_PROBE]

The workspace plays a cloned repository that ships what an attacker would put in it: symlinks
to /etc and to a directory the identity owns at its top and in a subdirectory, a `.git` file
whose `gitdir:` points into a writable `modules/` tree, nested repositories (`sub/.git` as a
directory and as a file). Each case runs per backend (namespaces, landlock, bwrap) and per
identity (root, and the unprivileged `uexec-unpriv` when run as root). The git cases play the
whole attack: the sandbox renames and replaces what it can, then the host runs a real
`git status` there, with the replacement's `core.fsmonitor` set to create a marker file; the
marker must not appear and the protected config must be unchanged.
"""
import os
import shutil
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import Suite, Fail, Skip, expect, describe  # noqa: E402

if len(sys.argv) < 2:
    sys.exit(__doc__)
suite = Suite("holes-write", sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
SETUP_FAILED = 125  # `uexec sandbox`: the sandbox could not be set up, nothing ran


def sh(ctx, script, flags=(), cwd=None):
    return ctx.sandbox(["sh", "-c", script], flags=flags, cwd=cwd)


def git_repo(ctx, worktree, gitdir=None):
    """A real repository at `worktree` (as the identity); with `gitdir`, a `.git` file naming it."""
    args = ["git", "init", "-q"]
    if gitdir:
        ctx.mkdir(os.path.dirname(gitdir))
        args += ["--separate-git-dir", gitdir]
    r = ctx.run(args + [worktree])
    expect(r.returncode == 0, f"git init {worktree}: {describe(r)}")


def host_git_status(ctx, worktree, marker):
    """`git status` on the host, as the identity; Fail when the agent's fsmonitor ran."""
    r = ctx.run(["git", "-c", "safe.directory=*", "-C", worktree, "status", "--porcelain"], timeout=60)
    expect(not os.path.exists(marker),
           f"the host's `git status` in {worktree} ran the sandbox's core.fsmonitor ({describe(r)})")


def fsmonitor_script(gitdir, marker):
    """Shell: a git dir at `gitdir` (relative or absolute) whose config runs `touch marker`."""
    return (f"mkdir -p {gitdir}/objects {gitdir}/refs && printf 'ref: refs/heads/main\\n' > {gitdir}/HEAD && "
            f"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tfsmonitor = touch {marker}\\n' "
            f"> {gitdir}/config")


def read(path):
    with open(path) as f:
        return f.read()


# ---- row 1: a symlink in the workspace must never carry a write grant to its target ----

@suite.case("symlink to /etc at the top of the workspace", root_only=True)
def _(ctx):
    ctx.symlink("/etc", "e")
    name = f"uexec-hole-{uuid.uuid4().hex[:8]}"
    try:
        r = sh(ctx, f"echo pwned > e/{name}")
        expect(not os.path.exists(f"/etc/{name}"), f"wrote /etc/{name} through the symlink ({describe(r)})")
        expect(r.returncode not in (0, SETUP_FAILED), f"the write was not refused: {describe(r)}")
    finally:
        if os.path.exists(f"/etc/{name}"):
            os.unlink(f"/etc/{name}")


@suite.case("symlink to the identity's own directory ($HOME) at the top of the workspace")
def _(ctx):
    ctx.symlink(ctx.outside, "h")
    ctx.write(os.path.join(ctx.outside, "existing"), "old\n")
    r = sh(ctx, "echo pwned > h/new; echo pwned > h/existing", flags=(), cwd=None)
    expect(not os.path.exists(os.path.join(ctx.outside, "new")),
           f"created a file outside the workspace through the symlink ({describe(r)})")
    expect(read(os.path.join(ctx.outside, "existing")) == "old\n",
           f"changed a file outside the workspace through the symlink ({describe(r)})")
    # The rest of the workspace stays writable (the landlock backend creates nothing at the
    # top of a root that holds protected names: existing entries), the symlink what it was.
    ctx.write("ok.txt", "")
    ctx.mkdir("d")
    r = sh(ctx, "echo ok > ok.txt && echo ok > d/f && mkdir d/e")
    expect(r.returncode == 0 and read(ctx.path("d/f")) == "ok\n", f"the workspace is no longer writable: {describe(r)}")
    expect(os.readlink(ctx.path("h")) == ctx.outside, "the symlink changed")


@suite.case("symlink to the identity's own directory inside a subdirectory")
def _(ctx):
    ctx.symlink(ctx.outside, "sub/h")
    r = sh(ctx, "echo pwned > sub/h/new")
    expect(not os.path.exists(os.path.join(ctx.outside, "new")),
           f"created a file outside the workspace through sub/h ({describe(r)})")


@suite.case("a top-level hard link does not make the file writable by its path outside")
def _(ctx):
    # Placed on the host (a sandbox cannot link across its mounts or Landlock hierarchies);
    # the file is the same through the link, but its outside path must stay read-only.
    target = ctx.write(os.path.join(ctx.outside, "victim"), "old\n")
    try:
        os.link(target, ctx.path("hl"))
    except OSError as e:
        raise Skip(f"no hard link across these directories ({e})")
    r = sh(ctx, f"echo pwned > {target}")
    expect(read(target) == "old\n", f"wrote {target} by its own path ({describe(r)})")


# ---- row 2: the gitdir carve-out must not be redirected by renaming what leads to it ----

@suite.case("rename and replace the writable tree a .git file's gitdir points into")
def _(ctx):
    shutil.rmtree(ctx.path(".git"))
    git_repo(ctx, ctx.ws, gitdir=ctx.path("modules/repo"))
    config = read(ctx.path("modules/repo/config"))
    marker = os.path.join(ctx.outside, "fsmonitor-ran")
    r = sh(ctx, "mv modules modules.old; mv modules/repo modules/repo.old; "
                f"{fsmonitor_script('modules/repo', marker)}")
    host_git_status(ctx, ctx.ws, marker)
    expect(read(ctx.path("modules/repo/config")) == config, f"the protected config changed ({describe(r)})")


@suite.case("rename and replace the tree of a relative gitdir in a subdirectory")
def _(ctx):
    ctx.mkdir("proj/sub")
    git_repo(ctx, ctx.path("proj/sub"), gitdir=ctx.path("proj/modules/sub"))
    ctx.write("proj/sub/.git", "gitdir: ../modules/sub\n")
    marker = os.path.join(ctx.outside, "fsmonitor-ran")
    sh(ctx, f"mv proj proj.old; mkdir -p proj/sub; echo 'gitdir: ../modules/sub' > proj/sub/.git; "
            f"{fsmonitor_script('proj/modules/sub', marker)}; "
            f"mv proj/modules proj/modules.old; {fsmonitor_script('proj/modules/sub', marker)}")
    host_git_status(ctx, ctx.path("proj/sub"), marker)


@suite.case("a gitdir reached through a symlink in the workspace cannot be retargeted")
def _(ctx):
    shutil.rmtree(ctx.path(".git"))
    git_repo(ctx, ctx.ws, gitdir=ctx.path("modules/repo"))
    ctx.symlink("modules", "link")
    ctx.write(".git", "gitdir: link/repo\n")
    marker = os.path.join(ctx.outside, "fsmonitor-ran")
    r = sh(ctx, f"{fsmonitor_script('evil/repo', marker)}; ln -sfn evil link || "
                f"{{ mv link link.old && ln -s evil link; }}")
    if r.returncode == SETUP_FAILED:
        return  # refused at launch: nothing ran
    host_git_status(ctx, ctx.ws, marker)


@suite.case("rename an ancestor of the workspace inside another writable root")
def _(ctx):
    inner = ctx.mkdir("a/inner")
    git_repo(ctx, inner)
    marker = os.path.join(ctx.outside, "fsmonitor-ran")
    sh(ctx, f"cd {ctx.ws} && mv a a.old; mkdir -p a/inner && {fsmonitor_script('a/inner/.git', marker)}",
       flags=("--writable", ctx.ws), cwd=inner)
    host_git_status(ctx, inner, marker)


# ---- row 13: every .git under a writable root that git would use is read-only ----

@suite.case("nested sub/.git directory: config, hooks and the directory itself")
def _(ctx):
    git_repo(ctx, ctx.mkdir("sub"))
    git_repo(ctx, ctx.mkdir("deep/er/repo"))
    config = read(ctx.path("sub/.git/config"))
    marker = os.path.join(ctx.outside, "fsmonitor-ran")
    r = sh(ctx, f"printf '\\tfsmonitor = touch {marker}\\n' >> sub/.git/config; "
                f"mkdir -p sub/.git/hooks && echo x > sub/.git/hooks/post-checkout; "
                f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> deep/er/repo/.git/config; "
                f"mv sub/.git sub/.git.old; mv sub sub.old; mkdir -p sub && {fsmonitor_script('sub/.git', marker)}")
    expect(read(ctx.path("sub/.git/config")) == config, f"sub/.git/config changed ({describe(r)})")
    expect(not os.path.exists(ctx.path("sub/.git/hooks/post-checkout")), "created sub/.git/hooks/post-checkout")
    host_git_status(ctx, ctx.path("sub"), marker)
    host_git_status(ctx, ctx.path("deep/er/repo"), marker)
    # The nested repository's work tree stays writable: its files, and below its top (the
    # landlock backend creates nothing beside a protected path, so not at its top there).
    ctx.write("sub/file", "")
    ctx.write("deep/er/repo/src/file", "")
    r = sh(ctx, "echo ok > sub/file && echo ok > deep/er/repo/src/file && echo ok > deep/er/repo/src/new")
    expect(r.returncode == 0, f"the nested work trees are not writable: {describe(r)}")
    r = sh(ctx, "echo ok > sub/new")
    expect((r.returncode == 0) == (ctx.backend != "landlock"), f"creating sub/new: {describe(r)}")


@suite.case("nested sub/.git file: the file and its gitdir target")
def _(ctx):
    ctx.mkdir("sub")
    git_repo(ctx, ctx.path("sub"), gitdir=ctx.path("store/sub"))
    config = read(ctx.path("store/sub/config"))
    marker = os.path.join(ctx.outside, "fsmonitor-ran")
    r = sh(ctx, f"printf '\\tfsmonitor = touch {marker}\\n' >> store/sub/config; "
                f"echo 'gitdir: ../evil' > sub/.git; {fsmonitor_script('evil', marker)}")
    expect(read(ctx.path("store/sub/config")) == config, f"the gitdir target's config changed ({describe(r)})")
    host_git_status(ctx, ctx.path("sub"), marker)


sys.exit(suite.run())
