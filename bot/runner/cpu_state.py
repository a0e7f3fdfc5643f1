"""What could spoil a CPU sample: other work on the machine's CPUs while it was taken.

A cpu-target row computes on the machine's cores; when other processes (another job, a test
run, the hypervisor's steal) take a share of them, the row slows by about that share, and two
runs taken minutes apart meet different loads. Measured on the 2-core development machine with
other work running (load average 4-7): `run --rounds 5` twice on one commit, compared, flagged 5
of the 6 smoke rows. Each sample therefore records the share of all CPUs' time that went to
anything but the measuring process since the previous sample (``/proc/stat`` against the
process's own CPU time); the comparison does not judge a row whose samples met more than
``busy_limit_pct`` of it (``bot.compare.measurement.busy_machine``). Without ``/proc/stat``
nothing is recorded.
"""
from __future__ import annotations

import os

def machine_ticks(stat_path: str = "/proc/stat") -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs since boot, or None where /proc/stat is missing."""
    try:
        with open(stat_path, encoding="ascii") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 5:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = ([int(v) for v in fields[1:9]] + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq + steal  # steal: the hypervisor ran someone else
    return busy, busy + idle + iowait


def own_ticks() -> float:
    """This process's CPU time (all its threads), in /proc/stat's clock ticks."""
    times = os.times()
    return (times.user + times.system) * os.sysconf("SC_CLK_TCK")


class CpuWatch:
    """Other work's share of the CPUs between one ``snapshot`` and the next."""

    def __init__(self, stat_path: str = "/proc/stat"):
        self.stat_path = stat_path
        self.available = machine_ticks(stat_path) is not None
        self._last = self._read()
        self._latest: dict | None = None

    def _read(self) -> tuple[int, int, float] | None:
        ticks = machine_ticks(self.stat_path)
        return None if ticks is None else (*ticks, own_ticks())

    def snapshot(self) -> dict | None:
        """Since the previous snapshot: the share of all CPUs' time other work used, in percent.
        The kernel counts CPU time in ticks (10 ms): a sample shorter than a tick may see none
        pass, and then shares the interval of the next that does (the figure stands for both)."""
        now, last = self._read(), self._last
        if now is None or last is None:
            self._last = now
            return None
        if now[1] <= last[1]:
            return self._latest
        self._last = now
        busy, total, own = (a - b for a, b in zip(now, last))
        self._latest = {"others_cpu_pct": round(max(0.0, busy - own) / total * 100.0, 1)}
        return self._latest
