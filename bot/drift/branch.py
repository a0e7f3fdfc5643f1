"""A branch's stored runs as one series per row: the rate of every finished, whole run (oldest
first), with the runs where the row failed or was not measured kept as gaps."""
from __future__ import annotations

from dataclasses import dataclass, field

from common.errors import UserError

Key = tuple[str, int, str]  # (name, batch, mode)


@dataclass(frozen=True)
class Point:
    commit: str
    run_id: str
    started: str | None
    rate: float | None      # None unless status is ok
    status: str             # ok, error or missing
    error: str | None = None


@dataclass
class BranchHistory:
    branch: str
    target: str | None
    runs: list[dict]                          # run objects, oldest first
    series: dict[Key, list[Point]] = field(default_factory=dict)  # one point per run

    def matching(self, spec: str) -> list[Key]:
        """Keys named by ``spec``: ``NAME`` (every batch and mode of it) or ``NAME/BATCH/MODE``."""
        return [key for key in self.series if spec in (key[0], "/".join(map(str, key)))]


def load_branch(store, branch: str, target: str | None = None, limit: int = 100) -> BranchHistory:
    """The newest ``limit`` finished whole runs of ``branch`` on ``target`` (default: the target of
    the branch's newest such run)."""
    if limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")
    runs = [r for r in store.find_runs(branch=branch, target=target, limit=max(limit * 4, 50))
            if r.get("ended") and not r.get("shard")]
    if target is None and runs:
        target = runs[0].get("target")
        runs = [r for r in runs if r.get("target") == target]
    runs = list(reversed(runs[:limit]))
    history = BranchHistory(branch, target, runs)
    docs = [store.get_run(run["id"]) for run in runs]
    keys: dict[Key, None] = {}
    for doc in reversed(docs):  # the newest run's suite order first
        keys.update(dict.fromkeys((r["name"], int(r["batch"]), r["mode"]) for r in doc["rows"]))
    for key in keys:
        history.series[key] = [_point(run, doc, key) for run, doc in zip(runs, docs)]
    return history


def _point(run: dict, doc: dict, key: Key) -> Point:
    for row in doc["rows"]:
        if (row["name"], int(row["batch"]), row["mode"]) != key:
            continue
        rate = row.get("rate")
        if row.get("status") == "ok" and isinstance(rate, (int, float)) and rate > 0:
            return Point(run["commit"], run["id"], run.get("started"), float(rate), "ok")
        return Point(run["commit"], run["id"], run.get("started"), None, "error",
                     row.get("error") or "no rate recorded")
    return Point(run["commit"], run["id"], run.get("started"), None, "missing")
