"""VGG-16/19 in TF-slim layout: NHWC input, 3x3 SAME convs with bias and ReLU, 2x2 max pools, and
the fully connected layers as convolutions (fc6 7x7 VALID, fc7/fc8 1x1), squeezed to logits."""
from __future__ import annotations

import numpy as np

from models.graph import Graph
from models.layers import conv, maxpool, nhwc_input, relu

VERSION = 1
CONFIGS = {16: [2, 2, 3, 3, 3], 19: [2, 2, 4, 4, 4]}


def build(depth: int = 16, num_classes: int = 1000, image_size: int = 224) -> Graph:
    g = Graph(f"vgg_{depth}", "VGG, TF-slim layout")
    x = nhwc_input(g, image_size)
    for i, n in enumerate(CONFIGS[depth]):
        for j in range(n):
            x = relu(g, conv(g, x, min(64 * 2 ** i, 512), 3, pad="same", bias=True,
                             gain=1.0 if (i, j) == (0, 0) else 2.0, name=f"conv{i + 1}.conv{i + 1}_{j + 1}"))
        x = maxpool(g, x, 2, 2)
    x = relu(g, conv(g, x, 4096, 7, pad=0, bias=True, name="fc6"))
    x = relu(g, conv(g, x, 4096, 1, pad=0, bias=True, name="fc7"))
    x = conv(g, x, num_classes, 1, pad=0, bias=True, gain=1.0, name="fc8")
    logits = g.op("Squeeze", [x.name, g.const(np.array([2, 3], np.int64), name="axes")], name="fc8/squeezed")
    g.output(logits, "logits", shape=["batch", num_classes])
    return g
