"""Sampling grids: AffineGrid builds one, GridSample reads an input at its (normalised)
coordinates with nearest/linear/cubic interpolation and zeros/border/reflection padding."""
from __future__ import annotations

import itertools

import numpy as np

from compiler.ir.shape import Shape

from .common import result, widen
from .registry import Op, register_op


def base_coords(n: int, align_corners: bool) -> np.ndarray:
    """Normalised [-1, 1] positions of n pixels (their centres, or the corners with align)."""
    if align_corners:
        return np.linspace(-1, 1, n) if n > 1 else np.zeros(1)
    return (2 * np.arange(n) + 1) / n - 1


@register_op
class AffineGrid(Op):
    name = "AffineGrid"

    def from_onnx(self, node):
        size = node.literal(1)
        attrs = {"align_corners": int(node.attrs.get("align_corners", 0)),
                 "size": None if size is None else [int(s) for s in size]}
        return attrs, [node.input(0)] if size is not None else node.present_inputs()

    def shape(self, attrs, inputs, literals):
        theta = inputs[0]
        nd = theta.lens[1]
        if attrs["size"] is None:
            return Shape(theta.dtype, (theta.lens[0],) + (None,) * nd + (nd,))
        return Shape(theta.dtype, (theta.lens[0], *attrs["size"][2:], nd))

    def compute(self, attrs, theta, *size):
        lens = attrs["size"] or [int(s) for s in size[0]]
        spatial = lens[2:]
        axes = [base_coords(n, bool(attrs["align_corners"])) for n in spatial]
        mesh = np.meshgrid(*axes, indexing="ij")                   # depth/height/width order
        points = np.stack([*mesh[::-1], np.ones_like(mesh[0])], axis=-1)  # (x, y[, z], 1)
        grid = np.einsum("...k,nik->n...i", points, widen(theta).astype(np.float64))
        return result(grid, theta.dtype)


def _reflect(v, lo, hi):
    span = hi - lo
    below, above = v < lo, v > hi
    d = np.where(below, lo - v, v - hi)
    k = np.floor(d / span)
    r = d - k * span
    even = k % 2 == 0
    inside_from_low = np.where(even, lo + r, hi - r)
    inside_from_high = np.where(even, hi - r, lo + r)
    return np.where(below, inside_from_low, np.where(above, inside_from_high, v))


def _cubic_weights(t, a=-0.75):
    def near(s):
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@register_op
class GridSample(Op):
    name = "GridSample"

    def from_onnx(self, node):
        mode = {"bilinear": "linear", "bicubic": "cubic"}.get(node.attrs.get("mode", "linear"),
                                                               node.attrs.get("mode", "linear"))
        return {"mode": mode, "padding_mode": node.attrs.get("padding_mode", "zeros"),
                "align_corners": int(node.attrs.get("align_corners", 0))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x, grid = inputs
        return Shape(x.dtype, (x.lens[0], x.lens[1], *grid.lens[1:-1]))

    def taps(self, attrs, g, size):
        """Per output position: the input indices read along one axis, their weights, and
        whether each index lies inside (for zeros padding)."""
        align = bool(attrs["align_corners"])
        x = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        mode, padding = attrs["mode"], attrs["padding_mode"]
        if mode == "nearest":
            x = np.rint(x)
        if padding == "border":
            x = np.clip(x, 0, size - 1)
        elif padding == "reflection":
            x = _reflect(x, lo, hi)
        if mode == "nearest":
            index, weights = [x.astype(np.int64)], [np.ones_like(x)]
        else:
            base = np.floor(x)
            t = x - base
            base = base.astype(np.int64)
            if mode == "linear":
                index, weights = [base, base + 1], [1 - t, t]
            else:
                index, weights = [base - 1, base, base + 1, base + 2], _cubic_weights(t)
        out = []
        for i, w in zip(index, weights):
            if padding == "zeros":
                inside = (i >= 0) & (i < size)
            else:
                inside = np.ones(i.shape, dtype=bool)
                i = np.clip(i, 0, size - 1) if padding == "border" else \
                    np.trunc(_reflect(i.astype(np.float64), lo, hi)).astype(np.int64)
            out.append((np.clip(i, 0, size - 1), w, inside))
        return out

    def compute(self, attrs, x, grid):
        xw = widen(x).astype(np.float64)
        g = widen(grid).astype(np.float64)
        n, nd = x.shape[0], x.ndim - 2
        per_axis = [self.taps(attrs, g[..., nd - 1 - k], x.shape[2 + k]) for k in range(nd)]
        batch = np.arange(n).reshape((n,) + (1,) * (g.ndim - 2))
        y = np.zeros((n,) + g.shape[1:-1] + (x.shape[1],))
        for combo in itertools.product(*per_axis):
            weight = np.prod([w for _, w, _ in combo], axis=0) * np.all([m for _, _, m in combo], axis=0)
            values = xw.transpose(0, *range(2, 2 + nd), 1)[(batch, *[i for i, _, _ in combo])]
            y += values * weight[..., None]
        return result(np.moveaxis(y, -1, 1), x.dtype)
