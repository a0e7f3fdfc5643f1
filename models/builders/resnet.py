"""ResNet v1.5 / ResNeXt (torchvision layout) and ResNet v2 (TF-slim, pre-activation).

v1: stem conv7x7/2-BN-ReLU-maxpool, bottlenecks with the stride on the 3x3 conv (torchvision),
projection shortcut conv1x1+BN. ResNeXt only changes the 3x3 into a grouped conv of width
``groups * width_per_group * planes/64``. v2 follows slim's ``resnet_v2``: a biased root conv,
pre-activation units whose stride sits in the last unit of a block, a subsampling MaxPool 1x1
shortcut when depths match, a post-norm and a 1x1 logits conv with 1001 classes on NHWC input.
"""
from __future__ import annotations

import numpy as np

from models.graph import Graph
from models.layers import (T, add, bn, conv, conv_bn_relu, global_pool_flat, linear, maxpool,
                           nchw_input, nhwc_input, relu)

VERSION = 1
DEPTHS = {18: [2, 2, 2, 2], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


def _bottleneck_v1(g: Graph, x: T, planes: int, stride: int, groups: int, width_per_group: int,
                   name: str) -> T:
    width = int(planes * (width_per_group / 64.0)) * groups
    out = conv_bn_relu(g, x, width, 1, name=f"{name}.conv1")
    out = conv_bn_relu(g, out, width, 3, stride, groups=groups, name=f"{name}.conv2")
    # Residual branch ends with a small gamma: the ReLU after the sum then has a fixed point
    # at O(1) instead of doubling the variance every block.
    out = bn(g, conv(g, out, planes * 4, 1, name=f"{name}.conv3"), gamma=0.5, name=f"{name}.bn3")
    if stride != 1 or x.c != planes * 4:
        x = bn(g, conv(g, x, planes * 4, 1, stride, pad=0, name=f"{name}.downsample.0"),
               name=f"{name}.downsample.1")
    return relu(g, add(g, out, x))


def build_v1(depth: int = 50, groups: int = 1, width_per_group: int = 64, num_classes: int = 1000,
             image_size: int = 224, base_width: int = 64, layers: list | None = None) -> Graph:
    g = Graph(f"resnet{depth}", "ResNet v1.5 / ResNeXt, torchvision layout")
    x = nchw_input(g, image_size)
    x = conv_bn_relu(g, x, base_width, 7, 2, pad=3, name="conv1")
    x = maxpool(g, x, 3, 2, pad=1)
    for i, blocks in enumerate(layers or DEPTHS[depth]):
        planes = base_width * 2 ** i
        for j in range(blocks):
            stride = 2 if (i > 0 and j == 0) else 1
            x = _bottleneck_v1(g, x, planes, stride, groups, width_per_group, f"layer{i + 1}.{j}")
    logits = linear(g, global_pool_flat(g, x), x.c, num_classes)
    g.output(logits, "output", shape=["batch", num_classes])
    return g


def _unit_v2(g: Graph, x: T, depth: int, base: int, stride: int, var: float, name: str) -> tuple[T, float]:
    preact = relu(g, bn(g, x, eps=1.001e-5, var=var, name=f"{name}.preact"))
    if x.c == depth:
        shortcut = x if stride == 1 else T(g.op("MaxPool", [x.name], kernel_shape=[1, 1],
                                                strides=[stride, stride]),
                                           x.c, -(-x.h // stride), -(-x.w // stride))
        short_var = var
    else:
        shortcut = conv(g, preact, depth, 1, stride, pad=0, bias=True, name=f"{name}.shortcut")
        short_var = 1.0
    r = conv_bn_relu(g, preact, base, 1, eps=1.001e-5, name=f"{name}.conv1")
    r = conv_bn_relu(g, r, base, 3, stride, eps=1.001e-5, name=f"{name}.conv2")
    # The trunk is a plain sum (no normalization): keep each added branch small and track the
    # trunk variance so the next pre-activation BN normalizes for real.
    r = conv(g, r, depth, 1, bias=True, gain=0.5, name=f"{name}.conv3")
    return add(g, shortcut, r), short_var + 0.25


def build_v2(depth: int = 50, num_classes: int = 1001, image_size: int = 224) -> Graph:
    g = Graph(f"resnet_v2_{depth}", "ResNet v2 (pre-activation), TF-slim layout")
    x = nhwc_input(g, image_size)
    x = conv(g, x, 64, 7, 2, bias=True, gain=1.0, name="conv1")
    x = maxpool(g, x, 3, 2, pad="same")
    var = 1.0
    for i, units in enumerate(DEPTHS[depth]):
        base = 64 * 2 ** i
        for j in range(units):
            stride = 2 if (j == units - 1 and i < 3) else 1
            x, var = _unit_v2(g, x, base * 4, base, stride, var, f"block{i + 1}.unit_{j + 1}")
    x = relu(g, bn(g, x, eps=1.001e-5, var=var, name="postnorm"))
    pooled = g.op("ReduceMean", [x.name], axes=[2, 3], keepdims=1)
    logits = conv(g, T(pooled, x.c, 1, 1), num_classes, 1, bias=True, gain=1.0, name="logits")
    flat = g.op("Squeeze", [logits.name, g.const(np.array([2, 3], np.int64), name="axes")])
    g.output(flat, "logits", shape=["batch", num_classes])
    return g
