"""Convolutional building blocks that track (channels, height, width) as they go.

Weight scales keep activations O(1) through any depth: convolutions use He scaling
(variance 2/fan_in, so a conv after a ReLU preserves the second moment), and BatchNormalization's
running variance is set to the variance its input is expected to have (``var``), so inference-mode
normalization really normalizes. Builders whose trunks accumulate (pre-activation residuals, DPN)
pass their own running estimate in ``var``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from models.graph import Graph

# BatchNorm shifts (times gamma): slightly positive, as trained networks tend to have, keeps ReLUs
# mostly active and random networks out of the chaotic regime (see models/calibrate.py).
BN_BETA = (0.2, 0.6)


@dataclass(frozen=True)
class T:
    """A feature map in NCHW (batch left symbolic)."""
    name: str
    c: int
    h: int
    w: int


def tf_same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    """TensorFlow 'SAME' padding: the extra pixel goes after, as tf2onnx writes it out."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def _pads(x: T, k: tuple[int, int], s: int, pad) -> list[int]:
    if pad == "same":
        (t, b), (l, r) = tf_same_pads(x.h, k[0], s), tf_same_pads(x.w, k[1], s)
        return [t, l, b, r]
    if pad is None:
        return [k[0] // 2, k[1] // 2, k[0] // 2, k[1] // 2]
    if isinstance(pad, int):
        return [pad, pad, pad, pad]
    if len(pad) == 2:
        return [pad[0], pad[1], pad[0], pad[1]]
    return list(pad)


def _out(size: int, k: int, s: int, p0: int, p1: int) -> int:
    return (size + p0 + p1 - k) // s + 1


def _out_hw(x: T, k: tuple[int, int], s: int, pads: list[int]) -> tuple[int, int]:
    """Output height and width of a window op over ``x``; ``pads`` is (top, left, bottom, right)."""
    return _out(x.h, k[0], s, pads[0], pads[2]), _out(x.w, k[1], s, pads[1], pads[3])


def conv(g: Graph, x: T, cout: int, k=1, stride: int = 1, pad=None, groups: int = 1,
         bias: bool = False, gain: float = 2.0, name: str = "conv") -> T:
    """Conv with He-scaled weights; ``pad`` None = k//2, "same" = TF SAME, int/tuple explicit."""
    kh, kw = (k, k) if isinstance(k, int) else k
    pads = _pads(x, (kh, kw), stride, pad)
    fan_in = x.c // groups * kh * kw
    w = g.param(f"{name}.weight", (cout, x.c // groups, kh, kw), "normal", math.sqrt(gain / fan_in))
    ins = [x.name, w]
    if bias:
        ins.append(g.param(f"{name}.bias", (cout,), "uniform", -0.05, 0.05))
    out = g.op("Conv", ins, name=name, kernel_shape=[kh, kw], strides=[stride, stride], pads=pads,
               group=groups, dilations=[1, 1])
    return T(out, cout, *_out_hw(x, (kh, kw), stride, pads))


def bn(g: Graph, x: T, eps: float = 1e-5, gamma: float = 1.0, var=1.0, scale: bool = True,
       name: str = "bn") -> T:
    """Inference BatchNormalization whose running variance matches the expected input variance.

    ``scale=False`` mirrors TF-slim layers without a learned gamma: the scale is still an ONNX
    input, so it is stored as a fixed Constant (not a parameter).
    """
    c = x.c
    if scale:
        s = g.param(f"{name}.weight", (c,), "uniform", 0.8 * gamma, 1.2 * gamma)
    else:
        s = g.const(np.full(c, gamma, np.float32), name=f"{name}.scale")
    b = g.param(f"{name}.bias", (c,), "uniform", BN_BETA[0] * gamma, BN_BETA[1] * gamma)
    v = float(np.mean(var))
    m = g.param(f"{name}.running_mean", (c,), "uniform", -0.05 * math.sqrt(v), 0.05 * math.sqrt(v))
    rv = g.param(f"{name}.running_var", (c,), "uniform", 0.9 * v, 1.1 * v)
    out = g.op("BatchNormalization", [x.name, s, b, m, rv], name=name, epsilon=eps)
    return T(out, c, x.h, x.w)


def relu(g: Graph, x: T) -> T:
    return T(g.op("Relu", [x.name]), x.c, x.h, x.w)


def relu6(g: Graph, x: T) -> T:
    lo, hi = g.const(np.float32(0), name="zero"), g.const(np.float32(6), name="six")
    return T(g.op("Clip", [x.name, lo, hi]), x.c, x.h, x.w)


def conv_bn_relu(g: Graph, x: T, cout: int, k=1, stride: int = 1, pad=None, eps: float = 1e-5,
                 groups: int = 1, name: str = "conv") -> T:
    y = conv(g, x, cout, k, stride, pad, groups=groups, name=name)
    return relu(g, bn(g, y, eps=eps, name=f"{name}.bn"))


def maxpool(g: Graph, x: T, k: int, stride: int, pad=0) -> T:
    pads = _pads(x, (k, k), stride, pad)
    out = g.op("MaxPool", [x.name], kernel_shape=[k, k], strides=[stride, stride], pads=pads)
    return T(out, x.c, *_out_hw(x, (k, k), stride, pads))


def avgpool(g: Graph, x: T, k: int, stride: int, pad=0, count_include_pad: bool = False) -> T:
    pads = _pads(x, (k, k), stride, pad)
    out = g.op("AveragePool", [x.name], kernel_shape=[k, k], strides=[stride, stride], pads=pads,
               count_include_pad=int(count_include_pad))
    return T(out, x.c, *_out_hw(x, (k, k), stride, pads))


def concat(g: Graph, xs: list[T]) -> T:
    assert len({(t.h, t.w) for t in xs}) == 1, [(t.h, t.w) for t in xs]
    return T(g.op("Concat", [t.name for t in xs], axis=1), sum(t.c for t in xs), xs[0].h, xs[0].w)


def add(g: Graph, a: T, b: T) -> T:
    assert (a.c, a.h, a.w) == (b.c, b.h, b.w), (a, b)
    return T(g.op("Add", [a.name, b.name]), a.c, a.h, a.w)


def global_pool_flat(g: Graph, x: T) -> str:
    """GlobalAveragePool + Flatten → [batch, C] as torchvision exports its heads."""
    return g.op("Flatten", [g.op("GlobalAveragePool", [x.name])], axis=1)


def linear(g: Graph, x: str, cin: int, cout: int, gain: float = 1.0, name: str = "fc") -> str:
    """Gemm with weight [cout, cin] (transB=1), the PyTorch Linear export."""
    w = g.param(f"{name}.weight", (cout, cin), "normal", math.sqrt(gain / cin))
    b = g.param(f"{name}.bias", (cout,), "uniform", -0.05, 0.05)
    return g.op("Gemm", [x, w, b], name=name, alpha=1.0, beta=1.0, transB=1)


def nhwc_input(g: Graph, size: int, channels: int = 3, name: str = "input") -> T:
    """TF-slim style image input: NHWC, transposed to NCHW as tf2onnx does."""
    g.input(name, TensorProto.FLOAT, ["batch", size, size, channels])
    return T(g.op("Transpose", [name], perm=[0, 3, 1, 2]), channels, size, size)


def nchw_input(g: Graph, size: int, channels: int = 3, name: str = "input") -> T:
    g.input(name, TensorProto.FLOAT, ["batch", channels, size, size])
    return T(name, channels, size, size)
