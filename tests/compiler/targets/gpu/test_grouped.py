"""The grouped convolution kernel against the reference on fresh random inputs (needs a CUDA GPU):
the kernel alone over group widths, windows, strides, paddings and epilogues, at its widest launch
and at the narrower one small launches take; and a RegNet-style block compiled whole. Which
convolutions it takes, and the launch shapes: test_grouped_choice.py."""
import numpy as np
import pytest
from onnx import helper

import compiler
from compiler.ops.registry import get_op
from compiler.passes.fuse_conv_epilogue import FUSED_CONV
from compiler.targets.gpu import grouped_conv
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.kernels.conv import ConvSpec

from tests.compiler.targets.gpu.cases import init, model, vi

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


# (N, C in, K out, groups, H, W, kernel, stride, pads (top, left, bottom, right), epilogue)
KERNEL_CASES = [
    (2, 48, 48, 6, 15, 13, 3, 2, (1, 1, 1, 1), {"relu": True}),            # RegNet: 8 a group
    (1, 64, 64, 16, 9, 11, 3, 1, (1, 1, 1, 1), {"residual": True}),        # ResNeXt: 4 a group
    (2, 24, 36, 3, 8, 8, 5, 1, (2, 2, 2, 2), {"bias": False}),             # more outputs than inputs
    (3, 30, 10, 5, 7, 9, 3, 1, (0, 1, 2, 1), {"relu": True, "residual": True}),   # 6 in, 2 out a group
    (1, 64, 64, 2, 6, 6, 1, 1, (0, 0, 0, 0), {}),                           # 32 a group, 1x1
]


def spec_of(case):
    n, c, k, g, h, w, kk, s, pads, extra = case
    attrs = {"kernel_shape": [kk, kk], "strides": [s, s], "pads": list(pads), "dilations": [1, 1], "group": g,
             "bias": True, "residual": False, "relu": False, **extra}
    spec = ConvSpec((n, c, h, w), (k, c // g, kk, kk), pads[:2], pads[2:], (s, s), (1, 1), g, "float32",
                    bias=attrs["bias"], residual=attrs["residual"], relu=attrs["relu"], nhwc=True)
    return spec, attrs


@pytest.mark.parametrize("min_threads", [0, None], ids=["widest", "split-for-threads"])
@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: f"c{c[1]}k{c[2]}g{c[3]}-k{c[6]}s{c[7]}")
def test_grouped_kernel_matches_reference(case, min_threads, monkeypatch):
    import cupy

    from compiler.targets.gpu.kernels import depthwise
    if min_threads is not None:      # every launch at its widest vector and row tile
        monkeypatch.setattr(depthwise, "MIN_THREADS", min_threads)

    from compiler.targets.gpu.ops_nn import to_nhwc
    spec, attrs = spec_of(case)
    run = grouped_conv.grouped_runner(cupy, spec, attrs, to_nhwc)
    # sums of up to 288 products of unit normals (outputs ~15 in size) round differently in
    # another order by up to ~1e-5
    _check_against_reference(run, spec, attrs, seed=5, rtol=1e-5, atol=lambda want: 5e-5)


def _check_against_reference(run, spec, attrs, seed, rtol, atol):
    """``run`` against the reference's fused convolution twice: on random operands, then on fresh
    activations through the weights it cached. ``atol`` of the expected result."""
    import cupy
    rng = np.random.default_rng(seed)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in (spec.x_shape, spec.w_shape, (spec.w_shape[0],)))
    r = rng.standard_normal(spec.out_shape).astype(np.float32)
    host = [x, w] + ([b] if attrs["bias"] else []) + ([r] if attrs["residual"] else [])
    for _ in range(2):
        want = get_op(FUSED_CONV).compute(attrs, *host)
        got = cupy.asnumpy(run(*[cupy.asarray(a) for a in host]))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol(want))
        host[0] = rng.standard_normal(x.shape).astype(np.float32)


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: f"c{c[1]}k{c[2]}g{c[3]}-k{c[6]}s{c[7]}")
def test_split_cudnn_matches_reference_on_grouped_convolutions(case):
    """The split-bf16 path over each group's three parts (``conv_split``), the other path a
    grouped fp32 convolution is timed on, within the split's accuracy of the reference."""
    import cupy

    from compiler.targets.gpu import conv_split
    from compiler.targets.gpu.ops_nn import to_nhwc
    from compiler.targets.gpu.options import GpuOptions
    spec, attrs = spec_of(case)
    run = conv_split.split_cudnn_conv(cupy, spec, attrs["bias"], attrs["residual"], attrs["relu"], to_nhwc,
                                      GpuOptions())
    assert run is not None, "cuDNN took no bf16 graph of this grouped convolution"
    _check_against_reference(run, spec, attrs, seed=6, rtol=1e-4, atol=lambda want: 1e-4 * np.abs(want).max())


def _regnet_block():
    """1x1 -> BN-folded grouped 3x3 (8 a group, stride 2) + ReLU -> 1x1, odd sizes."""
    rng = np.random.default_rng(4)
    node = helper.make_node
    nodes = [node("Conv", ["x", "wa", "ba"], ["a"]), node("Relu", ["a"], ["a1"]),
             node("Conv", ["a1", "wb", "bb"], ["b"], group=3, pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Relu", ["b"], ["b1"]), node("Conv", ["b1", "wc"], ["y"])]
    inits = [init("wa", rng.standard_normal((24, 5, 1, 1)).astype(np.float32) * 0.3),
             init("ba", rng.standard_normal(24).astype(np.float32)),
             init("wb", rng.standard_normal((24, 8, 3, 3)).astype(np.float32) * 0.3),
             init("bb", rng.standard_normal(24).astype(np.float32)),
             init("wc", rng.standard_normal((16, 24, 1, 1)).astype(np.float32) * 0.3)]
    return model(nodes, [vi("x", (2, 5, 17, 15))], [vi("y", None)], inits)


def test_regnet_block_matches_reference():
    onnx_model = _regnet_block()
    program = compiler.parse_onnx(onnx_model).compile("gpu")
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    steps = program.compiled.context.roots["main"].body.steps
    paths = [getattr(fn, "path", "") for _i, fn, _a, _d in steps]
    # the grouped layer runs on whichever of its two paths was timed faster here
    assert paths.count("grouped-nhwc") + paths.count("split-cudnn") == 1, paths
    rng = np.random.default_rng(9)
    for _ in range(3):      # eager, recorded into CUDA graphs, replayed
        feeds = {"x": rng.standard_normal((2, 5, 17, 15)).astype(np.float32)}
        np.testing.assert_allclose(program.run(feeds)[0], reference.run(feeds)[0], rtol=1e-4, atol=1e-4)

