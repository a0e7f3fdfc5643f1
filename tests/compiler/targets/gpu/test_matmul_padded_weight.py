"""A fp16 product with a literal weight whose rows are not whole 16-byte loads (GPT-2's tied
50,257-word head) runs on a zero-padded copy of the weight: against the reference on fresh
random inputs, eager, recorded into CUDA graphs and replayed (needs a CUDA GPU), and read on by
a later op."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.cases import init, model, vi

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.mark.parametrize("shape, n", [((2, 37, 64), 1001), ((96, 128), 257)])
def test_padded_weight_product_matches_reference(shape, n):
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((shape[-1], n)) / np.sqrt(shape[-1])).astype(np.float16)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Relu", ["p"], ["y"])]
    onnx_model = model(nodes, [vi("x", shape, TensorProto.FLOAT16)], [vi("y", None, TensorProto.FLOAT16), vi("p", None, TensorProto.FLOAT16)],
                       [init("w", w)])
    program = compiler.parse_onnx(onnx_model).compile("gpu")
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    for seed in range(3):
        x = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float16)}
        for got, want in zip(program.run(x), reference.run(x)):
            assert got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
