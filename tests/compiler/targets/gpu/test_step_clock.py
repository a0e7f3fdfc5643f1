"""A gpu root profiled on the device: each step is timed by the device's own clock, the hold
that lets the host queue the step's kernels first not counted (needs a CUDA GPU)."""
import pytest

from compiler.profiling import profile
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.step_clock import HOLD_NS, DeviceStepClock
from tests.compiler.test_multitarget_execution import FEEDS, mlp

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


def test_a_gpu_root_on_a_device_uses_the_device_clock():
    program = mlp().compile("gpu")
    [root] = program.compiled.context.roots.values()
    assert isinstance(root.step_clock(), DeviceStepClock)


def test_an_empty_step_reads_zero_and_a_kernel_its_time():
    import cupy
    clock = DeviceStepClock()
    assert 0 < clock.floor_s < 50e-6
    assert sorted(clock._empty_step() for _ in range(9))[4] < 1e-6
    x = cupy.random.default_rng(0).standard_normal((4096, 4096), dtype=cupy.float32)
    clock.start()
    for _ in range(10):
        x = x @ x / 64   # about 1.4 GFLOP each: tens of microseconds, far above the floor
    assert clock.stop() > 20e-6


def test_every_step_is_timed_without_the_hold():
    program = mlp().compile("gpu")
    entries = profile(program, FEEDS, runs=3)
    assert entries and all(e["mean_us"] >= 0 for e in entries) and max(e["mean_us"] for e in entries) > 0
    # the small model's steps take microseconds; a step that counted the hold would take 100 us
    assert all(e["mean_us"] < HOLD_NS / 1000 for e in entries)


def test_a_step_is_replayed_as_its_own_graph_and_returns_its_eager_value():
    import cupy
    clock = DeviceStepClock()
    assert 0 <= clock.graph_floor_s < 50e-6
    x = cupy.random.default_rng(1).standard_normal((2048, 2048), dtype=cupy.float32)

    def step(a):
        for _ in range(4):
            a = cupy.tanh(a) * 1.5 + 0.25      # several kernels, one after the other
        return a
    value, seconds = clock.time_step(step, (x,))
    want = step(x)
    cupy.testing.assert_allclose(value, want, rtol=1e-6)
    assert seconds > 0 and id(step) not in clock._unrecordable


def test_a_step_that_cannot_be_recorded_is_timed_eagerly():
    import cupy
    clock = DeviceStepClock()
    x = cupy.arange(1 << 20, dtype=cupy.float32)

    def syncing(a):                            # a host synchronisation: no recording takes it
        total = float(a.sum())
        return a * total
    value, seconds = clock.time_step(syncing, (x,))
    cupy.testing.assert_allclose(value, x * float(x.sum()))
    assert id(syncing) in clock._unrecordable and seconds >= 0

    def flagged(a):
        return a + 1
    flagged.capturable = False                 # as the root's steps say of themselves
    value, _ = clock.time_step(flagged, (x,))
    cupy.testing.assert_allclose(value, x + 1)
    assert id(flagged) not in clock._unrecordable
