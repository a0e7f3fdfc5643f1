"""process_state.py without a GPU: a program's first run keeps each step's kind and arguments on
the emulated gpu target, an action picks the steps it runs again (which give the same values),
and the table from recorded results."""
from __future__ import annotations

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import compiler
from compiler.targets.gpu.options import GpuOptions
from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
import process_state  # noqa: E402


def _model():
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    m = numpy_helper.from_array(rng.standard_normal((4 * 8 * 8, 5)).astype(np.float32), "m")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                               helper.make_node("Relu", ["c"], ["r"]),
                               helper.make_node("Flatten", ["r"], ["f"]),
                               helper.make_node("MatMul", ["f", "m"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, m])
    return helper.make_model(graph)


def test_the_first_run_keeps_every_step_and_an_action_runs_its_kinds_again():
    program = compiler.parse_onnx(_model()).compile("gpu", offload_copy=False,
                                                    gpu_options=GpuOptions(emulate=True))
    body = process_state.gpu_bodies(program)[0]
    own = [fn for _ins, fn, _inputs, _dead in body.steps]
    x = np.random.default_rng(4).standard_normal((2, 3, 8, 8)).astype(np.float32)
    args = [x] + [np.empty(p.shape.lens, p.shape.dtype) for p in program.main.parameters()[1:]]
    kept = process_state.run_keeping_arguments(program, args)
    assert len(kept) == len(own)
    assert [fn for _ins, fn, _inputs, _dead in body.steps] == own   # the program's own steps again
    assert process_state.selected(kept, "none") == [] and process_state.selected(kept, "all") == kept
    assert process_state.selected(kept, "cold") == []       # its process compiled afresh, nothing run again
    matmuls = process_state.selected(kept, "MatMul+NoSuchOp")
    assert [kind for kind, _fn, _xs in matmuls] == ["MatMul"]
    (_kind, fn, xs), = matmuls
    expected = compiler.parse_onnx(_model()).compile("ref").run({"x": x})[0]
    np.testing.assert_allclose(np.asarray(fn(*xs)), expected, rtol=1e-5, atol=1e-5)


def test_the_table_gives_the_change_of_each_action():
    text = process_state.table([
        {"row": "r1", "action": "none", "status": "ok", "steps_run": 0, "before_us": [545.0, 546.0, 544.0],
         "after_us": [545.0, 545.0, 545.0]},
        {"row": "r1", "action": "split-gemm+cudnn", "status": "ok", "steps_run": 9,
         "before_us": [545.0, 545.0, 545.0], "after_us": [590.0, 589.0, 591.0]},
        {"row": "r1", "action": "all", "status": "error", "problem": "OutOfMemory"},
        {"row": "r1", "action": "refill0.5x20", "status": "ok", "steps_run": 0, "pool_mb": [98.7, 99.2],
         "before_us": [545.0, 545.0, 545.0], "after_us": [545.0, 545.0, 545.0]},
        {"row": "r1", "action": "copies3", "status": "ok", "steps_run": 0,
         "before_us": [545.0, 545.0, 545.0], "after_us": [560.0, 545.0, 547.0]}])
    lines = text.splitlines()
    assert lines[1].split() == ["r1", "none", "0", "545.0", "545.0", "+0.0%"]
    assert lines[2].split() == ["r1", "split-gemm+cudnn", "9", "545.0", "590.0", "+8.3%"]
    assert lines[3].split()[:3] == ["r1", "all", "error:"]
    assert lines[4].endswith("pool 98.7->99.2 MB") and "pool" not in lines[2]
    assert lines[5].split()[:6] == ["r1", "copies3", "0", "545.0", "547.0", "+0.4%"]
    assert lines[5].endswith("copies 545.0-560.0 us")       # each copy's median, the lowest and highest


def test_only_a_copies_action_compiles_copies():
    assert process_state.copy_timers("none", "no-such-row") == []
    assert process_state.copy_timers("peer", "no-such-row") == []


def test_each_expands_to_one_action_per_kind():
    assert process_state.expanded(["none", "each", "", "all"], ["Gemm", "split-gemm"]) == [
        "none", "Gemm", "split-gemm", "all"]


def test_a_range_selects_steps_in_run_order():
    kept = [("a", None, ()), ("b", None, ()), ("c", None, ())]
    assert process_state.selected(kept, "1-3") == kept[1:3]


def test_a_step_action_takes_no_memory_of_its_own():
    assert process_state.allocate("15-18") == [] and process_state.allocate("all") == []


def test_a_cold_action_runs_in_a_process_with_an_empty_plan_cache_of_its_own(monkeypatch):
    seen = []
    monkeypatch.setattr(process_state, "run_json",
                        lambda code, args, env=None, timeout=0: seen.append((args[1], env)) or {"status": "ok"})
    process_state.fresh_process("r1", "none")
    process_state.fresh_process("r1", "cold")
    (_none, warm_env), (_cold, cold_env) = seen
    assert warm_env is None and set(cold_env) == {"PERFBOT_GPU_CACHE"}
    assert "perfbot-cold-plans-" in cold_env["PERFBOT_GPU_CACHE"]
