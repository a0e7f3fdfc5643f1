"""3-D convolutions (video models) take cuDNN's channels-last graphs like 2-D ones: the layout
helper checked without a GPU, and on a GPU the path they take and their results."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu import conv_split
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.kernels import conv as convk
from compiler.targets.gpu.kernels.channels_last import memory_axes
from compiler.targets.gpu.ops_nn import fp32_paths, to_nhwc
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.targets.gpu.cases import build, feeds_for


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 4, 5, 6)])
def test_to_nhwc_stores_any_rank_channels_last_and_keeps_the_values(shape):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    y = to_nhwc(np, x)
    assert y.shape == x.shape and y.transpose(memory_axes(x.ndim)).flags.c_contiguous
    np.testing.assert_array_equal(y, x)
    assert to_nhwc(np, y) is y          # already channels-last: no copy


def _spec(x_shape, w_shape, dtype="float32", group=1):
    nsp = len(x_shape) - 2
    return convk.ConvSpec(x_shape, w_shape, (0,) * nsp, (0,) * nsp, (1,) * nsp, (1,) * nsp, group, dtype,
                          nhwc=True)


def test_fp32_paths_give_three_d_convolutions_split_bf16_and_exact_cudnn_only(monkeypatch):
    """The split and exact GEMMs gather 2-D windows; cuDNN's graphs, split or exact, take 3-D ones."""
    monkeypatch.setattr(conv_split, "available", lambda: True)
    planar, video = _spec((2, 8, 9, 9), (16, 8, 3, 3)), _spec((2, 8, 5, 9, 9), (16, 8, 3, 3, 3))
    assert fp32_paths(planar, on_gpu=True) == ["split-cudnn", "split-gemm", "gemm", "cudnn"]
    assert fp32_paths(video, on_gpu=True) == ["split-cudnn", "cudnn"]
    assert fp32_paths(planar, on_gpu=False) == ["gemm"]          # the emulated and host paths
    assert fp32_paths(video, on_gpu=False) == []                 # im2col
    assert fp32_paths(_spec((2, 8, 5, 9, 9), (16, 8, 3, 3, 3), "float16"), on_gpu=True) == []
    # grouped: split-bf16 through cuDNN over each group's parts, or exact cuDNN
    assert fp32_paths(_spec((2, 8, 5, 9, 9), (16, 4, 3, 3, 3), group=2), on_gpu=True) == ["split-cudnn", "cudnn"]


def _conv_paths(program) -> set:
    root = program.compiled.context.roots["main"]
    return {getattr(fn, "path", "") for ins, fn, _i, _d in root.body.steps if ins.op in ("Conv", "fused_conv")}


def _check_against_reference(name, program, tol):
    reference = compiler.parse_onnx(build(name)).compile("ref")
    for seed in (1, 2, 3):      # eager, recorded, replayed
        feeds = feeds_for(reference, seed)
        for g, r in zip(program.run(feeds), reference.run(feeds)):
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol)
    root = program.compiled.context.roots["main"]
    assert root.graph_error is None and root.host_fallbacks == []


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("fp16", [False, True])
@pytest.mark.parametrize("name", ["conv3d", "conv3d_stem"])
def test_three_d_convolutions_run_as_cudnn_graphs(name, fp16):
    program = compiler.parse_onnx(build(name)).compile("gpu", fp16=fp16)
    paths = _conv_paths(program)
    # fp32 ones choose between split-bf16 and exact cuDNN graphs (whichever ran faster)
    assert paths and paths <= ({"cudnn-nhwc", "cudnn"} if fp16 else {"split-cudnn", "cudnn-nhwc", "cudnn"})
    _check_against_reference(name, program, 3e-2 if fp16 else 1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("name", ["conv3d", "conv3d_stem"])
def test_three_d_fp32_convolutions_on_split_bf16_keep_fp32_accuracy(name):
    """Split-bf16 operands give fp32 accuracy (TF32 would be ~1e-3 apart) on tensor cores."""
    options = GpuOptions(fp32_conv="split-cudnn")
    program = compiler.parse_onnx(build(name)).compile("gpu", gpu_options=options)
    assert _conv_paths(program) == {"split-cudnn"}
    _check_against_reference(name, program, 1e-4)
