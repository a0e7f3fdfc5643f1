"""Timers: ``seconds(n)`` is how long ``n`` back-to-back runs took.

On the CPU targets it is the host's monotonic clock around the loop; on the GPU, CUDA events
around the loop, after the device has finished earlier work. Runs are issued back to back, so a
program whose runs are GPU-bound is timed by the GPU's work, and one whose host part (launches, a
runtime's own steps) is the longer is timed by that: both are the compiler's cost, as
``migraphx-driver perf`` takes it.

Python's garbage collector is off while a sample is taken: a collection pass landing inside one
sample and not another is host noise, not the program.

Tried and removed (H200, 2026-12-03, benchmarks/RESULTS.md): holding the GPU with a spinning
kernel until the host had queued all of a sample's runs (NVBench's blocking kernel). It moved
GPU-bound rows' rates against back-to-back issue for no reason found (ResNet-50 batch 1 1,712
against 1,839 /s, MobileNet batch 1 3,110 against 3,034), was no steadier between processes
(standard deviation 0.07 % and 1.42 % against 0.20 % and 0.42 %), and could not hold a host-bound
row (agentmodel), whose samples overflow the launch queue.
"""
from __future__ import annotations

import gc
import time
from typing import Callable


class _NoCollection:
    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


class HostTimer:
    def __init__(self, run_once: Callable[[], object]):
        self.run_once = run_once

    def seconds(self, n: int) -> float:
        run = self.run_once
        with _NoCollection():
            start = time.perf_counter()
            for _ in range(n):
                run()
            return time.perf_counter() - start


class DeviceTimer:
    def __init__(self, run_once: Callable[[], object]):
        import cupy

        self.run_once = run_once
        self._cupy = cupy
        self._start = cupy.cuda.Event()
        self._end = cupy.cuda.Event()

    def seconds(self, n: int) -> float:
        cuda = self._cupy.cuda
        run = self.run_once
        cuda.Device().synchronize()  # earlier work is not charged to this sample
        with _NoCollection():
            self._start.record()
            for _ in range(n):
                run()
            self._end.record()
            self._end.synchronize()
        return cuda.get_elapsed_time(self._start, self._end) / 1000.0


def timer_for(target: str, run_once: Callable[[], object]):
    return DeviceTimer(run_once) if target == "gpu" else HostTimer(run_once)
