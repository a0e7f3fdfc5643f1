"""The shard runs of one commit, which ``perfbot results merge --commit`` merges into one run."""
from __future__ import annotations

from common.errors import UserError


def shard_runs_of(store, commit: str) -> list[str]:
    """The ids of the unmerged shard runs of ``commit`` (a prefix), oldest first so that rows
    without a suite index keep the shards' order."""
    shards = [r for r in store.find_runs(commit=commit, limit=1000) if r.get("shard")]
    if len({r["commit"] for r in shards}) > 1:
        raise UserError(f"commit prefix {commit!r} matches several commits")
    if not shards:
        raise UserError(f"no unmerged shard runs of commit {commit!r}")
    return [r["id"] for r in reversed(shards)]
