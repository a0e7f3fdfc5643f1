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

What the steps still held over a replay was the device's gaps between the kernels of one step
launched from the host, a microsecond or so each over BERT-base's 320 kernels. So a step that can
be recorded (``capturable``, as the root's own CUDA graphs decide) is timed as a CUDA graph of its
own, ``time_step``: recorded, replayed between the events (its kernels then follow one another as
in the root's replay), and run once more eagerly for the value the next steps read. The replay's
floor is that of an empty graph. A step that cannot be recorded is timed eagerly as before. On the
H200, both clocks in one process: BERT-base's steps summed 7.2 % over its whole replayed run this
way, 10.5 % eagerly; ResNet-50 batch 1's 1.8 % and -0.4 %.
"""
from __future__ import annotations

import time

import numpy as np

from .graphs import may_record
from .kernels.raw_source import cuda_source, raw_kernel

HOLD_NS = 1_000_000
FLOOR_STEPS = 15

_HOLD = cuda_source("step_clock_hold")


class DeviceStepClock:
    """``start()`` before a step and ``stop()`` after it: the seconds the device spent on it."""

    def __init__(self):
        import cupy
        self._cuda = cupy.cuda
        self._start, self._end = cupy.cuda.Event(), cupy.cuda.Event()
        self._hold = raw_kernel(_HOLD, "perfbot_hold", {})
        self.hold_ns = HOLD_NS
        self._launched = 0.0
        self._stream = cupy.cuda.Stream(non_blocking=True)   # captures need a stream of their own
        self._unrecordable: set = set()                      # ids of steps whose capture failed
        self.floor_s = self.graph_floor_s = 0.0
        self.floor_s = float(np.median([self._empty_step() for _ in range(FLOOR_STEPS)]))
        empty = self._captured(lambda: None, ())
        if empty is not None:
            self.graph_floor_s = float(np.median([self._replayed(empty[0]) for _ in range(FLOOR_STEPS)]))

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

    def time_step(self, fn, args):
        """(``fn(*args)``, the device seconds of its kernels): replayed as a CUDA graph of its own
        where the step can be recorded, else launched eagerly between ``start`` and ``stop``."""
        if may_record(fn) and id(fn) not in self._unrecordable:
            captured = self._captured(fn, args)
            if captured is not None:
                seconds = self._replayed(captured[0])
                del captured   # the recorded buffers are dropped once the replay has finished
                return fn(*args), seconds
            self._unrecordable.add(id(fn))
        self.start()
        value = fn(*args)
        return value, self.stop()

    def _captured(self, fn, args):
        """(the CUDA graph of ``fn(*args)``, the value the recording returned: its buffers must
        outlive the replay), or None when the step cannot be recorded. Recorded after everything
        queued so far, on the clock's stream."""
        cuda = self._cuda
        cuda.get_current_stream().synchronize()
        stream = self._stream
        mode = getattr(cuda.runtime, "streamCaptureModeRelaxed", None)
        with stream:
            stream.begin_capture(*(() if mode is None else (mode,)))
            try:
                value, failed = fn(*args), False
            except Exception:  # noqa: BLE001 - not recordable (a host call, a library refusing)
                value, failed = None, True
            try:
                graph = stream.end_capture()
            except Exception:  # noqa: BLE001 - the recording was invalidated
                return None
        return None if failed else (graph, value)

    def _replayed(self, graph) -> float:
        """The device seconds of one replay of ``graph``, less the empty graph's floor."""
        stream = self._stream
        with stream:
            self._hold((1,), (1,), (np.int64(self.hold_ns),))
            self._start.record(stream)
            graph.launch(stream)
            self._end.record(stream)
        self._end.synchronize()
        seconds = self._cuda.get_elapsed_time(self._start, self._end) / 1000.0
        return max(0.0, seconds - self.graph_floor_s)
