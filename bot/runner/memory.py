"""Peak memory of the measured program, read inside the worker.

Host: the worker's peak resident set. Linux lets a process reset its high-water mark
(``/proc/self/clear_refs``), so the worker resets it after building inputs and before compiling
and the peak covers compile + runs, not model building. Elsewhere ``getrusage`` gives the peak
over the process's life.
Device: the CuPy memory pool's reserved bytes (the pool keeps freed blocks, so what it holds after
the runs is the high-water mark), or the compiled plan's ``peak_bytes`` when it reports one.
"""
from __future__ import annotations

import resource
import sys
from pathlib import Path

_STATUS = Path("/proc/self/status")


def reset_host_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # not Linux, or not allowed: the lifetime peak is reported instead


def host_peak_bytes() -> int:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def planned_bytes(compiled) -> int:
    """What the compiled plan says it needs: its own figure, or its roots' arenas and constants."""
    if getattr(compiled, "peak_bytes", None):
        return int(compiled.peak_bytes)
    roots = getattr(getattr(compiled, "context", None), "roots", None) or {}
    return sum(int(getattr(r, "peak_bytes", 0) or 0) + int(getattr(r, "literal_bytes", 0) or 0)
               for r in roots.values())


def device_peak_bytes(compiled) -> int | None:
    planned = planned_bytes(compiled)
    try:
        import cupy

        pooled = int(cupy.get_default_memory_pool().total_bytes())
    except Exception:  # no CuPy or no device: only the plan can tell
        pooled = 0
    best = max(pooled, planned)
    return best or None


def peak_bytes(target: str, compiled) -> int | None:
    return device_peak_bytes(compiled) if target == "gpu" else host_peak_bytes()
