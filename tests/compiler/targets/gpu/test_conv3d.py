"""3-D convolutions (video models) take cuDNN's channels-last graphs like 2-D ones: the layout
helper checked without a GPU, and on a GPU the path they take and their results."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.kernels.channels_last import memory_axes
from compiler.targets.gpu.ops_nn import to_nhwc

from tests.compiler.targets.gpu.cases import build, feeds_for


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 4, 5, 6)])
def test_to_nhwc_stores_any_rank_channels_last_and_keeps_the_values(shape):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    y = to_nhwc(np, x)
    assert y.shape == x.shape and y.transpose(memory_axes(x.ndim)).flags.c_contiguous
    np.testing.assert_array_equal(y, x)
    assert to_nhwc(np, y) is y          # already channels-last: no copy


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("fp16", [False, True])
@pytest.mark.parametrize("name", ["conv3d", "conv3d_stem"])
def test_three_d_convolutions_run_as_cudnn_graphs(name, fp16):
    program = compiler.parse_onnx(build(name)).compile("gpu", fp16=fp16)
    root = program.compiled.context.roots["main"]
    paths = {getattr(fn, "path", "") for ins, fn, _i, _d in root.body.steps if ins.op in ("Conv", "fused_conv")}
    assert paths <= {"cudnn-nhwc", "cudnn"} and paths
    reference = compiler.parse_onnx(build(name)).compile("ref")
    tol = 3e-2 if fp16 else 2e-3
    for seed in (1, 2, 3):      # eager, recorded, replayed
        feeds = feeds_for(reference, seed)
        for g, r in zip(program.run(feeds), reference.run(feeds)):
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol)
    assert root.graph_error is None and root.host_fallbacks == []
