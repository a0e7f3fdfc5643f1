"""fp16 linear layers as one cuBLASLt GEMM with a bias + GELU (erf and tanh forms) or bias +
residual epilogue, against the reference of the unfused fp32 graph on fresh random inputs (needs
a CUDA GPU): ViT's sequence length 197 and an odd width, eager, recorded into CUDA graphs and
replayed."""
import math

import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.passes.test_fuse_linear_epilogue import _erf, _tanh
from tests.compiler.targets.gpu.cases import init, model, vi

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]

N = helper.make_node


def _linear(tail, tail_inits, shape, n, residual=False):
    rng = np.random.default_rng(8)
    k = shape[-1]
    nodes = [N("MatMul", ["x", "w"], ["p"]), N("Add", ["b", "p"], ["h"])] + tail
    inits = [init("w", (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32)),
             init("b", rng.standard_normal(n).astype(np.float32))] + tail_inits
    inputs = [vi("x", shape)] + ([vi("r", shape[:-1] + (n,))] if residual else [])
    return model(nodes, inputs, [vi("y", None)], inits)


CASES = {"erf": (lambda s, n: _linear(*_erf(), s, n), "lt-linear-gelu"),
         "tanh": (lambda s, n: _linear(*_tanh(), s, n), "lt-linear-gelu"),
         "residual": (lambda s, n: _linear([N("Add", ["h", "r"], ["y"])], [], s, n, residual=True), "lt-linear")}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("shape, n", [((4, 197, 96), 384), ((3, 49, 40), 24)])
def test_linear_epilogue_matches_reference(case, shape, n):
    build, path = CASES[case]
    onnx_model = build(shape, n)
    program = compiler.parse_onnx(onnx_model).compile("gpu", fp16=True)
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    steps = program.compiled.context.roots["main"].body.steps
    assert [getattr(fn, "path", "") for _i, fn, _a, _d in steps].count(path) == 1
    rng = np.random.default_rng(21)
    for _ in range(3):      # eager, recorded into CUDA graphs, replayed: fresh inputs each
        x = {v.name: rng.standard_normal([d.dim_value for d in v.type.tensor_type.shape.dim]).astype(np.float32)
             for v in onnx_model.graph.input}
        (got,), (want,) = program.run(x), reference.run(x)
        assert np.abs(np.asarray(got, np.float32) - want).max() <= 1e-2 * max(1.0, np.abs(want).max())
    assert program.compiled.context.roots["main"].graph_error is None
