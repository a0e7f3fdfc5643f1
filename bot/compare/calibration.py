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
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

# Candidate changes, percent: fine steps where CI decisions are made, coarser beyond.
CANDIDATES = tuple(np.round(np.concatenate([np.arange(0.1, 5.0, 0.1), np.arange(5.0, 20.0, 0.5),
                                            np.arange(20.0, 60.0, 5.0)]), 2))


@dataclass(frozen=True)
class Detectability:
    spread_pct: float              # sd of the processes' medians, relative, percent
    detectable_pct: float | None   # None: not even the largest candidate is caught
    false_alarm: float             # share of simulated A/A comparisons flagged
    rounds: int
    processes: int                 # A/A processes the spread was taken from


def relative_spread(sides: list[list[float]]) -> float:
    """The standard deviation of the processes' medians, each side divided by its own median."""
    pooled = [v / statistics.median(values) for values in sides if len(values) >= 1
              for v in values]
    return statistics.stdev(pooled) if len(pooled) >= 2 else 0.0


def _flag_rate(spread: float, change_pct: float, rounds: int, alpha: float, trials: int,
               rng: np.random.Generator) -> float:
    base = rng.normal(1.0, spread, (trials, rounds))
    head = rng.normal(1.0, spread, (trials, rounds)) * (1.0 - change_pct / 100.0)
    p = mannwhitneyu(head, base, alternative="less", axis=1).pvalue
    return float(np.mean(p < alpha))


def detectable_change(sides: list[list[float]], rounds: int = 6, alpha: float = 0.01,
                      power: float = 0.95, trials: int = 400, seed: int = 20261203) -> Detectability:
    """See the module docstring. ``sides``: each A/A side's process medians."""
    spread = relative_spread(sides)
    processes = sum(len(v) for v in sides)
    rng = np.random.default_rng(seed)
    spread_eff = max(spread, 1e-6)  # identical processes: any change is seen at once
    false_alarm = _flag_rate(spread_eff, 0.0, rounds, alpha, trials, rng)
    found = None
    for candidate in CANDIDATES:
        if _flag_rate(spread_eff, float(candidate), rounds, alpha, trials, rng) >= power:
            found = float(candidate)
            break
    return Detectability(spread * 100.0, found, false_alarm, rounds, processes)
