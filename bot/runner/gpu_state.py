"""What could spoil a GPU sample, read through NVML (``nvidia-ml-py``) after every sample.

A sample taken while the GPU slowed itself down (thermal or hardware slowdown, power brake) or
while another process computed on it measures the machine, not the compiler. Each sample records
the GPU's clocks, temperature, power, clock-event (throttle) reasons and the compute processes
that are not perfbot's own; ``spoiled`` turns those records into the reason a row's figure is
unreliable, or None. Without NVML (no driver library, no package) nothing is recorded and nothing
is judged.
"""
from __future__ import annotations

import os

# NVML's clock-event reason bits (nvmlClocksEventReason*; formerly "throttle reasons").
REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clocks",
}
# Reasons that make the GPU run slower than it otherwise would for a reason outside the program.
# The software power cap is left out: a large model at full load meets it on every sample, on
# both sides of a comparison alike, so it is recorded but does not void a figure.
SPOILING = frozenset({"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"})


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASON_BITS.items() if mask & bit]


class GpuWatch:
    """Reads one GPU's state through NVML; ``available`` is False when NVML cannot be used."""

    def __init__(self, index: int | None = None, own_pids: set[int] | None = None):
        self.own_pids = set(own_pids or ()) | {os.getpid()}
        self.available = False
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = _handle(pynvml, index)
            self.available = True
        except Exception:  # noqa: BLE001 - no library, no driver, no device: nothing to record
            self.nvml = None

    def snapshot(self) -> dict | None:
        """The GPU's state now, or None without NVML."""
        if not self.available:
            return None
        nv, h = self.nvml, self.handle
        state = {}
        for key, read in (
                ("sm_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                ("mem_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                ("temp_c", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                ("power_w", lambda: round(nv.nvmlDeviceGetPowerUsage(h) / 1000.0, 1)),
                ("reasons", lambda: reason_names(_event_reasons(nv, h))),
                ("others", lambda: self._other_processes())):
            try:
                state[key] = read()
            except Exception:  # noqa: BLE001 - a query this driver lacks is left out
                pass
        return state

    def _other_processes(self) -> int | None:
        """Compute processes on this GPU that are not perfbot's; None when NVML's process ids
        are not this namespace's (a container), so nobody can be told apart."""
        pids = {p.pid for p in self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)}
        if os.getpid() not in pids:
            return None
        return len(pids - self.own_pids)


def _event_reasons(nv, handle) -> int:
    read = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) \
        or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    return int(read(handle))


def _handle(nv, index: int | None):
    """NVML's handle of CUDA device ``index``: by UUID where CUDA_VISIBLE_DEVICES names the GPU so
    (each worker of ``--devices`` is given its GPU's UUID), else by number."""
    visible = [p.strip() for p in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if p.strip()]
    entry = visible[index or 0] if (index or 0) < len(visible) else ""
    if entry.startswith(("GPU-", "MIG-")):
        return nv.nvmlDeviceGetHandleByUUID(entry)
    return nv.nvmlDeviceGetHandleByIndex(_visible_index(index))


def _visible_index(index: int | None) -> int:
    """NVML counts every GPU of the machine; CUDA only the visible ones, in CUDA_VISIBLE_DEVICES
    order. The NVML index of CUDA device ``index`` (0 unless given)."""
    index = index or 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        parts = [p.strip() for p in visible.split(",") if p.strip()]
        if index < len(parts) and parts[index].isdigit():
            return int(parts[index])
    return index


def spoiled(states: list[dict | None]) -> str | None:
    """Why samples taken in these states cannot be trusted, or None when nothing spoiled them.

    One spoiled sample in a row's samples is enough: the rank test cannot tell a throttled
    sample from a slower compiler."""
    recorded = [s for s in states if s]
    if not recorded:
        return None
    throttled = [s for s in recorded if SPOILING & set(s.get("reasons") or ())]
    shared = [s for s in recorded if (s.get("others") or 0) > 0]
    reasons = []
    if throttled:
        names = sorted(set().union(*(SPOILING & set(s["reasons"]) for s in throttled)))
        reasons.append(f"GPU throttled ({', '.join(names)}) in {len(throttled)} of {len(recorded)} samples")
    if shared:
        most = max(s["others"] for s in shared)
        reasons.append(f"{most} other process(es) computing on the GPU in {len(shared)} of "
                       f"{len(recorded)} samples")
    return "; ".join(reasons) or None
