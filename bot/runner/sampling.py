"""How many runs make one sample, when the warm-up is over, and the samples themselves.

A sample is the mean time of ``n`` back-to-back runs, as ``timeit`` takes it: ``autorange`` finds
the ``n`` whose runs last at least ``min_sample_s`` together, so that a sample's own clock and
launch costs are a small part of it whatever the model's size. The warm-up is not a fixed count:
it lasts until consecutive samples settle (clocks ramped, caches and pools filled, lazy plans
built), and is cut off after ``max_warmup_s`` so that a row that never settles still gets
measured (``Sampling.settled`` says so).

A timer is anything with ``seconds(n) -> float``: the time ``n`` back-to-back runs took.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SamplingPlan:
    min_sample_s: float = 0.05      # a sample lasts at least this long
    repeats: int = 10               # timed samples
    settle_pct: float = 1.0         # warm-up ends when consecutive samples agree this closely...
    settle_count: int = 3           # ...this many in a row
    min_warmup: int = 1             # samples always thrown away first
    max_warmup_s: float = 5.0       # a row that never settles is measured anyway after this
    max_runs: int = 1 << 20         # runs per sample at most (a run of ~nothing)


@dataclass
class Sampling:
    runs_per_sample: int
    seconds: list[float] = field(default_factory=list)  # per timed sample: mean seconds per run
    warmup: list[float] = field(default_factory=list)   # the warm-up samples, same unit
    settled: bool = True

    def rates(self, batch: int) -> list[float]:
        # A run too fast for the clock's resolution still counts, at the clock's resolution.
        return [batch / max(s, 1e-12) for s in self.seconds]


def autorange(timer, plan: SamplingPlan) -> int:
    """The number of back-to-back runs that lasts at least ``plan.min_sample_s``."""
    n = 1
    while True:
        took = timer.seconds(n)
        if took >= plan.min_sample_s or n >= plan.max_runs:
            return n
        # Aim a little past the target from what n runs took, growing at least 2x and at most
        # 100x a step, so one slow first run (a lazy compile) cannot overshoot by much.
        want = plan.min_sample_s * 1.2 / max(took, 1e-9) * n
        n = int(min(max(want, 2 * n), 100 * n, plan.max_runs))


def settled(recent: list[float], plan: SamplingPlan) -> bool:
    """Whether the last ``settle_count`` samples lie within ``settle_pct`` of each other."""
    if len(recent) < plan.settle_count:
        return False
    last = recent[-plan.settle_count:]
    return (max(last) - min(last)) / min(last) * 100.0 <= plan.settle_pct


def take_samples(timer, plan: SamplingPlan, clock=time.monotonic, on_sample=None,
                 runs: int | None = None, min_runs: int = 1) -> Sampling:
    """Autorange (unless ``runs`` is given), warm up until settled, then ``plan.repeats`` timed
    samples of at least ``min_runs`` runs each.

    A sample carries a small fixed cost (its first launch after the device went idle), so the
    samples two processes compare should hold the same number of runs: an A/B passes the number
    its first process found to every later one. ``on_sample(index)`` is called after each timed
    sample (the GPU's state is read there).

    Where ``min_runs`` lengthens the timed samples (a calibration's injected slowdown takes 500
    runs a sample for 0.2 %: seconds each on a large batch), the warm-up still takes samples of
    the autoranged length: whether the process has settled shows in short samples as well, and
    a warm-up of three or more samples of 500 runs took as long as the timed samples or longer
    (ResNet-50 b64 on an H100: 500 runs of 7.7 ms, about 3.9 s a sample)."""
    found = runs or autorange(timer, plan)
    n = max(found, min_runs)
    warm_n = n if min_runs <= 1 else min(n, found if runs is None else autorange(timer, plan))
    result = Sampling(runs_per_sample=n)
    start = clock()
    while True:
        result.warmup.append(timer.seconds(warm_n) / warm_n)
        if len(result.warmup) >= plan.min_warmup and settled(result.warmup, plan):
            break
        if clock() - start > plan.max_warmup_s:
            result.settled = False
            break
    for index in range(plan.repeats):
        result.seconds.append(timer.seconds(n) / n)
        if on_sample is not None:
            on_sample(index)
    return result
