"""The count of choices a process timed and kept (``compiler.tuning``), which the runner reads
around a compile."""
from compiler import tuning
from compiler.targets.gpu.kernels.conv_plans import plan_cache, remember_plan
from compiler.targets.gpu.options import GpuOptions


def test_keeping_a_timed_choice_counts_as_tuning(tmp_path):
    options = GpuOptions(cache_dir=str(tmp_path), emulate=True)
    before = tuning.count()
    remember_plan(options, "conv|a", "split-gemm")
    remember_plan(options, "conv|b", 2)
    assert tuning.count() == before + 2
    assert plan_cache(options)["conv|a"] == "split-gemm"


def test_reading_a_kept_choice_does_not(tmp_path):
    options = GpuOptions(cache_dir=str(tmp_path / "other"), emulate=True)
    before = tuning.count()
    assert plan_cache(options).get("conv|a") is None
    assert tuning.count() == before
