"""MobileNet v1 in TF-slim layout: NHWC input, TF 'SAME' pads (asymmetric at stride 2), ReLU6 as
Clip, depthwise-separable blocks, a 1x1 logits conv with 1001 classes, Squeeze and Softmax."""
from __future__ import annotations

import numpy as np

from models.graph import Graph
from models.layers import T, bn, conv, nhwc_input, relu6

VERSION = 1
# (stride, output depth) of the 13 separable layers
LAYERS = [(1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512)] + [(1, 512)] * 5 + [(2, 1024), (1, 1024)]


def build(depth_multiplier: float = 1.0, num_classes: int = 1001, image_size: int = 224) -> Graph:
    g = Graph("mobilenet_v1", "MobileNet v1, TF-slim layout")
    d = lambda c: max(int(c * depth_multiplier), 8)  # noqa: E731 - slim's min_depth=8
    x = nhwc_input(g, image_size)
    x = relu6(g, bn(g, conv(g, x, d(32), 3, 2, pad="same", gain=1.0, name="Conv2d_0"), eps=1e-3, name="Conv2d_0.bn"))
    for i, (stride, depth) in enumerate(LAYERS):
        n = f"Conv2d_{i + 1}"
        x = conv(g, x, x.c, 3, stride, pad="same", groups=x.c, name=f"{n}_depthwise")
        x = relu6(g, bn(g, x, eps=1e-3, name=f"{n}_depthwise.bn"))
        x = relu6(g, bn(g, conv(g, x, d(depth), 1, pad=0, name=f"{n}_pointwise"), eps=1e-3, name=f"{n}_pointwise.bn"))
    x = T(g.op("AveragePool", [x.name], kernel_shape=[x.h, x.w], strides=[2, 2], pads=[0, 0, 0, 0]), x.c, 1, 1)
    logits = conv(g, x, num_classes, 1, pad=0, bias=True, gain=1.0, name="Conv2d_1c_1x1")
    flat = g.op("Squeeze", [logits.name, g.const(np.array([2, 3], np.int64), name="axes")], name="SpatialSqueeze")
    # Both heads, as the slim graph has them: probabilities over 1001 classes are all ~1e-3, so
    # accuracy checks need the logits too.
    g.output(flat, "logits", shape=["batch", num_classes])
    g.output(g.op("Softmax", [flat], axis=-1), "predictions", shape=["batch", num_classes])
    return g
