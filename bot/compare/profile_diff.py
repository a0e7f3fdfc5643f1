"""Base against head, instruction by instruction, for a row whose rate moved.

Entries (``compiler.profiling``: one per IR instruction or fused kernel, named after the ONNX
node it comes from) are matched on (name, op): the same node run by the same kind of kernel.
A node whose kernel changed (a fusion lost, a fallback taken) is a kernel that vanished and
one that appeared. Movers are ordered by how much time they added (or, for a faster row,
saved), so a slowed kernel comes first; kernels that appeared or vanished by their own time, so
that a lost fusion's kernel is named before the views that went with it (on the H200 an A/B
without attention fusion listed ten zero-time Reshapes as gone, and not the attentions).
"""
from __future__ import annotations

from collections import defaultdict

from .stats import IMPROVEMENT, REGRESSION

TOP = 10


def explained(row: dict) -> bool:
    """Whether a compare row gets a profile diff: its rate flagged 🔴 or 🔆."""
    return row.get("mark") in (REGRESSION, IMPROVEMENT)


def _by_kernel(profile: list[dict]) -> dict[tuple[str, str], list[float]]:
    """(name, op) -> [mean µs per run, calls per run], summed over entries of one key."""
    found: dict = defaultdict(lambda: [0.0, 0])
    for entry in profile:
        if not isinstance(entry, dict):
            continue
        key = (str(entry.get("name", "")), str(entry.get("op", "")))
        found[key][0] += float(entry.get("mean_us") or 0.0)
        found[key][1] += int(entry.get("calls") or 0)
    return dict(found)


def _item(key, old, new) -> dict:
    old_us = old[0] if old else None
    new_us = new[0] if new else None
    return {"name": key[0], "op": key[1], "old_us": old_us, "new_us": new_us,
            "delta_us": (new_us or 0.0) - (old_us or 0.0)}


def profile_diff(old_profile: list[dict], new_profile: list[dict], slower: bool = True,
                 top: int = TOP) -> dict:
    """The top movers, the kernels that appeared and vanished, launch counts and totals."""
    old, new = _by_kernel(old_profile), _by_kernel(new_profile)
    items = [_item(k, old.get(k), new.get(k)) for k in dict.fromkeys([*new, *old])]
    sign = 1.0 if slower else -1.0
    movers = sorted(items, key=lambda i: -sign * i["delta_us"])
    return {
        "movers": movers[:top],
        # the costliest first: a lost fusion's kernel, not the views that went with it
        "appeared": sorted((i for i in items if i["old_us"] is None), key=lambda i: -i["new_us"])[:top],
        "vanished": sorted((i for i in items if i["new_us"] is None), key=lambda i: -i["old_us"])[:top],
        "launches_old": sum(v[1] for v in old.values()),
        "launches_new": sum(v[1] for v in new.values()),
        "total_old_us": sum(v[0] for v in old.values()),
        "total_new_us": sum(v[0] for v in new.values()),
    }


def add_profile_diffs(rows: list[dict], old_rows: dict, new_rows: dict) -> None:
    """``profile_diff`` on every row flagged 🔴/🔆 whose sides both carry a profile."""
    for row in rows:
        key = (row["name"], row["batch"], row["mode"])
        old, new = (old_rows.get(key) or {}).get("profile"), (new_rows.get(key) or {}).get("profile")
        row["profile_diff"] = (profile_diff(old, new, slower=row["mark"] == REGRESSION)
                               if explained(row) and isinstance(old, list) and isinstance(new, list) else None)
