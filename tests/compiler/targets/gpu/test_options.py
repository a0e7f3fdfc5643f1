"""``GpuOptions``: the gpu target's one reader of its variables (no GPU needed)."""
from dataclasses import fields, replace

from compiler.compile import CompileOptions
from compiler.targets.gpu.options import SWITCHES, GpuOptions, set_switches


def test_defaults_without_variables():
    assert GpuOptions.from_environment({}) == GpuOptions()
    assert GpuOptions().candidates("float32") == 8 and GpuOptions().candidates("float16") == 4


def test_each_variable_sets_its_field():
    env = {"PERFBOT_GPU_CACHE": "/c", "PERFBOT_GPU_PLAN_CACHE": "0", "PERFBOT_GPU_FP32_SPLIT": "0",
           "PERFBOT_GPU_FP32_CONV": "gemm", "PERFBOT_GPU_AUTOTUNE": "1", "PERFBOT_GPU_AUTOTUNE_PLANS": "3",
           "PERFBOT_GPU_TF32": "1", "PERFBOT_GPU_GRAPHS": "0", "PERFBOT_GPU_HIDE": " cuDNN ,cublas",
           "PERFBOT_GPU_EMULATE": "1"}
    got = GpuOptions.from_environment(env)
    assert got == GpuOptions(cache_dir="/c", plan_cache=False, fp32_split=False, fp32_conv="gemm", autotune=True,
                             autotune_plans=3, tf32=True, graphs=False, hide=("cublas", "cudnn", "frontend"),
                             emulate=True)
    assert got.candidates("float32") == 3
    assert set(env) == set(SWITCHES)          # every variable documented once, each with its field
    assert {f for f, _meaning in SWITCHES.values()} == {f.name for f in fields(GpuOptions)}


def test_the_compile_option_decides_graph_replay_and_a_given_object_wins():
    env = {"PERFBOT_GPU_GRAPHS": "0"}
    assert not GpuOptions.of(CompileOptions(), env).graphs
    assert GpuOptions.of(CompileOptions(extra={"cuda_graphs": True}), env).graphs
    given = GpuOptions(fp32_conv="cudnn")
    assert GpuOptions.of(CompileOptions(extra={"gpu_options": given}), env) == given
    assert not GpuOptions.of(CompileOptions(extra={"gpu_options": given, "cuda_graphs": False})).graphs


def test_every_field_is_part_of_the_key():
    base = GpuOptions()
    changed = [replace(base, cache_dir="x"), replace(base, tf32=True), replace(base, autotune_plans=2),
               replace(base, fp32_conv="gemm"), replace(base, plan_cache=False)]
    assert len({base.key(), *(o.key() for o in changed)}) == 1 + len(changed)


def test_set_switches_names_unread_variables_apart():
    given, unknown = set_switches({"PERFBOT_GPU_TF32": "1", "PERFBOT_GPU_NHWC": "0", "HOME": "/"})
    assert given == {"PERFBOT_GPU_TF32": "1"} and unknown == ["PERFBOT_GPU_NHWC"]


def test_the_pipeline_lists_the_passes_then_the_lowering_steps_that_run(monkeypatch):
    """``GpuTarget.pipeline``: every pass, then every lowering step; the root runs those steps."""
    import numpy as np

    import compiler
    from compiler.targets.gpu import lowering_steps, make_target
    from tests.compiler.targets.gpu.cases import build, feeds_for
    lines = make_target().pipeline(CompileOptions())
    assert lines[0].startswith("pass ") and [ln.split(":")[0] for ln in lines if ln.startswith("lowering")] == [
        "lowering build_ahead", "lowering concat_chains", "lowering lower", "lowering split_prologues",
        "lowering outputs_in_place",
        "lowering memory_plan"]
    from compiler.targets.gpu import executor
    ran = []

    def recorded(step):
        return replace(step, run=lambda root: ran.append(step.name) or step.run(root))
    monkeypatch.setattr(executor, "ROOT_STEPS", tuple(recorded(s) for s in lowering_steps.ROOT_STEPS))
    program = compiler.parse_onnx(build("conv_add_relu")).compile("gpu", gpu_options=GpuOptions(emulate=True))
    assert ran == ["build_ahead", "concat_chains", "lower", "memory_plan"]
    feeds = feeds_for(program, 1)
    ref = compiler.parse_onnx(build("conv_add_relu")).compile("ref").run(feeds)
    np.testing.assert_allclose(program.run(feeds)[0], ref[0], rtol=1e-4, atol=1e-5)
