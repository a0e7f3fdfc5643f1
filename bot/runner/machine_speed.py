"""The machine's own speed, measured next to every sample of a host-target row.

Two ``perfbot run`` of one commit, minutes apart on a 2-core virtual machine, saw every row move
the same way by 3-20 % in 3 of 10 pairs (benchmarks/RESULTS.md section 6), with no other process
on the machine's CPUs that ``/proc/stat`` could show: the machine itself ran at another speed
(a neighbour on the host, a frequency change). Nothing in the row's own samples tells that from
a slower compiler. So after each sample the worker also times a fixed workload that no revision
of the compiler changes, made of the kinds of work a host target's run is made of: a product,
element-wise arithmetic, a copy and interpreted steps between them. Its rate (runs per second)
is recorded with the sample's conditions as ``reference_rate``; ``bot.compare.machine_shift``
compares it between the two sides.

It runs on one thread with single-threaded BLAS: handing it to a pool of threads, as the cpu
target does, made its figures two to three times noisier on the 2-core machine (sd of 20 ms
figures 9-21 % against 7-9 %), so that they could not have told a shift of a few per cent.
"""
from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from bot.runner.sampling import SamplingPlan, autorange
from bot.runner.timing import HostTimer

REFERENCE_SECONDS = 0.02   # one reference figure lasts at least this long
_SIZE = 128                # product size: a batch-1 layer's GEMM, well inside the caches
_ELEMENTS = 1 << 16        # element-wise and copied elements: an activation tensor
_STEPS = 200               # interpreted steps: a runtime's own Python per kernel


class ReferenceWork:
    """A fixed workload and its rate. The inputs come from a fixed seed, so every process,
    every revision and both sides of a comparison time the very same arithmetic."""

    def __init__(self):
        rng = np.random.default_rng(20261204)
        self._a = rng.standard_normal((_SIZE, _SIZE), dtype=np.float32)
        self._b = rng.standard_normal((_SIZE, _SIZE), dtype=np.float32)
        self._x = rng.standard_normal(_ELEMENTS, dtype=np.float32)
        self._out = np.empty(_ELEMENTS, dtype=np.float32)
        self._runs = 0
        self._timer = HostTimer(self.run_once)   # the rows' own clock, collector off

    def run_once(self) -> None:
        product = self._a @ self._b
        np.multiply(self._x, product[0, 0], out=self._out)
        np.tanh(self._out, out=self._out)
        np.copyto(self._out, self._x)
        total = 0
        for step in range(_STEPS):
            total += step

    def seconds(self, runs: int) -> float:
        """How long ``runs`` runs took, BLAS held to one thread (see the module text)."""
        with threadpool_limits(limits=1, user_api="blas"):
            return self._timer.seconds(runs)

    def rate(self, seconds: float = REFERENCE_SECONDS) -> float:
        """Runs per second over at least ``seconds``. The run count is found once (the rows'
        ``autorange``, after a warm-up) and kept, so every figure of a process times the same
        number of runs."""
        if not self._runs:
            self.seconds(3)
            self._runs = autorange(self, SamplingPlan(min_sample_s=seconds))
        self.run_once()  # untimed: the row's own data has just left the caches
        return self._runs / max(self.seconds(self._runs), 1e-9)


class HostWatch:
    """What a host-target sample met: other work's share of the CPUs (``CpuWatch``) and the
    machine's own speed just after it (``reference_rate``)."""

    available = True

    def __init__(self, cpu_watch, reference: ReferenceWork | None = None):
        self.cpu_watch = cpu_watch
        self.reference = reference or ReferenceWork()

    def snapshot(self) -> dict:
        state = dict(self.cpu_watch.snapshot() or {})  # first: the interval of the sample alone
        state["reference_rate"] = round(self.reference.rate(), 1)
        return state
