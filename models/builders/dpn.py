"""Dual Path Networks (Cadene's ``pretrainedmodels`` layout), DPN-92 by default.

Each block is pre-activation (BN-ReLU-Conv, BN eps 1e-3): a 1x1, a grouped 3x3 and a 1x1 conv
whose output splits into a residual part (added to the trunk) and a dense part (concatenated).
The first block of a stage projects the input (stride 2 from stage 3 on). The head is a
concat-BN-ReLU, global average pool and a 1x1 conv classifier.
"""
from __future__ import annotations

import numpy as np

from models.graph import Graph
from models.layers import T, bn, concat, conv, conv_bn_relu, maxpool, nchw_input, relu

VERSION = 1
EPS = 1e-3


def _bn_act_conv(g: Graph, x: T, cout: int, k: int, stride: int, var: float, name: str,
                 groups: int = 1, gain: float = 2.0) -> T:
    y = relu(g, bn(g, x, eps=EPS, var=var, name=f"{name}.bn"))
    return conv(g, y, cout, k, stride, groups=groups, gain=gain, name=f"{name}.conv")


def _split(g: Graph, x: T, first: int) -> tuple[T, T]:
    a, b = g.op("Split", [x.name, g.const(np.array([first, x.c - first], np.int64), name="split")],
                n_out=2, axis=1)
    return T(a, first, x.h, x.w), T(b, x.c - first, x.h, x.w)


def _block(g: Graph, resid: T, dense: T | None, r: int, bw: int, inc: int, groups: int,
           kind: str, var: float, name: str) -> tuple[T, T, float]:
    x_in = resid if dense is None else concat(g, [resid, dense])
    # Channel-weighted mean of the trunk (variance ``var``) and dense features (about 1).
    in_var = (resid.c * var + (x_in.c - resid.c)) / x_in.c
    stride = 2 if kind == "down" else 1
    if kind in ("proj", "down"):
        x_s = _bn_act_conv(g, x_in, bw + 2 * inc, 1, stride, in_var, f"{name}.c1x1_w_s{stride}")
        x_s1, x_s2 = _split(g, x_s, bw)
        var = 1.0
    else:
        x_s1, x_s2 = resid, dense
    y = _bn_act_conv(g, x_in, r, 1, 1, in_var, f"{name}.c1x1_a")
    y = _bn_act_conv(g, y, r, 3, stride, 1.0, f"{name}.c3x3_b", groups=groups)
    # The residual part is added to an un-normalized trunk: keep it small (gain 0.5 → var ~0.25)
    # and carry the trunk's variance forward for the next block's BatchNorm.
    y = _bn_act_conv(g, y, bw + inc, 1, 1, 1.0, f"{name}.c1x1_c", gain=0.5)
    out1, out2 = _split(g, y, bw)
    resid = T(g.op("Add", [x_s1.name, out1.name]), bw, out1.h, out1.w)
    return resid, concat(g, [x_s2, out2]), var + 0.25


def build(num_init_features: int = 64, k_r: int = 96, groups: int = 32, k_sec=(3, 4, 20, 3),
          inc_sec=(16, 32, 24, 128), num_classes: int = 1000, image_size: int = 224) -> Graph:
    g = Graph("dpn92", "DPN, Cadene layout")
    x = nchw_input(g, image_size)
    x = conv_bn_relu(g, x, num_init_features, 7, 2, pad=3, eps=EPS, name="conv1_1")
    x = maxpool(g, x, 3, 2, pad=1)
    resid, dense, var = x, None, 1.0
    for stage, (n_blocks, inc) in enumerate(zip(k_sec, inc_sec)):
        bw = 64 * 2 ** stage * 4
        r = k_r * bw // 256
        for i in range(n_blocks):
            kind = "normal" if i else ("proj" if stage == 0 else "down")
            resid, dense, var = _block(g, resid, dense, r, bw, inc, groups, kind, var,
                                       f"conv{stage + 2}_{i + 1}")
    x = concat(g, [resid, dense])
    x = relu(g, bn(g, x, eps=EPS, var=(resid.c * var + dense.c) / x.c, name="conv5_bn_ac"))
    pooled = T(g.op("GlobalAveragePool", [x.name]), x.c, 1, 1)
    logits = conv(g, pooled, num_classes, 1, pad=0, bias=True, gain=1.0, name="classifier")
    flat = g.op("Flatten", [logits.name], axis=1)
    g.output(flat, "output", shape=["batch", num_classes])
    return g
