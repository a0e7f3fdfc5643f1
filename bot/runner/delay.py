"""A known slowdown, for ``perfbot calibrate --verify``: every sample runs the program a set share
more often than it counts.

A sample of ``n`` counted runs executes ``n + extra`` runs, ``extra = round(n * pct / 100)``; both
sides of the A/B take ``n >= min_runs(pct)``, so that ``extra`` is at least one and the samples
compared hold the same number of counted runs. The slowdown is the row's own work, exactly
``extra / n`` of it, whichever of the host or the GPU bounds the row. (A spin kernel and a host spin
after every run, tried first, did not add what they were sized to: on the H200 a 0.5 % pair slowed
ResNet-50 batch 1 by 8.6 %, for a reason not found.)
Used only by calibration runs, never in a rate reported as the row's own.
"""
from __future__ import annotations

import math


def min_runs(pct: float) -> int:
    """Counted runs per sample enough for ``pct`` percent of them to be one whole run or more."""
    return math.ceil(100.0 / pct) if pct > 0 else 1


class SlowedTimer:
    """``timer`` with ``pct`` percent more runs in every sample than ``seconds(n)`` is told."""

    def __init__(self, timer, pct: float):
        self.timer = timer
        self.pct = pct

    def extra(self, n: int) -> int:
        return round(n * self.pct / 100.0)

    def seconds(self, n: int) -> float:
        return self.timer.seconds(n + self.extra(n))

    def injected_pct(self, n: int) -> float:
        return self.extra(n) / n * 100.0
