"""Autorange, settle-based warm-up and the GPU-state verdict, on scripted timers and recorded
NVML states (no clock is read: the tests are deterministic)."""
from __future__ import annotations

import pytest

from bot.runner.cpu_state import CpuWatch, machine_ticks
from bot.runner.gpu_state import reason_names, spoiled
from bot.runner.sampling import SamplingPlan, autorange, settled, take_samples
from bot.runner.sides import block_median


class ScriptedTimer:
    """``seconds(n)`` = n × the next per-run time of a script (the last one repeats)."""

    def __init__(self, per_run: list[float]):
        self.per_run = list(per_run)
        self.calls: list[int] = []

    def seconds(self, n: int) -> float:
        self.calls.append(n)
        value = self.per_run.pop(0) if len(self.per_run) > 1 else self.per_run[0]
        return n * value


class FakeClock:
    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_autorange_reaches_the_minimum_sample_time():
    timer = ScriptedTimer([1e-4])
    n = autorange(timer, SamplingPlan(min_sample_s=0.05))
    assert n * 1e-4 >= 0.05 and timer.calls[0] == 1
    assert all(b >= 2 * a for a, b in zip(timer.calls, timer.calls[1:-1]))  # grows, no tiny steps


def test_autorange_is_not_misled_by_a_slow_first_run():
    """A lazy compile makes the first run 1 s: one run then already lasts long enough, and no
    later sample is inflated to hundreds of runs by the miss."""
    timer = ScriptedTimer([1.0, 1e-3])
    assert autorange(timer, SamplingPlan(min_sample_s=0.05)) == 1


def test_autorange_stops_at_max_runs():
    assert autorange(ScriptedTimer([0.0]), SamplingPlan(max_runs=64)) == 64


@pytest.mark.parametrize("values, expected", [
    ([1.00, 1.005, 1.009], True),
    ([1.00, 1.02, 1.01], False),
    ([1.00, 1.001], False),           # fewer than settle_count
])
def test_settled(values, expected):
    assert settled(values, SamplingPlan(settle_pct=1.0, settle_count=3)) is expected


def test_warm_up_lasts_until_samples_settle():
    # per-run times (autorange probes first): clocks ramping 10 %, 5 %, then steady
    timer = ScriptedTimer([0.01, 0.011, 0.0105, 0.01, 0.01, 0.01, 0.01])
    result = take_samples(timer, SamplingPlan(min_sample_s=0.01, repeats=4, min_warmup=1),
                          clock=FakeClock(0.001))
    assert result.settled and result.runs_per_sample == 1
    assert result.warmup == pytest.approx([0.011, 0.0105, 0.01, 0.01, 0.01])
    assert result.seconds == pytest.approx([0.01] * 4)
    assert result.rates(batch=8) == pytest.approx([800.0] * 4)


def test_warm_up_that_never_settles_is_cut_off_and_said():
    timer = ScriptedTimer([0.01, 0.01, 0.02, 0.01, 0.02, 0.01, 0.02, 0.01, 0.02])
    seen = []
    result = take_samples(timer, SamplingPlan(min_sample_s=0.005, repeats=2, max_warmup_s=0.5),
                          clock=FakeClock(0.2), on_sample=seen.append)
    assert not result.settled and len(result.seconds) == 2 and seen == [0, 1]


def test_block_median_counts_each_process_once():
    # one fast process with many samples does not outvote two slower ones
    samples = [10.0] * 9 + [8.0, 8.0]
    assert block_median(samples, [0] * 9 + [1, 2]) == 8.0
    assert block_median(samples, []) == 10.0          # blocks not recorded: plain median
    assert block_median([], []) is None


# States as NVML reported them on a GPU machine (clock-event reasons, other processes).
STEADY = {"sm_mhz": 1980, "mem_mhz": 3201, "temp_c": 41, "power_w": 402.5,
          "reasons": ["sw_power_cap"], "others": 0}
HOT = dict(STEADY, sm_mhz=1410, temp_c=89, reasons=["sw_thermal", "hw_thermal"])
SHARED = dict(STEADY, others=2)


def test_reason_bits_decode():
    assert reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal"]
    assert reason_names(0) == []


def test_power_cap_alone_does_not_spoil_a_row():
    assert spoiled([STEADY] * 10) is None
    assert spoiled([None] * 3) is None and spoiled([]) is None   # nothing recorded: not judged


def test_throttled_and_shared_samples_spoil_a_row():
    reason = spoiled([STEADY] * 7 + [HOT] * 3)
    assert reason == "GPU throttled (hw_thermal, sw_thermal) in 3 of 10 samples"
    assert spoiled([STEADY, SHARED]) == "2 other process(es) computing on the GPU in 1 of 2 samples"
    both = spoiled([HOT, SHARED])
    assert "throttled" in both and "other process" in both


def test_other_processes_unknown_in_a_container_do_not_spoil():
    assert spoiled([dict(STEADY, others=None)] * 4) is None


def test_slowed_timer_adds_whole_extra_runs():
    from bot.runner.delay import SlowedTimer, min_runs

    timer = SlowedTimer(ScriptedTimer([1e-3]), pct=0.5)
    n = min_runs(0.5)
    assert n == 200 and timer.extra(n) == 1 and timer.injected_pct(n) == pytest.approx(0.5)
    assert timer.seconds(n) == pytest.approx(201 * 1e-3)          # one extra run in the sample
    assert timer.injected_pct(1000) == pytest.approx(0.5)
    result = take_samples(timer, SamplingPlan(min_sample_s=0.01, repeats=3), clock=FakeClock(0.001),
                          min_runs=n)
    assert result.runs_per_sample >= 200
    assert result.seconds[0] == pytest.approx(1e-3 * (1 + timer.injected_pct(result.runs_per_sample) / 100))


@pytest.mark.parametrize("given", [None, 400])
def test_samples_lengthened_for_a_slowdown_warm_up_at_the_autoranged_length(given):
    """The warm-up of a calibration's verify A/B takes short samples; only the timed ones hold
    ``min_runs`` runs (a later process of the A/B is given the first one's length and
    autoranges its warm-up afresh)."""
    timer = ScriptedTimer([1e-3])
    result = take_samples(timer, SamplingPlan(min_sample_s=0.01, repeats=3), clock=FakeClock(0.001),
                          runs=given, min_runs=400)
    assert result.runs_per_sample == 400 and timer.calls[-3:] == [400, 400, 400]
    autoranged = [c for c in timer.calls[:-3] if c < 400]
    assert len(autoranged) == len(timer.calls) - 3 and max(autoranged) < 40   # 10 ms of 1 ms runs, and on
    assert len(result.warmup) >= 3 and result.seconds == [pytest.approx(1e-3)] * 3
    plain = ScriptedTimer([1e-3])
    take_samples(plain, SamplingPlan(min_sample_s=0.01, repeats=3), clock=FakeClock(0.001), runs=12)
    assert set(plain.calls) == {12}          # no min_runs: warm-up and samples alike, as before


def test_given_runs_skip_autorange():
    timer = ScriptedTimer([1e-3])
    result = take_samples(timer, SamplingPlan(min_sample_s=0.5, repeats=2), clock=FakeClock(0.001), runs=7)
    assert result.runs_per_sample == 7 and timer.calls[0] == 7


def _stat(path, user, system, idle, steal=0):
    path.write_text(f"cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4\n")


def test_cpu_watch_counts_other_work_and_steal(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    _stat(stat, 1000, 100, 5000)
    assert machine_ticks(str(stat)) == (1100, 6100)
    assert machine_ticks(str(tmp_path / "missing")) is None
    own = iter([0.0, 20.0, 20.0])  # the measuring process's own ticks at each read
    monkeypatch.setattr("bot.runner.cpu_state.own_ticks", lambda: next(own))
    watch = CpuWatch(str(stat))
    # 200 ticks of two CPUs: 60 busy (20 of them ours, 10 stolen by the hypervisor)
    _stat(stat, 1040, 110, 5140, steal=10)
    assert watch.snapshot() == {"others_cpu_pct": 20.0}
    _stat(stat, 1040, 110, 5340, steal=10)  # 200 idle ticks: nothing else ran
    assert watch.snapshot() == {"others_cpu_pct": 0.0}
    assert CpuWatch(str(tmp_path / "missing")).available is False


def test_a_sample_shorter_than_a_tick_shares_the_next_figure(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    _stat(stat, 1000, 100, 5000)
    own = iter([0.0, 0.0, 0.0, 0.0])
    monkeypatch.setattr("bot.runner.cpu_state.own_ticks", lambda: next(own))
    watch = CpuWatch(str(stat))
    _stat(stat, 1050, 100, 5150)            # 200 ticks, 50 of them other work
    assert watch.snapshot() == {"others_cpu_pct": 25.0}
    assert watch.snapshot() == {"others_cpu_pct": 25.0}     # no tick passed: the last figure
    _stat(stat, 1050, 100, 5350)
    assert watch.snapshot() == {"others_cpu_pct": 0.0}
