"""compiler.profiling: time per instruction on the ref, cpu and gpu targets (the gpu root run
eagerly for it), per root in partitioned programs, the whole root for a root without steps, and
the program unchanged afterwards; a whole run timed as it runs, for the entries to add up to."""
import numpy as np
import pytest

from compiler.profiling import place, profile, run_seconds
from tests.compiler.test_multitarget_execution import FEEDS, mlp


@pytest.mark.parametrize("target", ["ref", "cpu"])
def test_every_instruction_of_a_host_program_gets_an_entry(target):
    program = mlp().compile(target)
    want = mlp().compile("ref").run(FEEDS)
    entries = profile(program, FEEDS, runs=2)
    assert entries and all(e["root"] == "main" and e["calls"] == 1 for e in entries)
    assert [e["mean_us"] for e in entries] == sorted((e["mean_us"] for e in entries), reverse=True)
    assert all(e["mean_us"] > 0 for e in entries)
    if target == "ref":       # unfused: one entry per operator, the named one by its name
        assert sorted(e["op"] for e in entries) == sorted(
            ["MatMul", "Add", "Relu", "Tanh", "MatMul", "Sigmoid"])
        assert "squash" in {e["name"] for e in entries}
    for got, exp in zip(program.run(FEEDS), want):   # instrumentation removed, results intact
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)


def test_a_partitioned_program_is_profiled_per_root_without_the_calls():
    program = mlp().compile(["cpu", "ref"], assign={"Tanh": "ref"})
    entries = profile(program, FEEDS, runs=1)
    assert {e["root"] for e in entries} >= {"main"} | set(program.roots) - {"main"}
    assert "run_on_target" not in {e["op"] for e in entries}
    assert any(e["op"] == "Tanh" for e in entries)


def test_a_whole_run_is_timed_uninstrumented_across_roots():
    program = mlp().compile(["cpu", "ref"], assign={"Tanh": "ref"})
    calls = []
    real = program.compiled.run_raw
    program.compiled.run_raw = lambda args: calls.append(1) or real(args)
    seconds = run_seconds(program, FEEDS, runs=5, warmup=1)
    assert seconds > 0 and len(calls) == 6     # warm-up, then the timed runs


def test_placed_feeds_are_copied_once_for_a_profile_and_a_whole_run():
    program = _emulated_gpu_program()
    copies = []
    real = program.compiled.device_arguments
    program.compiled.device_arguments = lambda feeds: copies.append(1) or real(feeds)
    placed = place(program, FEEDS)
    entries = profile(program, placed, runs=1)
    seconds = run_seconds(program, placed, runs=2, warmup=1)
    assert len(copies) == 1 and entries and seconds > 0


def _emulated_gpu_program():
    from compiler.targets.gpu.options import GpuOptions
    return mlp().compile("gpu", gpu_options=GpuOptions(emulate=True))


def test_a_gpu_root_is_profiled_step_by_step_and_replays_after():
    program = _emulated_gpu_program()
    root = program.compiled.context.roots["main"]
    want = mlp().compile("ref").run(FEEDS)
    entries = profile(program, FEEDS, runs=2)
    assert "gpu root" not in {e["op"] for e in entries}
    assert {"MatMul"} <= {e["op"] for e in entries} and all(e["calls"] == 1 for e in entries)
    assert "run" not in vars(root)
    for got, exp in zip(program.run(FEEDS), want):
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)
    root.use_graphs = True          # as on a GPU: eager while stepwise, its graphs again after
    with root.stepwise() as body:
        assert root.use_graphs is False and body is root.body
    assert root.use_graphs is True


def test_a_root_without_steps_is_one_entry(monkeypatch):
    from compiler.targets.gpu.executor import GpuRoot
    monkeypatch.delattr(GpuRoot, "stepwise")      # a root that runs only whole
    program = _emulated_gpu_program()
    root = program.compiled.context.roots["main"]
    entries = profile(program, FEEDS, runs=1)
    assert [(e["root"], e["op"]) for e in entries] == [("main", "gpu root")]
    assert "run" not in vars(root)


def test_profiling_an_uncompiled_program_is_refused():
    with pytest.raises(ValueError, match="compile the program"):
        profile(mlp(), FEEDS)
