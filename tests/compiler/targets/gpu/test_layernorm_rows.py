"""LayerNormalization over the last axis as one kernel, compiled whole against the reference on
fresh random inputs (needs a CUDA GPU): odd and ConvNeXt widths, fp32 and fp16, with and without
bias, and ConvNeXt's channels-last form (Transpose, LayerNorm, Transpose back)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.cases import init, model, vi

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


def _layernorm(dtype, shape, bias: bool, channels_last: bool):
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rng = np.random.default_rng(2)
    width = shape[1] if channels_last else shape[-1]
    inputs = ["t" if channels_last else "x", "g"] + (["b"] if bias else [])
    nodes = [helper.make_node("LayerNormalization", inputs, ["n" if channels_last else "y"], axis=-1, epsilon=1e-6)]
    if channels_last:
        nodes = ([helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1])] + nodes
                 + [helper.make_node("Transpose", ["n"], ["y"], perm=[0, 3, 1, 2])])
    inits = [init("g", (1 + 0.3 * rng.standard_normal(width)).astype(dtype))]
    if bias:
        inits.append(init("b", rng.standard_normal(width).astype(dtype)))
    return model(nodes, [vi("x", shape, t)], [vi("y", None, t)], inits)


@pytest.mark.parametrize("dtype, shape, bias, channels_last", [
    ("float32", (3, 5, 37), True, False), ("float32", (2, 9, 768), False, False),
    ("float16", (4, 3, 96), True, False), ("float16", (2, 96, 13, 11), True, True),
    ("float32", (2, 40, 7, 9), True, True)])
def test_layernorm_matches_reference(dtype, shape, bias, channels_last):
    onnx_model = _layernorm(dtype, shape, bias, channels_last)
    program = compiler.parse_onnx(onnx_model).compile("gpu")
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    steps = program.compiled.context.roots["main"].body.steps
    assert [getattr(fn, "path", "") for _i, fn, _a, _d in steps].count("layernorm-rows") == 1
    tol = 1e-5 if dtype == "float32" else 4e-3
    rng = np.random.default_rng(9)
    for _ in range(3):      # eager, recorded into CUDA graphs, replayed
        feeds = {"x": (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)}
        (got,), (want,) = program.run(feeds), reference.run(feeds)
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=tol, atol=tol)
