"""Inception v3 (torchvision, no aux head) and Inception v4 (Cadene's port / TF-slim layout).

Every conv is BasicConv2d: bias-free conv, BatchNorm (eps 1e-3), ReLU. ``style="slim"`` builds the
slim variant of v4: NHWC input transposed to NCHW, TF 'SAME' padding written out as explicit
(possibly asymmetric) pads, a BatchNorm without learned scale, and a 1001-class head.
"""
from __future__ import annotations

from models.graph import Graph
from models.layers import T, avgpool, bn, concat, conv, global_pool_flat, linear, maxpool, nchw_input, nhwc_input, relu

VERSION = 1


class _Ctx:
    def __init__(self, g: Graph, slim: bool):
        self.g, self.slim = g, slim

    def c(self, x: T, cout: int, k=1, s: int = 1, pad=None, name: str = "conv") -> T:
        """BasicConv2d. ``pad``: None → 'same' for stride 1 and 'valid' otherwise (as in both ports)."""
        if pad is None:
            kh, kw = (k, k) if isinstance(k, int) else k
            pad = ((kh // 2, kw // 2) if s == 1 else 0) if not self.slim else ("same" if s == 1 else 0)
        y = conv(self.g, x, cout, k, s, pad=pad, name=name)
        return relu(self.g, bn(self.g, y, eps=1e-3, scale=not self.slim, name=f"{name}.bn"))

    def avg(self, x: T) -> T:
        return avgpool(self.g, x, 3, 1, pad=1, count_include_pad=not self.slim)


# ---------------------------------------------------------------------------- Inception v3
def _v3_a(m: _Ctx, x: T, pool_features: int, n: str) -> T:
    b1 = m.c(x, 64, 1, name=f"{n}.branch1x1")
    b5 = m.c(m.c(x, 48, 1, name=f"{n}.branch5x5_1"), 64, 5, name=f"{n}.branch5x5_2")
    b3 = m.c(m.c(m.c(x, 64, 1, name=f"{n}.branch3x3dbl_1"), 96, 3, name=f"{n}.branch3x3dbl_2"), 96, 3,
             name=f"{n}.branch3x3dbl_3")
    bp = m.c(m.avg(x), pool_features, 1, name=f"{n}.branch_pool")
    return concat(m.g, [b1, b5, b3, bp])


def _v3_b(m: _Ctx, x: T, n: str) -> T:
    b3 = m.c(x, 384, 3, 2, name=f"{n}.branch3x3")
    bd = m.c(m.c(m.c(x, 64, 1, name=f"{n}.branch3x3dbl_1"), 96, 3, name=f"{n}.branch3x3dbl_2"), 96, 3, 2,
             name=f"{n}.branch3x3dbl_3")
    return concat(m.g, [b3, bd, maxpool(m.g, x, 3, 2)])


def _v3_c(m: _Ctx, x: T, c7: int, n: str) -> T:
    b1 = m.c(x, 192, 1, name=f"{n}.branch1x1")
    b7 = m.c(x, c7, 1, name=f"{n}.branch7x7_1")
    b7 = m.c(b7, c7, (1, 7), name=f"{n}.branch7x7_2")
    b7 = m.c(b7, 192, (7, 1), name=f"{n}.branch7x7_3")
    bd = m.c(x, c7, 1, name=f"{n}.branch7x7dbl_1")
    for i, (cout, k) in enumerate([(c7, (7, 1)), (c7, (1, 7)), (c7, (7, 1)), (192, (1, 7))]):
        bd = m.c(bd, cout, k, name=f"{n}.branch7x7dbl_{i + 2}")
    bp = m.c(m.avg(x), 192, 1, name=f"{n}.branch_pool")
    return concat(m.g, [b1, b7, bd, bp])


def _v3_d(m: _Ctx, x: T, n: str) -> T:
    b3 = m.c(m.c(x, 192, 1, name=f"{n}.branch3x3_1"), 320, 3, 2, name=f"{n}.branch3x3_2")
    b7 = m.c(x, 192, 1, name=f"{n}.branch7x7x3_1")
    b7 = m.c(b7, 192, (1, 7), name=f"{n}.branch7x7x3_2")
    b7 = m.c(b7, 192, (7, 1), name=f"{n}.branch7x7x3_3")
    b7 = m.c(b7, 192, 3, 2, name=f"{n}.branch7x7x3_4")
    return concat(m.g, [b3, b7, maxpool(m.g, x, 3, 2)])


def _v3_e(m: _Ctx, x: T, n: str) -> T:
    b1 = m.c(x, 320, 1, name=f"{n}.branch1x1")
    b3 = m.c(x, 384, 1, name=f"{n}.branch3x3_1")
    b3 = concat(m.g, [m.c(b3, 384, (1, 3), name=f"{n}.branch3x3_2a"), m.c(b3, 384, (3, 1), name=f"{n}.branch3x3_2b")])
    bd = m.c(m.c(x, 448, 1, name=f"{n}.branch3x3dbl_1"), 384, 3, name=f"{n}.branch3x3dbl_2")
    bd = concat(m.g, [m.c(bd, 384, (1, 3), name=f"{n}.branch3x3dbl_3a"), m.c(bd, 384, (3, 1), name=f"{n}.branch3x3dbl_3b")])
    bp = m.c(m.avg(x), 192, 1, name=f"{n}.branch_pool")
    return concat(m.g, [b1, b3, bd, bp])


def build_v3(num_classes: int = 1000, image_size: int = 299) -> Graph:
    g = Graph("inception_v3", "Inception v3, torchvision layout, no auxiliary head")
    m = _Ctx(g, slim=False)
    x = nchw_input(g, image_size)
    x = m.c(x, 32, 3, 2, name="Conv2d_1a_3x3")
    x = m.c(x, 32, 3, pad=0, name="Conv2d_2a_3x3")
    x = m.c(x, 64, 3, name="Conv2d_2b_3x3")
    x = maxpool(g, x, 3, 2)
    x = m.c(x, 80, 1, name="Conv2d_3b_1x1")
    x = m.c(x, 192, 3, pad=0, name="Conv2d_4a_3x3")
    x = maxpool(g, x, 3, 2)
    x = _v3_a(m, x, 32, "Mixed_5b")
    x = _v3_a(m, x, 64, "Mixed_5c")
    x = _v3_a(m, x, 64, "Mixed_5d")
    x = _v3_b(m, x, "Mixed_6a")
    for n, c7 in [("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)]:
        x = _v3_c(m, x, c7, n)
    x = _v3_d(m, x, "Mixed_7a")
    x = _v3_e(m, x, "Mixed_7b")
    x = _v3_e(m, x, "Mixed_7c")
    logits = linear(g, global_pool_flat(g, x), x.c, num_classes)
    g.output(logits, "output", shape=["batch", num_classes])
    return g


# ---------------------------------------------------------------------------- Inception v4
def _v4_a(m: _Ctx, x: T, n: str) -> T:
    b0 = m.c(x, 96, 1, name=f"{n}.branch0")
    b1 = m.c(m.c(x, 64, 1, name=f"{n}.branch1.0"), 96, 3, name=f"{n}.branch1.1")
    b2 = m.c(m.c(m.c(x, 64, 1, name=f"{n}.branch2.0"), 96, 3, name=f"{n}.branch2.1"), 96, 3, name=f"{n}.branch2.2")
    b3 = m.c(avgpool(m.g, x, 3, 1, pad=1), 96, 1, name=f"{n}.branch3.1")
    return concat(m.g, [b0, b1, b2, b3])


def _v4_b(m: _Ctx, x: T, n: str) -> T:
    b0 = m.c(x, 384, 1, name=f"{n}.branch0")
    b1 = m.c(x, 192, 1, name=f"{n}.branch1.0")
    b1 = m.c(b1, 224, (1, 7), name=f"{n}.branch1.1")
    b1 = m.c(b1, 256, (7, 1), name=f"{n}.branch1.2")
    b2 = m.c(x, 192, 1, name=f"{n}.branch2.0")
    for i, (cout, k) in enumerate([(192, (7, 1)), (224, (1, 7)), (224, (7, 1)), (256, (1, 7))]):
        b2 = m.c(b2, cout, k, name=f"{n}.branch2.{i + 1}")
    b3 = m.c(avgpool(m.g, x, 3, 1, pad=1), 128, 1, name=f"{n}.branch3.1")
    return concat(m.g, [b0, b1, b2, b3])


def _v4_c(m: _Ctx, x: T, n: str) -> T:
    b0 = m.c(x, 256, 1, name=f"{n}.branch0")
    b1 = m.c(x, 384, 1, name=f"{n}.branch1_0")
    b1 = concat(m.g, [m.c(b1, 256, (1, 3), name=f"{n}.branch1_1a"), m.c(b1, 256, (3, 1), name=f"{n}.branch1_1b")])
    b2 = m.c(x, 384, 1, name=f"{n}.branch2_0")
    b2 = m.c(b2, 448, (3, 1), name=f"{n}.branch2_1")
    b2 = m.c(b2, 512, (1, 3), name=f"{n}.branch2_2")
    b2 = concat(m.g, [m.c(b2, 256, (1, 3), name=f"{n}.branch2_3a"), m.c(b2, 256, (3, 1), name=f"{n}.branch2_3b")])
    b3 = m.c(avgpool(m.g, x, 3, 1, pad=1), 256, 1, name=f"{n}.branch3.1")
    return concat(m.g, [b0, b1, b2, b3])


def build_v4(num_classes: int = 1001, image_size: int = 299, style: str = "cadene") -> Graph:
    slim = style == "slim"
    g = Graph("inception_v4", f"Inception v4, {style} layout")
    m = _Ctx(g, slim=slim)
    x = nhwc_input(g, image_size) if slim else nchw_input(g, image_size)
    x = m.c(x, 32, 3, 2, name="features.0")
    x = m.c(x, 32, 3, pad=0, name="features.1")
    x = m.c(x, 64, 3, name="features.2")
    x = concat(g, [maxpool(g, x, 3, 2), m.c(x, 96, 3, 2, name="features.3.conv")])          # Mixed_3a
    b0 = m.c(m.c(x, 64, 1, name="features.4.branch0.0"), 96, 3, pad=0, name="features.4.branch0.1")
    b1 = m.c(x, 64, 1, name="features.4.branch1.0")
    b1 = m.c(b1, 64, (1, 7), name="features.4.branch1.1")
    b1 = m.c(b1, 64, (7, 1), name="features.4.branch1.2")
    b1 = m.c(b1, 96, 3, pad=0, name="features.4.branch1.3")
    x = concat(g, [b0, b1])                                                                   # Mixed_4a
    x = concat(g, [m.c(x, 192, 3, 2, name="features.5.conv"), maxpool(g, x, 3, 2)])          # Mixed_5a
    for i in range(4):
        x = _v4_a(m, x, f"features.{6 + i}")
    # Reduction-A
    b0 = m.c(x, 384, 3, 2, name="features.10.branch0")
    b1 = m.c(m.c(m.c(x, 192, 1, name="features.10.branch1.0"), 224, 3, name="features.10.branch1.1"), 256, 3, 2,
             name="features.10.branch1.2")
    x = concat(g, [b0, b1, maxpool(g, x, 3, 2)])
    for i in range(7):
        x = _v4_b(m, x, f"features.{11 + i}")
    # Reduction-B
    b0 = m.c(m.c(x, 192, 1, name="features.18.branch0.0"), 192, 3, 2, name="features.18.branch0.1")
    b1 = m.c(x, 256, 1, name="features.18.branch1.0")
    b1 = m.c(b1, 256, (1, 7), name="features.18.branch1.1")
    b1 = m.c(b1, 320, (7, 1), name="features.18.branch1.2")
    b1 = m.c(b1, 320, 3, 2, name="features.18.branch1.3")
    x = concat(g, [b0, b1, maxpool(g, x, 3, 2)])
    for i in range(3):
        x = _v4_c(m, x, f"features.{19 + i}")
    logits = linear(g, global_pool_flat(g, x), x.c, num_classes, name="last_linear")
    g.output(logits, "logits", shape=["batch", num_classes])
    return g
