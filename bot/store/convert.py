"""Mapping between results-document objects and table rows (no database access here)."""
from __future__ import annotations

from datetime import datetime, timezone

RUN_COLUMNS = ("id", "commit", "branch", "target", "suite", "shard", "started", "ended",
               "machine", "versions")
ROW_COLUMNS = ("name", "batch", "mode", "status", "error", "rate", "compile_s",
               "peak_mem_bytes", "accuracy")
# The order keys come back out in; "samples" lives in its own table.
ROW_KEYS = ("name", "batch", "mode", "status", "error", "rate", "samples", "compile_s",
            "peak_mem_bytes", "accuracy")


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def to_naive_utc(stamp: str) -> datetime:
    """An RFC 3339 time (already validated) as naive UTC, the form stored for ordering."""
    return datetime.fromisoformat(stamp).astimezone(timezone.utc).replace(tzinfo=None)


def run_to_columns(run: dict) -> dict:
    values = {key: run.get(key) for key in RUN_COLUMNS}
    values["started_utc"] = to_naive_utc(run["started"])
    extra = {k: v for k, v in run.items() if k not in RUN_COLUMNS}
    values["extra"] = extra or None
    return values


def columns_to_run(record) -> dict:
    run = {key: getattr(record, key) for key in RUN_COLUMNS}
    for key in ("machine", "versions"):
        if run[key] is None:
            del run[key]
    run.update(record.extra or {})
    return run


def row_to_columns(row: dict) -> tuple[dict, list[float]]:
    values = {key: row.get(key) for key in ROW_COLUMNS}
    extra = {k: v for k, v in row.items() if k not in ROW_KEYS}
    values["extra"] = extra or None
    return values, [float(s) for s in row.get("samples") or []]


def columns_to_row(record, samples: list[float]) -> dict:
    row = {key: getattr(record, key) for key in ROW_COLUMNS}
    row["samples"] = samples
    ordered = {key: row[key] for key in ROW_KEYS}
    ordered.update(record.extra or {})
    return ordered
