"""The command that repeats one row's A/B locally, for the notes of a flagged row."""
from __future__ import annotations

import shlex

from .stats import IMPROVEMENT, REGRESSION

FLAGGED = (REGRESSION, IMPROVEMENT)


def flagged(row: dict) -> bool:
    """A row whose rate, compile time or peak memory moved beyond its threshold."""
    return any(row.get(field) in FLAGGED for field in ("mark", "compile_mark", "peak_mem_mark"))


def repro_command(row: dict, base_meta: dict, head_meta: dict) -> str:
    """``perfbot ab`` of the two measured commits for this row alone, on the head's target.
    The row name comes from a results document, so it is shell-quoted."""
    words = ["perfbot", "ab", "--base", base_meta.get("commit") or "unknown",
             "--head", head_meta.get("commit") or "unknown", "--suite", row["name"]]
    if head_meta.get("target"):
        words += ["--target", head_meta["target"]]
    return " ".join(shlex.quote(str(word)) for word in words)


def add_repro(rows: list[dict], base_meta: dict, head_meta: dict) -> None:
    """Set ``repro`` on every flagged row (None on the others)."""
    for row in rows:
        row["repro"] = repro_command(row, base_meta, head_meta) if flagged(row) else None
