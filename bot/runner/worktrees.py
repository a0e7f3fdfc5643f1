"""Temporary git worktrees of the revisions an A/B run measures (removed afterwards)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from common.errors import UserError
from bot.runner.machine import git


@dataclass
class Worktree:
    label: str
    rev: str            # what the user asked for
    commit: str         # the full commit id it resolved to
    branch: str | None  # the branch name when the user named a branch
    path: Path


def repo_root(cwd: Path | None = None) -> Path:
    top = git(["rev-parse", "--show-toplevel"], cwd)
    if not top:
        raise UserError("perfbot ab must run inside a git repository (it checks out both revisions)")
    return Path(top)


def resolve(repo: Path, rev: str) -> tuple[str, str | None]:
    commit = git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], repo)
    if not commit:
        raise UserError(f"unknown revision {rev!r} in {repo.name}")
    full = git(["rev-parse", "--symbolic-full-name", rev], repo) or ""
    branch = None
    for prefix in ("refs/heads/", "refs/remotes/"):
        if full.startswith(prefix):
            branch = full[len(prefix):]
            # origin/main is recorded as main: that is the branch a stored baseline is looked up by
            branch = branch.split("/", 1)[1] if prefix == "refs/remotes/" and "/" in branch else branch
    return commit, branch


@contextmanager
def revision_worktrees(repo: Path, revs: dict[str, str]):
    """``{label: Worktree}`` with a detached checkout of each revision, cleaned up on exit."""
    resolved = {label: resolve(repo, rev) for label, rev in revs.items()}
    scratch = Path(tempfile.mkdtemp(prefix="perfbot-ab-"))
    made: list[Path] = []
    try:
        trees = {}
        for label, rev in revs.items():
            commit, branch = resolved[label]
            path = scratch / label
            done = subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(path), commit],
                                  cwd=repo, capture_output=True, text=True)
            if done.returncode != 0:
                raise UserError(f"cannot check out {rev!r}: {' '.join(done.stderr.split())[:300]}")
            made.append(path)
            trees[label] = Worktree(label, rev, commit, branch, path)
        yield trees
    finally:
        for path in made:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=repo,
                           capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=repo, capture_output=True)
