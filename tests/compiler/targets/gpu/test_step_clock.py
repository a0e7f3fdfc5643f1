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


def test_every_step_is_timed_without_the_hold():
    program = mlp().compile("gpu")
    entries = profile(program, FEEDS, runs=3)
    assert entries and all(e["mean_us"] > 0 for e in entries)
    # the small model's steps take microseconds; a step that counted the hold would take 100 us
    assert all(e["mean_us"] < HOLD_NS / 1000 for e in entries)
