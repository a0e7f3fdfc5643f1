"""``perfbot drift``: the change points among a branch's newest runs, and the rows whose
measurements stopped (failing, or gone from the runs), for a scheduled check to report."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone

from bot.drift.branch import BranchHistory, Key, Point
from bot.drift.changepoints import MIN_STEP_PCT, ChangePoint, find_change_points


@dataclass(frozen=True)
class RowChange:
    key: Key
    point: Point            # the first run at the new level
    change: ChangePoint
    runs_ago: int           # 0: the newest run

    def as_dict(self) -> dict:
        return {"name": self.key[0], "batch": self.key[1], "mode": self.key[2],
                "commit": self.point.commit, "run_id": self.point.run_id,
                "started": self.point.started, "runs_ago": self.runs_ago, **self.change.as_dict()}


@dataclass(frozen=True)
class MissingRow:
    key: Key
    last_ok: Point | None   # the newest run that measured it
    runs: int               # how many newest runs lack it
    status: str             # error or missing, in the newest run
    error: str | None

    def as_dict(self) -> dict:
        last = self.last_ok
        return {"name": self.key[0], "batch": self.key[1], "mode": self.key[2], "runs": self.runs,
                "status": self.status, "error": self.error,
                "last_commit": last.commit if last else None, "last_started": last.started if last else None}


@dataclass
class DriftReport:
    branch: str
    target: str | None
    runs: int
    newest: dict | None                    # the newest run object
    recent: int
    changes: list[RowChange] = field(default_factory=list)
    missing: list[MissingRow] = field(default_factory=list)
    stale_days: float | None = None        # the newest run is this old, beyond the limit

    @property
    def anything(self) -> bool:
        return bool(self.changes or self.missing or self.stale_days is not None)

    def fingerprint(self) -> str | None:
        """Names what is reported (not the numbers, which move with every run); None when nothing
        is: a closed drift issue stays closed while this stays the same."""
        if not self.anything:
            return None
        found = sorted([f"step {c.key} {c.point.commit}" for c in self.changes]
                       + [f"missing {m.key}" for m in self.missing]
                       + (["stalled"] if self.stale_days is not None else []))
        return hashlib.sha256("\n".join(found).encode()).hexdigest()[:16]

    def as_dict(self) -> dict:
        newest = self.newest or {}
        return {"schema": "perfbot.drift/1", "branch": self.branch, "target": self.target,
                "runs": self.runs, "recent": self.recent, "newest_commit": newest.get("commit"),
                "newest_started": newest.get("started"), "stale_days": self.stale_days,
                "change_points": [c.as_dict() for c in self.changes],
                "missing": [m.as_dict() for m in self.missing]}


def row_changes(points: list[Point], min_step_pct: float = MIN_STEP_PCT) -> list[tuple[Point, ChangePoint]]:
    """The change points of one row's series; gaps (failed or missing runs) are left out."""
    measured = [p for p in points if p.status == "ok"]
    return [(measured[c.index], c) for c in find_change_points([p.rate for p in measured], min_step_pct)]


def scan(history: BranchHistory, recent: int = 10, missing_runs: int = 1,
         stale_after_days: float | None = 7.0, min_step_pct: float = MIN_STEP_PCT,
         now: datetime | None = None) -> DriftReport:
    """Change points among the newest ``recent`` runs; rows measured earlier in the window but not
    in the newest ``missing_runs`` runs; the newest run when older than ``stale_after_days``."""
    runs = history.runs
    report = DriftReport(history.branch, history.target, len(runs), runs[-1] if runs else None, recent)
    position = {run["id"]: i for i, run in enumerate(runs)}
    for key, points in history.series.items():
        for point, change in row_changes(points, min_step_pct):
            ago = len(runs) - 1 - position[point.run_id]
            if ago < recent:
                report.changes.append(RowChange(key, point, change, ago))
        gone = _missing(key, points, missing_runs)
        if gone:
            report.missing.append(gone)
    report.stale_days = _stale(report.newest, stale_after_days, now)
    return report


def _missing(key: Key, points: list[Point], missing_runs: int) -> MissingRow | None:
    lacking = 0
    for point in reversed(points):
        if point.status == "ok":
            break
        lacking += 1
    measured = [p for p in points if p.status == "ok"]
    if lacking < max(1, missing_runs) or not measured:
        return None  # measured lately, or never in the window (not this row's data going away)
    newest = points[-1]
    return MissingRow(key, measured[-1], lacking, newest.status, newest.error)


def _stale(newest: dict | None, limit_days: float | None, now: datetime | None) -> float | None:
    if newest is None or limit_days is None or not newest.get("started"):
        return None
    try:
        started = datetime.fromisoformat(str(newest["started"]).replace("Z", "+00:00"))
    except ValueError:
        return None
    if started.tzinfo is None:
        started = started.replace(tzinfo=timezone.utc)
    age = ((now or datetime.now(timezone.utc)) - started).total_seconds() / 86400.0
    return round(age, 1) if age > limit_days else None
