"""compiler.onnx_backend: the onnx backend API over the compiler's targets."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.errors import CompileError
from compiler.onnx import testing
from compiler.onnx_backend import PerfbotBackend, TARGET_ENV


def test_prepare_and_run_on_the_named_target():
    model = testing.node_model("Softmax", {"x": ("float32", [2, 5])}, {"y": ("float32", [2, 5])})
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    rep = PerfbotBackend.prepare(model, "CPU", target="ref")
    (y,) = rep.run([x])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6)
    (y2,) = PerfbotBackend.run_model(model, {"x": x})
    np.testing.assert_array_equal(y, y2)


def test_unknown_target_is_a_compile_error():
    model = testing.node_model("Relu", {"x": ("float32", [2])}, {"y": ("float32", [2])})
    with pytest.raises(CompileError, match="unknown target"):
        PerfbotBackend.prepare(model, target="tpu")


def test_run_node():
    node = helper.make_node("Add", ["a", "b"], ["c"])
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, np.float32)
    (c,) = PerfbotBackend.run_node(node, [a, b])
    np.testing.assert_array_equal(c, a + b)


def test_device_follows_the_target(monkeypatch):
    monkeypatch.delenv(TARGET_ENV, raising=False)
    assert PerfbotBackend.supports_device("CPU") and not PerfbotBackend.supports_device("CUDA")
    monkeypatch.setenv(TARGET_ENV, "gpu")
    assert PerfbotBackend.supports_device("CUDA") and not PerfbotBackend.supports_device("CPU")


def test_rank_that_depends_on_an_input_value_is_specialised_per_run():
    # Squeeze whose axes are a graph input: which axes go is unknown until run time.
    graph = helper.make_graph([helper.make_node("Squeeze", ["x", "axes"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1, 2]),
                               helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c"])])
    model = testing.model_of(graph, 18)
    rep = PerfbotBackend.prepare(model)
    assert rep.program is None
    x = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
    assert rep.run([x, np.array([0], np.int64)])[0].shape == (3, 1, 2)
    assert rep.run([x, np.array([-2], np.int64)])[0].shape == (1, 3, 2)
