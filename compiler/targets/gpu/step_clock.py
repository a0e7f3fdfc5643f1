"""The device's own time for one step of a profiled gpu root (``compiler.profiling``).

A step runs eagerly: its kernels are launched one by one from the host, and at a few microseconds
a launch the host is often slower than the kernels. Events around the step would then time the
host's launches, and a clock on the host its launches and a synchronisation as well: summed over
BERT-base's 327 steps that was 29 ms a run against 3 ms replayed. So before each step the device
is held by a kernel that waits ``HOLD_NS`` (far longer than a step's launches take), the start
event is queued behind it, and by the time the device reaches that event all of the step's
kernels are queued behind it too: start to end is the step's kernels back to back, as a CUDA
graph replays them. (The same hold was tried for measuring rates and removed, see
``bot.runner.timing``: there it has to cover a whole sample's launches, which it cannot for a
host-bound row; here it covers one step's.)

A step's launches can take the host long: an fp32 attention's split products are a dozen CuPy
calls, 0.6 ms of Python. A hold of 0.1 ms left the device waiting on them, and BERT-base's steps
summed to 12.9 ms a run against 2.6 ms replayed. The hold starts at ``HOLD_NS`` and, whenever a
step's launches outlast it, grows to twice what they took, for the steps after.

The two events around a step cost the device time of their own, which every step read: on the
H200 BERT-base's 315 steps (most of them a kernel or two, some none) summed to 3,211 µs a run.
The clock times ``FLOOR_STEPS`` empty steps when it is made and subtracts their median from every
step, so that a step that launches nothing reads zero: the same steps then summed to 2,762 µs
(2,801 in a later run, against 2,482 µs for a whole run replayed as CUDA graphs).
"""
from __future__ import annotations

import time

import numpy as np

from .kernels.raw_source import raw_kernel

HOLD_NS = 1_000_000
FLOOR_STEPS = 15

_HOLD = r"""
extern "C" __global__ void perfbot_hold(long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < (unsigned long long)ns);
}
"""


class DeviceStepClock:
    """``start()`` before a step and ``stop()`` after it: the seconds the device spent on it."""

    def __init__(self):
        import cupy
        self._cuda = cupy.cuda
        self._start, self._end = cupy.cuda.Event(), cupy.cuda.Event()
        self._hold = raw_kernel(_HOLD, "perfbot_hold", {})
        self.hold_ns = HOLD_NS
        self._launched = 0.0
        self.floor_s = 0.0
        self.floor_s = float(np.median([self._empty_step() for _ in range(FLOOR_STEPS)]))

    def _empty_step(self) -> float:
        self.start()
        return self.stop()

    def start(self) -> None:
        self._cuda.get_current_stream().synchronize()   # the previous step is not charged here
        self._hold((1,), (1,), (np.int64(self.hold_ns),))
        self._start.record()
        self._launched = time.perf_counter()

    def stop(self) -> float:
        self._end.record()
        launching_ns = (time.perf_counter() - self._launched) * 1e9
        if launching_ns > self.hold_ns / 2:   # the device may have waited on the host: hold longer
            self.hold_ns = int(2 * launching_ns)
        self._end.synchronize()
        return max(0.0, self._cuda.get_elapsed_time(self._start, self._end) / 1000.0 - self.floor_s)
