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
    assert lines[-1] == "cold parse + compile: median 1.50 s, most 2.50 s; 1 of 2 rows over 2 s"


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
