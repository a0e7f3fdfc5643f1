"""``perfbot models check``'s onnx.checker step: a model carrying ONNX Runtime's standard-domain
operators (onnxruntime-genai's SimplifiedLayerNormalization) is checked everywhere else, and a
real fault still shows."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from models.check import checker_problem


def _saved(tmp_path, op: str, name: str = "m.onnx"):
    nodes = [helper.make_node(op, ["x", "w"], ["n"], epsilon=1e-6, axis=-1), helper.make_node("Relu", ["n"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                              [numpy_helper.from_array(np.ones(8, np.float32), "w")])
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_onnx_runtime_s_standard_domain_norm_is_not_a_fault(tmp_path):
    assert checker_problem(_saved(tmp_path, "SimplifiedLayerNormalization")) is None
    assert list(tmp_path.iterdir()) == [tmp_path / "m.onnx"]      # the copy it checked is gone


def test_an_operator_nobody_registers_is_still_refused(tmp_path):
    assert "No Op registered for NoSuchNorm" in checker_problem(_saved(tmp_path, "NoSuchNorm"))


def test_the_rest_of_such_a_model_is_still_checked(tmp_path):
    path = _saved(tmp_path, "SimplifiedLayerNormalization")
    model = onnx.load(path)
    model.graph.node[1].input[0] = "missing"        # a node reading a value nobody makes
    onnx.save(model, path)
    assert "missing" in checker_problem(path)
