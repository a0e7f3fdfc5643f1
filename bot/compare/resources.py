"""Compile time and peak memory of a row, compared between the sides like its rate.

Each side has one figure of each (the first compile's time, the highest peak of its processes),
not samples, so there is no rank test: a figure is flagged when it moved by more than its own
threshold (``compile_threshold_pct``, ``memory_threshold_pct`` in ``[tool.perfbot]``) and by
more than a floor under which a change is the clock's or the allocator's, not the compiler's.
Growth is the regression here: a larger figure is worse, where a larger rate is better.
"""
from __future__ import annotations

import math

import numpy as np

from .stats import IMPROVEMENT, OK, REGRESSION, one_sided_p

# Below these a change is noise: a smoke model compiles in tens of milliseconds, and allocators
# round blocks up to their own sizes.
COMPILE_FLOOR_S = 0.05
MEMORY_FLOOR_BYTES = 1 << 20

# compare-row field prefix -> (results-row field, its per-process samples, CompareConfig
# threshold attribute, floor)
FIGURES = {
    "compile": ("compile_s", "compile_samples", "compile_threshold_pct", COMPILE_FLOOR_S),
    "peak_mem": ("peak_mem_bytes", "peak_mem_samples", "memory_threshold_pct", MEMORY_FLOOR_BYTES),
}


def _figure(row: dict | None, field: str) -> float | None:
    value = (row or {}).get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def figure_change(old: float | None, new: float | None, threshold_pct: float,
                  floor: float) -> tuple[float | None, str | None]:
    """(change in percent, mark) of one figure; (None, None) where a side has none."""
    if old is None or new is None:
        return None, None
    diff = (new - old) / old * 100.0
    if abs(new - old) < floor or abs(diff) <= threshold_pct:
        return diff, OK
    return diff, REGRESSION if diff > 0 else IMPROVEMENT


def _samples(row: dict | None, field: str) -> np.ndarray | None:
    values = (row or {}).get(field)
    if not isinstance(values, list):
        return None
    kept = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v) and v > 0]
    return np.asarray(kept) if kept else None


def significant(old: np.ndarray | None, new: np.ndarray | None, grew: bool, config) -> bool:
    """Whether per-process figures show the change beyond their own spread; True when the sides
    lack the samples to test (the threshold alone then decides)."""
    if old is None or new is None or min(old.size, new.size) < config.min_samples:
        return True
    smaller, larger = one_sided_p(old, new)  # p that new is smaller, p that it is larger
    return (larger if grew else smaller) < config.alpha


def resource_fields(old: dict | None, new: dict | None, config) -> dict:
    """``compile_diff_pct``, ``compile_mark``, ``compile_threshold_pct`` and the same for
    ``peak_mem`` of one compare row (marks None where a side did not measure the figure)."""
    out = {}
    for prefix, (field, samples, threshold_name, floor) in FIGURES.items():
        threshold = getattr(config, threshold_name)
        diff, mark = figure_change(_figure(old, field), _figure(new, field), threshold, floor)
        if mark in (REGRESSION, IMPROVEMENT) and not significant(
                _samples(old, samples), _samples(new, samples), mark == REGRESSION, config):
            mark = OK
        out.update({f"{prefix}_diff_pct": diff, f"{prefix}_mark": mark,
                    f"{prefix}_threshold_pct": threshold})
    return out


def unjudged_resources(row: dict) -> dict:
    """The compile and memory marks of a row whose rate was not judged, back to ok (their changes
    kept): they were measured in the same processes, on the same machine, as the rate that could
    not be judged (one process a side, a busy machine, sides measured differently), and one figure
    a side moves more than its threshold there (a compile 50 % slower in a same-commit pair on a
    busy two-core machine)."""
    return {f"{prefix}_mark": OK for prefix in FIGURES if row.get(f"{prefix}_mark") in (REGRESSION, IMPROVEMENT)}


def resource_regressions(rows: list[dict]) -> dict[str, int]:
    """How many rows each figure flags as grown (counted in the verdict)."""
    return {f"{prefix}_regressions": sum(r.get(f"{prefix}_mark") == REGRESSION for r in rows)
            for prefix in FIGURES}
