"""Whether the machine itself ran at another speed on one side of a comparison.

A host-target worker times a fixed reference workload after each sample
(``bot.runner.machine_speed``) and records its rate as ``reference_rate`` in the sample's
conditions. No revision of the compiler changes that workload, so when its rate differs between
the two sides, the machine did: two runs taken minutes apart on a shared virtual machine do see
this (every row 3-20 % the same way in 3 of 10 same-commit pairs, benchmarks/RESULTS.md
section 6). A row is then judged twice: on its rates, and on its rates relative to the
reference taken next to each sample. It is flagged only when both say so, and not judged at all
when the machine's shift reaches the row's threshold, since a change of the size the row is
judged on could then be the machine's.

Measured on the 2-core development machine (smoke suite, 5 processes a row): a sample's rate and
the reference just after it correlate (+0.4 to +0.7), and the relative rate's spread between
processes is a quarter to a third smaller than the rate's.
"""
from __future__ import annotations

import math
import statistics


def _paired(row: dict) -> dict | None:
    """Per worker process: [(sample rate, reference rate after it)], or None when the row's
    samples carry no reference (the gpu target, a document from before the reference)."""
    samples = row.get("samples") or []
    blocks = row.get("blocks") or []
    conditions = row.get("conditions") or []
    if not samples or len(conditions) != len(samples) or len(blocks) != len(samples):
        return None
    by_block: dict = {}
    for value, block, state in zip(samples, blocks, conditions):
        reference = state.get("reference_rate") if isinstance(state, dict) else None
        if not isinstance(reference, (int, float)) or not math.isfinite(reference) or reference <= 0:
            return None
        by_block.setdefault(block, []).append((float(value), float(reference)))
    return by_block


def reference_rates(row: dict) -> list[float] | None:
    """The machine's speed per worker process (median of its reference figures), or None."""
    paired = _paired(row)
    if paired is None:
        return None
    return [statistics.median(ref for _, ref in pairs) for pairs in paired.values()]


def relative_rates(row: dict) -> list[float] | None:
    """One value per worker process: the median of each sample's rate over the reference rate
    taken right after it (the row's speed in units of the machine's), or None."""
    paired = _paired(row)
    if paired is None:
        return None
    return [statistics.median(value / ref for value, ref in pairs) for pairs in paired.values()]


def machine_shift_pct(old: dict, new: dict) -> float | None:
    """How much faster (+) or slower (-) the machine ran while the head's samples were taken
    than while the base's were, in percent of the base; None unless both sides carry a
    reference."""
    before, after = reference_rates(old), reference_rates(new)
    if not before or not after:
        return None
    return (statistics.median(after) / statistics.median(before) - 1.0) * 100.0


def shift_reason(shift_pct: float) -> str:
    word = "faster" if shift_pct > 0 else "slower"
    return (f"the machine itself ran {abs(shift_pct):.1f} % {word} during the head's samples "
            "than during the base's (a fixed reference workload timed next to each sample); "
            "a change of this row's threshold could be the machine's: compare revisions "
            "with `perfbot ab`, which measures both sides in turns")
