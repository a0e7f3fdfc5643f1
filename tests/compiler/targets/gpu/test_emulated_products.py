"""The emulated gpu target (NumPy standing in for CuPy) keeps a product in its operands' dtype,
as MatMul defines it: NumPy multiplies bfloat16 (ml_dtypes) operands into float32, which made the
bfloat16 attention conformance cases return float32. Checked against the reference target on
fresh random inputs."""
import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.targets.gpu.cases import model, vi

BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 4, 8), (2, 3, 8, 6)), ((5, 16), (16, 7))])
def test_emulated_bfloat16_product_stays_bfloat16(a_shape, b_shape):
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"])]
    onnx_model = model(nodes, [vi("a", a_shape, TensorProto.BFLOAT16), vi("b", b_shape, TensorProto.BFLOAT16)],
                       [vi("y", None, TensorProto.BFLOAT16)], [])
    program = compiler.parse_onnx(onnx_model).compile("gpu", gpu_options=GpuOptions(emulate=True))
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    for seed in (3, 4):
        rng = np.random.default_rng(seed)
        feeds = {"a": rng.standard_normal(a_shape).astype(BF16), "b": rng.standard_normal(b_shape).astype(BF16)}
        (got,), (want,) = program.run(feeds), reference.run(feeds)
        assert got.dtype == want.dtype == BF16
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)
