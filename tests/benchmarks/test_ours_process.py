"""ours_process.py without a GPU: the child compiles on the emulated gpu target and answers the
peers benchmark's requests (a sample's seconds, the output, the same as the reference's); a child
whose compile tuned is replaced once; a child's failure is the row's error."""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import compiler
from tests import paths

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
from ours_process import OursProcess  # noqa: E402


def _model_file(folder):
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((6, 5)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    path = folder / "m.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    return path


def test_the_child_compiles_times_and_gives_the_output_of_the_program(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")
    monkeypatch.setenv("PYTHONPATH", str(paths.ROOT))
    path = _model_file(tmp_path)
    x = np.random.default_rng(8).standard_normal((3, 6)).astype(np.float32)
    with OursProcess(str(path), 3, "fp32", {"x": x}) as ours:
        assert ours.compile_s >= 0 and not ours.replaced
        assert all(ours.seconds(4) > 0 for _ in range(2))
        want = compiler.parse_onnx(str(path)).compile("ref").run({"x": x})[0]
        np.testing.assert_allclose(ours.output(), want, rtol=1e-6, atol=1e-6)


# A stand-in child: says its first compile tuned (a marker file tells the second start from the
# first), then answers every request with one second.
STAND_IN = textwrap.dedent("""
    import json, os, sys
    marker = os.path.join(os.path.dirname(sys.argv[4]), "started")
    first = not os.path.exists(marker)
    open(marker, "a").write("start\\n")
    print(json.dumps({"compile_s": 0.5, "tuned": 3 if first else 0}), flush=True)
    for line in sys.stdin:
        print(json.dumps({"seconds": 1.0}), flush=True)
""")


def test_a_child_whose_compile_tuned_is_replaced_once(tmp_path):
    server = tmp_path / "server.py"
    server.write_text(STAND_IN)
    with OursProcess("m.onnx", 1, "fp32", {"x": np.zeros(1)}, server=[sys.executable, str(server)]) as ours:
        assert ours.replaced and ours.seconds(3) == 1.0
        with open(f"{ours.folder.name}/started") as fh:
            assert fh.read().count("start") == 2


def test_a_child_that_fails_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFBOT_GPU_EMULATE", "1")
    monkeypatch.setenv("PYTHONPATH", str(paths.ROOT))
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    with pytest.raises(RuntimeError, match="our process: ModelLoadError"):
        OursProcess(str(tmp_path / "bad.onnx"), 1, "fp32", {"x": np.zeros(1, np.float32)})
