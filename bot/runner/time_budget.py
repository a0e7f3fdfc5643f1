"""A time limit on a multi-row measurement (``perfbot ab --time-limit``): a CI job that would be
killed at its own limit loses everything it measured, so the A/B stops starting rows in time and
reports the rest as not measured instead.

A row starts only while the time spent so far plus the mean time of the rows finished so far stays
within the limit (the first row starts if the limit has not passed). A row, once started, is
measured to its end: cutting it short would leave a side with fewer rounds than the other.
"""
from __future__ import annotations

import threading
import time
from typing import Callable


class TimeBudget:
    def __init__(self, limit_s: float, clock: Callable[[], float] = time.monotonic):
        self.limit_s = float(limit_s)
        self.clock = clock
        self.started = clock()
        self.row_seconds: list[float] = []
        self.lock = threading.Lock()    # rows on several GPUs finish from their own threads

    def allows_another_row(self) -> bool:
        with self.lock:
            spent = self.clock() - self.started
            expected = sum(self.row_seconds) / len(self.row_seconds) if self.row_seconds else 0.0
        return spent + expected <= self.limit_s

    def row_took(self, seconds: float) -> None:
        with self.lock:
            self.row_seconds.append(float(seconds))

    def reason(self) -> str:
        return (f"not measured: the time limit ({self.limit_s:g} s, --time-limit) would have passed "
                f"before this row finished")
