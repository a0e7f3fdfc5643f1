"""What a worker times, built from a compiled program and its feeds.

The rate is the compiled program's own speed, as ``migraphx-driver perf`` takes it: on the gpu
target the program is compiled with offload copy off, its inputs are placed on the device once and
its output buffers allocated once, and one run is one call of ``main`` on those buffers. The
host-fed end-to-end call (host feeds in, host outputs back, copies included) is kept as a second,
named figure. On the host targets the two are the same call, and only the rate is taken.
"""
from __future__ import annotations

from typing import Callable

# The rate each target's figure measures, as recorded in a run's "measurement".
RATE_METHODS = {"gpu": "device", "cpu": "host", "ref": "host"}


def compile_options(target: str) -> dict:
    return {"offload_copy": target != "gpu"}


def device_runner(program, feeds: dict) -> Callable[[], object] | None:
    """One run on device-resident buffers, or None for a compiler without that interface."""
    compiled = program.compiled
    bind = getattr(compiled, "device_arguments", None)
    if bind is None:
        return None
    args = bind(feeds)
    return lambda: compiled.run_raw(args)


def host_runner(program, feeds: dict) -> Callable[[], object]:
    """One host-fed end-to-end call: ``Program.run`` on host arrays, host arrays back."""
    return lambda: program.run(feeds)
