"""The reference workload: one fixed run count per process, found once, and a positive rate that
follows the time its runs take."""
from __future__ import annotations

from bot.runner.machine_speed import HostWatch, ReferenceWork


class _Watch:
    def snapshot(self):
        return {"others_cpu_pct": 2.0}


def test_the_run_count_is_found_once_and_kept():
    work = ReferenceWork()
    first = work.rate(seconds=0.002)
    runs = work._runs
    assert first > 0 and runs >= 1
    assert work.rate(seconds=0.5) > 0 and work._runs == runs   # a later figure times as many runs


def test_a_slower_machine_shows_as_a_lower_rate(monkeypatch):
    work = ReferenceWork()
    work.rate(seconds=0.002)
    clock = iter([0.0, 0.01, 0.0, 0.02])
    monkeypatch.setattr("bot.runner.timing.time.perf_counter", lambda: next(clock))
    assert work.rate() == 2 * work.rate()


def test_the_host_watch_adds_the_reference_to_the_cpu_share():
    state = HostWatch(_Watch()).snapshot()
    assert state["others_cpu_pct"] == 2.0 and state["reference_rate"] > 0
