"""The detectable change of a row: the smallest slowdown ``perfbot ab`` catches with the power
asked for (95 %) at the false-alarm rate of its rank test (alpha, 1 %), given the row's
process-to-process noise on this machine.

The noise is measured by an A/A run (``perfbot calibrate``): the same code on both sides, one
worker process per side and round. Each process gives one value (its median); the values, each
divided by its side's median, pool into one relative spread ``s``. A/B comparisons of ``rounds``
processes a side are then simulated, both sides drawn from that spread and the head slowed by a
candidate change; the detectable change is the smallest candidate flagged (one-sided
Mann-Whitney, p < alpha, head slower) in at least ``power`` of them. The same simulation with no
change gives the false-alarm rate the row would see. Seeded: a calibration is reproducible.

The A/A gives the spread from a few processes (16 by default), so it reads the true spread low
about half the time, and a detectable change worked out from it is then caught less often than
``power`` says: of 40 simulated calibrations of one true spread, the change held its power for 8
(test_calibration.py), and on an H100 ResNet-50 b64's 0.2 % (spread 0.066 %), injected, came out
at p = 0.03. The simulation therefore takes the spread at its one-sided ``CONFIDENCE`` upper
bound (chi-square, one degree of freedom per process less one per side, whose median is divided
out): with 16 processes 1.34 times the measured spread, and the change held for 34 of the 40.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2, mannwhitneyu

# Candidate changes, percent: fine steps where CI decisions are made, coarser beyond.
CANDIDATES = tuple(np.round(np.concatenate([np.arange(0.1, 5.0, 0.1), np.arange(5.0, 20.0, 0.5),
                                            np.arange(20.0, 60.0, 5.0)]), 2))
# How sure the spread the simulation takes is not below the true one (one-sided).
CONFIDENCE = 0.90


@dataclass(frozen=True)
class Detectability:
    spread_pct: float              # sd of the processes' medians, relative, percent
    spread_bound_pct: float        # its CONFIDENCE upper bound, the spread the simulation took
    detectable_pct: float | None   # None: not even the largest candidate is caught
    false_alarm: float             # share of simulated A/A comparisons flagged
    rounds: int
    processes: int                 # A/A processes the spread was taken from


def relative_spread(sides: list[list[float]]) -> float:
    """The standard deviation of the processes' medians, each side divided by its own median."""
    pooled = [v / statistics.median(values) for values in sides if len(values) >= 1
              for v in values]
    return statistics.stdev(pooled) if len(pooled) >= 2 else 0.0


def spread_bound(spread: float, processes: int, sides: int = 2) -> float:
    """The one-sided ``CONFIDENCE`` upper bound of a relative spread measured over ``processes``
    processes in ``sides`` groups (each divided by its own median: one degree of freedom each)."""
    df = processes - sides
    if df < 1 or spread <= 0:
        return spread
    return spread * math.sqrt(df / chi2.ppf(1.0 - CONFIDENCE, df))


def _flag_rate(spread: float, change_pct: float, rounds: int, alpha: float, trials: int,
               rng: np.random.Generator) -> float:
    base = rng.normal(1.0, spread, (trials, rounds))
    head = rng.normal(1.0, spread, (trials, rounds)) * (1.0 - change_pct / 100.0)
    p = mannwhitneyu(head, base, alternative="less", axis=1).pvalue
    return float(np.mean(p < alpha))


def detectable_change(sides: list[list[float]], rounds: int = 6, alpha: float = 0.01,
                      power: float = 0.95, trials: int = 400, seed: int = 20261203) -> Detectability:
    """See the module docstring. ``sides``: each A/A side's process medians."""
    measured = [v for v in sides if len(v) >= 1]
    return detectable_for_spread(relative_spread(sides), sum(len(v) for v in measured), len(measured),
                                 rounds, alpha, power, trials, seed)


def detectable_for_spread(spread: float, processes: int, sides: int = 2, rounds: int = 6, alpha: float = 0.01,
                          power: float = 0.95, trials: int = 400, seed: int = 20261203) -> Detectability:
    """The detectable change of a row whose A/A measured relative ``spread`` (a fraction) over
    ``processes`` processes in ``sides`` sides (a stored calibration's figures suffice)."""
    bound = spread_bound(spread, processes, sides)
    rng = np.random.default_rng(seed)
    spread_eff = max(bound, 1e-6)  # identical processes: any change is seen at once
    false_alarm = _flag_rate(spread_eff, 0.0, rounds, alpha, trials, rng)
    found = None
    for candidate in CANDIDATES:
        if _flag_rate(spread_eff, float(candidate), rounds, alpha, trials, rng) >= power:
            found = float(candidate)
            break
    return Detectability(spread * 100.0, bound * 100.0, found, false_alarm, rounds, processes)


def stored_detectable(row: dict) -> float | None:
    """A stored calibration row's detectable change. A row calibrated before the spread's bound
    was taken (its ``calibration`` has a spread but no ``spread_bound_pct``) is worked out again
    from its spread and processes, so that an older calibration promises no more than a new one
    would; None where the row has no detectable change."""
    cal = row.get("calibration") or {}
    spread, processes = cal.get("spread_pct"), cal.get("processes")
    if "spread_bound_pct" not in cal and isinstance(spread, (int, float)) and isinstance(processes, int):
        return _reworked(float(spread), processes, int(cal.get("ab_rounds") or 6))
    found = row.get("detectable_pct")
    return float(found) if isinstance(found, (int, float)) else None


@functools.lru_cache(maxsize=1024)
def _reworked(spread_pct: float, processes: int, rounds: int) -> float | None:
    return detectable_for_spread(spread_pct / 100.0, processes, rounds=rounds).detectable_pct
