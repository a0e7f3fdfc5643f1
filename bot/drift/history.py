"""Stored rates with their change points marked: a branch's rows as a ``perfbot.history/1``
document (what ``perfbot history`` prints), and the base-branch history of a comparison (what the
HTML report's trend plots draw)."""
from __future__ import annotations

from bot.drift.branch import BranchHistory, Key
from bot.drift.changepoints import MIN_STEP_PCT, find_change_points
from bot.drift.scan import row_changes


def history_doc(history: BranchHistory, keys: list[Key], min_step_pct: float = MIN_STEP_PCT) -> dict:
    rows = []
    for key in keys:
        points = history.series[key]
        changes = {point.run_id: change for point, change in row_changes(points, min_step_pct)}
        rows.append({
            "name": key[0], "batch": key[1], "mode": key[2],
            "points": [{"commit": p.commit, "run_id": p.run_id, "started": p.started, "rate": p.rate,
                        "status": p.status, "error": p.error,
                        "step_pct": changes[p.run_id].step_pct if p.run_id in changes else None}
                       for p in points],
            "change_points": [{"commit": p.commit, "run_id": p.run_id, **changes[p.run_id].as_dict()}
                              for p in points if p.run_id in changes]})
    return {"schema": "perfbot.history/1", "branch": history.branch, "target": history.target,
            "runs": len(history.runs), "rows": rows}


def with_steps(points: list[dict], min_step_pct: float = MIN_STEP_PCT) -> list[dict]:
    """A row's past measurements (oldest first, ``Store.history`` entries) with ``step_pct`` set
    on each one that starts a new level of the rate; entries without a rate are left out."""
    measured = [dict(p) for p in points if isinstance(p.get("rate"), (int, float))]
    for change in find_change_points([p["rate"] for p in measured], min_step_pct):
        measured[change.index]["step_pct"] = change.step_pct
    return measured


def history_with_steps(history: dict | None) -> dict | None:
    """``{key: past measurements}`` with the steps of each row marked (see ``with_steps``)."""
    if not history:
        return history
    return {key: with_steps(points) for key, points in history.items()}
