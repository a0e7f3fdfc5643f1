"""Timing one inference: host wall clock on the CPU targets, CUDA events on the GPU.

A rate sample is ``batch / seconds`` for one timed run. On the GPU the device is synchronised
before the start event so that earlier queued work (the warm-up, another side's run) is not
charged to this sample, and the end event is waited on so that the sample covers all the work.
"""
from __future__ import annotations

import time
from typing import Callable


class HostTimer:
    def seconds(self, run_once: Callable[[], object]) -> float:
        start = time.perf_counter()
        run_once()
        return time.perf_counter() - start


class DeviceTimer:
    def __init__(self):
        import cupy

        self._cupy = cupy
        self._start = cupy.cuda.Event()
        self._end = cupy.cuda.Event()

    def seconds(self, run_once: Callable[[], object]) -> float:
        cuda = self._cupy.cuda
        cuda.Device().synchronize()
        self._start.record()
        run_once()
        self._end.record()
        self._end.synchronize()
        return cuda.get_elapsed_time(self._start, self._end) / 1000.0


def timer_for(target: str):
    return DeviceTimer() if target == "gpu" else HostTimer()


def rate_samples(run_once: Callable[[], object], batch: int, repeats: int, timer) -> list[float]:
    """``repeats`` timed runs, each as inferences per second, in measurement order."""
    samples = []
    for _ in range(repeats):
        seconds = timer.seconds(run_once)
        # A run too fast for the clock's resolution still counts, at the clock's resolution.
        samples.append(batch / max(seconds, 1e-9))
    return samples
