"""cold_compile.py without a GPU: the table from recorded results, and a fresh process compiling a
small model on the emulated gpu target with the cache folders it is given."""
from __future__ import annotations

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
import cold_compile  # noqa: E402


def _ok(row, kind, parse, compile_, plans=("0.400s rc=True conv 64x3x224x224",)):
    return {"row": row, "kind": kind, "status": "ok", "parse_s": parse, "compile_s": compile_,
            "first_run_s": 0.05, "plan_s": 0.4, "slowest_plans": list(plans)}


def test_the_table_gives_cold_and_warm_totals_and_counts_rows_over_the_goal():
    text = cold_compile.table([_ok("tv:a:64:fp16", "cold", 0.5, 2.0), _ok("tv:a:64:fp16", "warm", 0.5, 0.3),
                               _ok("tv:b:1:fp32", "cold", 0.1, 0.4), _ok("tv:b:1:fp32", "warm", 0.1, 0.2),
                               {"row": "tv:c:1:fp16", "kind": "cold", "status": "error", "problem": "OutOfMemory"},
                               {"row": "tv:c:1:fp16", "kind": "warm", "status": "error", "problem": "OutOfMemory"}])
    lines = text.splitlines()
    assert lines[1].split()[:5] == ["tv:a:64:fp16", "2.50", "0.50", "0.80", "0.05"] and "conv 64x3x224x224" in lines[1]
    assert lines[2].split()[:4] == ["tv:b:1:fp32", "0.50", "0.10", "0.30"]
    assert lines[3] == "tv:c:1:fp16                    error: OutOfMemory"
    assert lines[-1] == ("cold parse + compile: median 1.50 s, most 2.50 s; 1 of 2 rows over 2 s; to the first "
                         "result (the first run too): median 1.55 s, most 2.55 s")


def test_a_fresh_process_compiles_with_the_caches_it_is_given(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                               helper.make_node("Relu", ["c"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    path = tmp_path / "conv.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")
    monkeypatch.setenv("PYTHONPATH", str(paths.ROOT))
    caches = {"PERFBOT_GPU_CACHE": str(tmp_path / "plans")}
    result = cold_compile.fresh_process(str(path), 2, "fp16", caches)
    assert result["status"] == "ok", result
    assert result["parse_s"] >= 0 and result["compile_s"] > 0 and result["first_run_s"] >= 0
    missing = cold_compile.fresh_process(str(tmp_path / "none.onnx"), 2, "fp32", caches)
    assert missing["status"] == "error" and "no such file" in missing["problem"]


def test_each_nvrtc_compile_is_recorded_with_its_kernels_thread_and_asking_frame(monkeypatch):
    import types
    calls = []
    fake = types.ModuleType("cupy.cuda.compiler")
    fake._compile_using_nvrtc_no_warning = lambda source, *args, **kwargs: calls.append(source) or (b"", {})
    cuda = types.ModuleType("cupy.cuda")
    cuda.compiler = fake
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.compiler", fake)
    records = cold_compile.record_kernel_compiles()
    # the lowering's frame asking for a kernel, as a file under compiler/ would
    asking = {}
    exec(compile("def split(source):\n    return compiler._compile_using_nvrtc_no_warning(source, ())\n",
                 "/src/compiler/targets/gpu/kernels/split_bf16.py", "exec"), {"compiler": fake}, asking)
    source = 'extern "C" __global__ void cupy_copy__float32_float32(float* x) {}\n__global__ void b() {}'
    assert asking["split"](source) == (b"", {}) and calls == [source]
    assert len(records) == 1
    assert records[0]["kernels"] == ["cupy_copy__float32_float32", "b"]
    assert records[0]["caller"] == "targets/gpu/kernels/split_bf16.py:2 split"
    assert records[0]["thread"] == "MainThread" and records[0]["s"] >= 0


def test_the_summary_ranks_kernels_by_the_compile_time_they_cost_over_the_cold_rows():
    def compiled(kernel, s, thread="MainThread", caller="targets/gpu/conv_split.py:105 run"):
        return {"s": s, "thread": thread, "kernels": [kernel], "caller": caller}
    cold = dict(_ok("tv:a:64:fp32", "cold", 0.5, 2.0), kernel_compiles=[
        compiled("cupy_copy__float32_float32", 0.4), compiled("perfbot_split_narrow", 0.5, "split-bf16 compile"),
        compiled("cupy_copy__float32_float32", 0.3)])
    other = dict(_ok("tv:b:64:fp32", "cold", 0.5, 1.0), kernel_compiles=[compiled("cupy_copy__float32_float32", 0.35)])
    warm = dict(_ok("tv:a:64:fp32", "warm", 0.5, 0.3), kernel_compiles=[compiled("never_counted", 9.0)])
    lines = cold_compile.table([cold, warm, other]).splitlines()
    assert lines[1].split()[5:8] == ["3", "0.70", "s"]     # three compiles, 0.70 s of them on the main thread
    summary = lines[-2:]
    assert summary[0].split()[:5] == ["3", "x", "1.05", "s", "main"] and "cupy_copy__float32_float32" in summary[0]
    assert summary[1].split()[:5] == ["1", "x", "0.50", "s", "ahead"] and "perfbot_split_narrow" in summary[1]
