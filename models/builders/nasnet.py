"""NASNet-A (TF-slim ``nasnet.py`` layout), Large by default: 331x331 NHWC input, 18 normal cells
in three stacks with two reduction cells between them, an ImageNet stem of a 3x3 conv and two
reduction "stem" cells, penultimate filters 4032, and a 1001-class head (the auxiliary head,
used only in training, is left out).

Cell wiring (operations, hidden-state indices, used states) is NASNet-A's as published; convs
carry no bias (BatchNorm follows), separable convs are a depthwise and a pointwise conv, pools
and convs use TF 'SAME' padding, and mismatched previous layers pass through slim's
``factorized_reduction`` (two shifted 1x1 paths) or a 1x1 conv.
"""
from __future__ import annotations

import math

import numpy as np

from models.graph import Graph
from models.layers import T, avgpool, bn, concat, conv, maxpool, nhwc_input, relu

VERSION = 1

NORMAL = (["separable_5x5_2", "separable_3x3_2", "separable_5x5_2", "separable_3x3_2", "avg_pool_3x3",
           "none", "avg_pool_3x3", "avg_pool_3x3", "separable_3x3_2", "none"],
          [0, 1, 1, 1, 0, 1, 1, 1, 0, 0], [1, 0, 0, 0, 0, 0, 0])
REDUCTION = (["separable_5x5_2", "separable_7x7_2", "max_pool_3x3", "separable_7x7_2", "avg_pool_3x3",
              "separable_5x5_2", "none", "avg_pool_3x3", "separable_3x3_2", "max_pool_3x3"],
             [0, 1, 0, 1, 0, 1, 3, 2, 2, 0], [1, 1, 1, 0, 0, 0, 0])

EPS = 1e-3


def _bn(g: Graph, x: T, name: str, gamma: float = 1.0) -> T:
    return bn(g, x, eps=EPS, gamma=gamma, name=name)


def _factorized_reduction(g: Graph, x: T, filters: int, stride: int, name: str) -> T:
    if stride == 1:
        return _bn(g, conv(g, x, filters, 1, pad=0, name=f"{name}.path_conv"), f"{name}.path_bn")
    p1 = T(g.op("AveragePool", [x.name], kernel_shape=[1, 1], strides=[2, 2]), x.c, -(-x.h // 2), -(-x.w // 2))
    p1 = conv(g, p1, filters // 2, 1, pad=0, name=f"{name}.path1_conv")
    # Path 2 shifts by one pixel: pad bottom/right, drop the first row/column.
    padded = g.op("Pad", [x.name, g.const(np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64), name="pads")])
    shifted = g.op("Slice", [padded, g.const(np.array([1, 1], np.int64), name="starts"),
                             g.const(np.array([x.h + 1, x.w + 1], np.int64), name="ends"),
                             g.const(np.array([2, 3], np.int64), name="axes")])
    p2 = T(g.op("AveragePool", [shifted], kernel_shape=[1, 1], strides=[2, 2]), x.c, p1.h, p1.w)
    p2 = conv(g, p2, filters - filters // 2, 1, pad=0, name=f"{name}.path2_conv")
    return _bn(g, concat(g, [p1, p2]), f"{name}.final_path_bn")


def _separable(g: Graph, x: T, filters: int, k: int, stride: int, name: str, gamma: float) -> T:
    for layer in (1, 2):
        x = relu(g, x)
        x = conv(g, x, x.c, k, stride, pad="same", groups=x.c, name=f"{name}.separable_{k}x{k}_{layer}.depthwise")
        x = conv(g, x, filters, 1, pad=0, name=f"{name}.separable_{k}x{k}_{layer}.pointwise")
        x = _bn(g, x, f"{name}.bn_sep_{k}x{k}_{layer}", gamma=gamma if layer == 2 else 1.0)
        stride = 1
    return x


def _operation(g: Graph, x: T, op: str, stride: int, original: bool, filters: int, name: str) -> T:
    # Branches are summed in pairs: each ends at gamma 1/sqrt(2) so the sum stays at unit variance.
    gamma = 1 / math.sqrt(2)
    if stride > 1 and not original:
        stride = 1
    if op.startswith("separable"):
        k = int(op.split("_")[1][0])
        return _separable(g, x, filters, k, stride, name, gamma)
    if op == "none":
        if stride > 1 or x.c != filters:
            x = relu(g, x)
            return _bn(g, conv(g, x, filters, 1, stride, pad=0, name=f"{name}.1x1"), f"{name}.bn_1", gamma)
        return x
    pool = avgpool if op.startswith("avg") else maxpool
    x = pool(g, x, 3, stride, pad="same")
    if x.c != filters:
        x = _bn(g, conv(g, x, filters, 1, pad=0, name=f"{name}.1x1"), f"{name}.bn_1", gamma)
    return x


def _cell(g: Graph, net: T, prev: T | None, filters: int, stride: int, kind, name: str) -> T:
    ops, indices, used = kind
    # _reduce_prev_layer
    if prev is None:
        prev = net
    elif prev.h != net.h:
        prev = _factorized_reduction(g, relu(g, prev), filters, 2, f"{name}.reduction_prev")
    elif prev.c != filters:
        prev = _bn(g, conv(g, relu(g, prev), filters, 1, pad=0, name=f"{name}.prev_1x1"), f"{name}.prev_bn")
    cur = _bn(g, conv(g, relu(g, net), filters, 1, pad=0, name=f"{name}.1x1"), f"{name}.beginning_bn")
    states = [cur, prev]
    for it in range(5):
        li, ri = indices[2 * it], indices[2 * it + 1]
        left = _operation(g, states[li], ops[2 * it], stride, li < 2, filters, f"{name}.comb_iter_{it}.left")
        right = _operation(g, states[ri], ops[2 * it + 1], stride, ri < 2, filters, f"{name}.comb_iter_{it}.right")
        states.append(T(g.op("Add", [left.name, right.name]), filters, left.h, left.w))
    final = states[-1]
    out = []
    for idx, (h, is_used) in enumerate(zip(states, used)):
        if is_used:
            continue
        if h.c != final.c or h.h != final.h:
            h = _factorized_reduction(g, h, final.c, 2 if h.h != final.h else 1, f"{name}.reduction_{idx}")
        out.append(h)
    return concat(g, out)


def build(num_cells: int = 18, penultimate_filters: int = 4032, stem_multiplier: float = 3.0,
          num_classes: int = 1001, image_size: int = 331) -> Graph:
    g = Graph("nasnet_large", "NASNet-A, TF-slim layout")
    filters = penultimate_filters // 24  # / (filter_scaling_rate ** num_reduction_layers * 6)
    x = nhwc_input(g, image_size)
    net = _bn(g, conv(g, x, int(32 * stem_multiplier), 3, 2, pad=0, gain=1.0, name="conv0"), "conv0_bn")
    outputs = [None, net]
    scaling = 0.25
    for i in range(2):
        net = _cell(g, net, outputs[-2], int(filters * scaling), 2, REDUCTION, f"cell_stem_{i}")
        outputs.append(net)
        scaling *= 2
    reductions = [int(num_cells * p / 3) for p in (1, 2)]
    scaling = 1.0
    for cell in range(num_cells):
        prev = outputs[-2]
        if cell in reductions:
            scaling *= 2
            net = _cell(g, net, outputs[-2], int(filters * scaling), 2, REDUCTION,
                        f"reduction_cell_{reductions.index(cell)}")
            outputs.append(net)
        net = _cell(g, net, prev, int(filters * scaling), 1, NORMAL, f"cell_{cell}")
        outputs.append(net)
    net = relu(g, net)
    pooled = g.op("ReduceMean", [net.name], axes=[2, 3], keepdims=0)
    w = g.param("final_layer.FC.weights", (net.c, num_classes), "normal", math.sqrt(1.0 / net.c))
    b = g.param("final_layer.FC.biases", (num_classes,), "uniform", -0.05, 0.05)
    logits = g.op("Add", [g.op("MatMul", [pooled, w]), b])
    g.output(logits, "logits", shape=["batch", num_classes])
    return g
