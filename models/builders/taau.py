"""onnx-taau-downsample: the frame-downsampling front end of a temporal anti-aliasing upscaler.

No public model is pinned to this row, so this is a documented, plausible design. A TAAU
upscaler renders at low resolution and accumulates history at display resolution; this network
produces the half-resolution inputs of its next stage from a display-resolution frame:

* input ``frame`` [batch, 4, 1080, 1920]: RGB color and depth;
* SpaceToDepth(2) folds each 2x2 block into channels (16 channels at 540x960) — learned
  downsampling that keeps sub-pixel detail instead of discarding it;
* a small conv stack (3x3 16→32, 3x3 32→32, both ReLU; 1x1 32→16 ReLU) extracts features;
* a 1x1 head predicts a 3-channel color correction and a per-pixel blend weight (Sigmoid);
* the output color is a blend of the bilinear (Resize) downsampled color and the correction,
  concatenated with the 16 features: [batch, 19, 540, 960].
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from models.graph import Graph
from models.layers import T, conv, relu

VERSION = 1


def build(height: int = 1080, width: int = 1920, channels: int = 4, features: int = 32) -> Graph:
    g = Graph("taau_downsample", "TAAU frame downsampling network")
    g.input("frame", TensorProto.FLOAT, ["batch", channels, height, width])
    x = T(g.op("SpaceToDepth", ["frame"], blocksize=2), channels * 4, height // 2, width // 2)
    x = relu(g, conv(g, x, features, 3, bias=True, gain=1.0, name="enc.0"))
    x = relu(g, conv(g, x, features, 3, bias=True, name="enc.1"))
    feat = relu(g, conv(g, x, features // 2, 1, pad=0, bias=True, name="enc.2"))
    head = conv(g, feat, 4, 1, pad=0, bias=True, gain=1.0, name="head")
    corr, alpha = g.op("Split", [head.name, g.const(np.array([3, 1], np.int64), name="split")], n_out=2, axis=1)
    alpha = g.op("Sigmoid", [alpha])
    rgb = g.op("Slice", ["frame", g.const(np.array([0], np.int64), name="starts"),
                         g.const(np.array([3], np.int64), name="ends"), g.const(np.array([1], np.int64), name="axes")])
    down = g.op("Resize", [rgb, "", g.const(np.array([1, 1, 0.5, 0.5], np.float32), name="scales")],
                mode="linear", coordinate_transformation_mode="half_pixel")
    # color = down + alpha * (corr - down)
    color = g.op("Add", [down, g.op("Mul", [alpha, g.op("Sub", [corr, down])])])
    out = g.op("Concat", [color, feat.name], axis=1)
    g.output(out, "output", shape=["batch", 3 + features // 2, height // 2, width // 2])
    return g
