"""Max and average pools over one or three spatial axes on the gpu target (``pool_windows``):
padding, ceil mode, dilations and counted padding against the reference operators, with NumPy
standing in for CuPy (on a GPU, ``test_ops`` runs the same cases through CUDA graphs)."""
import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.targets.gpu.cases import model, vi

CASES = {
    "max1d_padded": ("MaxPool", (2, 3, 17), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    "max1d_ceil": ("MaxPool", (2, 3, 17), {"kernel_shape": [3], "strides": [2], "ceil_mode": 1}),
    "max1d_dilated": ("MaxPool", (2, 3, 20), {"kernel_shape": [3], "dilations": [2], "pads": [2, 2]}),
    "avg1d_counted_ceil": ("AveragePool", (2, 3, 17), {"kernel_shape": [4], "strides": [3], "pads": [1, 2],
                                                       "count_include_pad": 1, "ceil_mode": 1}),
    "avg1d": ("AveragePool", (2, 3, 17), {"kernel_shape": [4], "strides": [3], "pads": [1, 2]}),
    "max3d": ("MaxPool", (1, 2, 5, 9, 8), {"kernel_shape": [2, 3, 3], "strides": [1, 2, 2],
                                           "pads": [0, 1, 1, 1, 1, 1]}),
    "avg3d_ceil": ("AveragePool", (1, 2, 5, 9, 8), {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2],
                                                    "pads": [1, 1, 1, 1, 1, 1], "ceil_mode": 1}),
}


@pytest.mark.parametrize("fp16", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_pools_match_the_reference(name, fp16):
    op, shape, attrs = CASES[name]
    onnx_model = model([helper.make_node(op, ["x"], ["y"], **attrs)], [vi("x", shape)], [vi("y", None)])
    x = np.random.default_rng(len(name)).standard_normal(shape).astype(np.float32)
    want = compiler.parse_onnx(onnx_model).compile("ref").run({"x": x})[0]
    program = compiler.parse_onnx(onnx_model).compile("gpu", fp16=fp16, gpu_options=GpuOptions(emulate=True))
    steps = program.compiled.context.roots["main"].body.steps
    assert [getattr(fn, "path", "") for ins, fn, _i, _d in steps if ins.op == op] == [f"pool{len(shape) - 2}d-windows"]
    tol = 2e-3 if fp16 else 0
    np.testing.assert_allclose(program.run({"x": x})[0], want, rtol=tol, atol=tol)
