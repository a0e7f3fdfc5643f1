"""The depthwise convolution kernel against the reference on fresh random inputs (needs a CUDA GPU):
the kernel alone over window sizes, strides, paddings, types, odd channel counts and sizes, each
fused activation; and a small depthwise-separable network compiled whole."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.ops.registry import get_op
from compiler.passes.fuse_conv_epilogue import FUSED_CONV
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.cases import init, model, vi

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]

TOL = {"float32": 1e-5, "float16": 1e-2}

# (dtype, N, C, H, W, kernel, stride, pads (top, left, bottom, right), epilogue attributes)
KERNEL_CASES = [
    ("float32", 2, 32, 14, 14, 3, 1, (1, 1, 1, 1), {"relu": True}),
    ("float32", 2, 13, 15, 11, 3, 2, (1, 1, 1, 1), {"clip": [0.0, 6.0]}),
    ("float32", 1, 24, 9, 17, 5, 1, (2, 2, 2, 2), {"swish": True}),
    ("float32", 3, 40, 13, 13, 5, 2, (2, 1, 1, 2), {"hardswish": True, "residual": True}),
    ("float32", 2, 7, 12, 10, 7, 1, (3, 3, 3, 3), {"bias": False}),
    ("float32", 1, 6, 11, 11, 3, 1, (0, 0, 0, 0), {"relu": True, "residual": True}),
    ("float16", 2, 48, 14, 14, 3, 1, (1, 1, 1, 1), {"relu": True}),
    ("float16", 2, 21, 15, 13, 3, 2, (1, 1, 1, 1), {"clip": [0.0, 6.0]}),
    ("float16", 2, 34, 9, 9, 5, 2, (2, 2, 2, 2), {"swish": True}),
    ("float16", 1, 96, 7, 7, 7, 1, (3, 3, 3, 3), {"hardswish": True}),
    ("float16", 2, 5, 10, 12, 7, 2, (3, 2, 3, 2), {"residual": True}),
    # the activation of the input (prologue); a lower clip above zero shows padding stays zero
    ("float32", 2, 13, 15, 11, 3, 2, (1, 1, 1, 1), {"prologue": {"clip": [0.5, 6.0]}, "relu": True}),
    ("float32", 1, 24, 9, 17, 3, 1, (1, 1, 1, 1), {"prologue": {"hardswish": True}, "clip": [0.0, 6.0]}),
    ("float16", 2, 34, 9, 9, 5, 1, (2, 2, 2, 2), {"prologue": {"swish": True}, "swish": True}),
    ("float16", 2, 48, 14, 14, 3, 2, (1, 1, 1, 1), {"prologue": {"relu": True}, "residual": True}),
]


def _fused_attrs(c, k, stride, pads, extra):
    attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "pads": list(pads), "dilations": [1, 1], "group": c,
             "bias": True, "residual": False, "relu": False}
    attrs.update(extra)
    return attrs


@pytest.mark.parametrize("min_threads", [0, None], ids=["widest", "split-for-threads"])
@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: f"{c[0]}-c{c[2]}-{c[3]}x{c[4]}-k{c[5]}s{c[6]}-"
                         + "-".join(sorted(c[8])))
def test_depthwise_kernel_matches_reference(case, min_threads, monkeypatch):
    import cupy

    from compiler.targets.gpu.kernels import depthwise
    if min_threads is not None:      # every launch at its widest vector and row tile
        monkeypatch.setattr(depthwise, "MIN_THREADS", min_threads)

    from compiler.targets.gpu import depthwise_conv
    from compiler.targets.gpu.kernels.conv import ConvSpec
    from compiler.targets.gpu.ops_nn import to_nhwc
    dtype, n, c, h, wd, k, stride, pads, extra = case
    attrs = _fused_attrs(c, k, stride, pads, extra)
    spec = ConvSpec((n, c, h, wd), (c, 1, k, k), pads[:2], pads[2:], (stride, stride), (1, 1), c, dtype,
                    bias=attrs["bias"], residual=attrs["residual"], relu=attrs["relu"], nhwc=True)
    assert depthwise_conv.applies(spec)
    run = depthwise_conv.depthwise_runner(cupy, spec, attrs, to_nhwc)
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((n, c, h, wd), (c, 1, k, k), (c,)))
    r = rng.standard_normal(spec.out_shape).astype(dtype)
    host = [x, w] + ([b] if attrs["bias"] else []) + ([r] if attrs["residual"] else [])
    want = get_op(FUSED_CONV).compute(attrs, *[a.astype(np.float32) for a in host])
    for seed in (1, 2):     # fresh inputs and a second run through the cached weights
        got = cupy.asnumpy(run(*[cupy.asarray(a) for a in host]))
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=TOL[dtype], atol=TOL[dtype])
        x = rng.standard_normal(x.shape).astype(dtype)
        host[0] = x
        want = get_op(FUSED_CONV).compute(attrs, *[a.astype(np.float32) for a in host])


def _separable(dtype):
    """expand 1x1 + HardSwish -> depthwise 3x3 + ReLU6 -> depthwise 5x5 stride 2 + SiLU -> project
    1x1 -> depthwise 7x7 + ReLU, with a residual add, on odd sizes; and its global average. The
    HardSwish goes into the first depthwise kernel as its prologue."""
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rng = np.random.default_rng(3)

    def weight(name, *shape):
        return init(name, (rng.standard_normal(shape) * 0.3).astype(dtype))
    node = helper.make_node
    nodes = [node("Conv", ["x", "w0", "b0"], ["e"]), node("HardSwish", ["e"], ["e1"]),
             node("Conv", ["e1", "w1", "b1"], ["d"], group=21, pads=[1, 1, 1, 1]),
             node("Clip", ["d", "lo", "hi"], ["d1"]),
             node("Conv", ["d1", "w2"], ["s"], group=21, pads=[2, 2, 2, 2], strides=[2, 2]),
             node("Sigmoid", ["s"], ["sg"]), node("Mul", ["s", "sg"], ["s1"]),
             node("Conv", ["s1", "w3", "b3"], ["p"]),
             node("Conv", ["p", "w4", "b4"], ["q"], group=12, pads=[3, 3, 3, 3]),
             node("Add", ["q", "p"], ["q1"]), node("Relu", ["q1"], ["y"]),
             node("GlobalAveragePool", ["y"], ["g"])]
    inits = [weight("w0", 21, 5, 1, 1), weight("b0", 21), weight("w1", 21, 1, 3, 3), weight("b1", 21),
             weight("w2", 21, 1, 5, 5), weight("w3", 12, 21, 1, 1), weight("b3", 12),
             weight("w4", 12, 1, 7, 7), weight("b4", 12),
             init("lo", np.array(0, dtype)), init("hi", np.array(6, dtype))]
    return model(nodes, [vi("x", (2, 5, 17, 15), t)], [vi("y", None, t), vi("g", None, t)], inits)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_separable_network_matches_reference(dtype):
    onnx_model = _separable(dtype)
    program = compiler.parse_onnx(onnx_model).compile("gpu")
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    steps = program.compiled.context.roots["main"].body.steps
    paths = [getattr(fn, "path", "") for _i, fn, _a, _d in steps]
    assert paths.count("depthwise-nhwc") == 3 and paths.count("global-average") == 1
    assert not any(i.op == "fused_pointwise" for i, *_ in steps if hasattr(i, "op"))
    rng = np.random.default_rng(11)
    for _ in range(3):      # eager, recorded into CUDA graphs, replayed
        feeds = {"x": rng.standard_normal((2, 5, 17, 15)).astype(dtype)}
        for got, want in zip(program.run(feeds), reference.run(feeds), strict=True):
            np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                       rtol=TOL[dtype] * 2, atol=TOL[dtype] * 2)
    root = program.compiled.context.roots["main"]
    assert root.host_fallbacks == [] and root.graph_error is None and root.graphs is not None
