"""MaxPool and AveragePool as element-wise maxima or sums over kernel-tap slices of a padded
buffer; GlobalAveragePool as one mean into a kept buffer."""
from __future__ import annotations

import numpy as np

from .common import output_buffer, padder, plain_static


def maxpool_kernel(ins):
    a = ins.attrs
    if not plain_static(ins, 4) or a.get("indices") or a.get("ceil_mode"):
        return None
    n, c, h, w = ins.inputs[0].shape.lens
    oh, ow = ins.shape.lens[2:]
    kh, kw = a["kernel_shape"]
    sh, sw = a["strides"]
    dh, dw = a.get("dilations") or (1, 1)
    p = a["pads"]
    dtype = np.dtype(ins.shape.dtype)
    pad = padder((n, c, h, w), (p[0], p[1], p[2], p[3]), -np.inf, dtype)

    def tap(xp, i, j):
        return xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]

    def run(x):
        xp = pad(x)
        y = tap(xp, 0, 0).copy()
        for i in range(kh):
            for j in range(kw):
                if i or j:
                    np.maximum(y, tap(xp, i, j), out=y)
        return y
    return run


def averagepool_kernel(ins):
    """AveragePool as a sum over kernel-tap slices times 1 / (taps counted at each output), the
    counts worked out once at lowering; a window covering the whole input is one mean."""
    a = ins.attrs
    if not plain_static(ins, 4) or a.get("ceil_mode"):
        return None
    n, c, h, w = ins.inputs[0].shape.lens
    oh, ow = ins.shape.lens[2:]
    kh, kw = a["kernel_shape"]
    sh, sw = a["strides"]
    dh, dw = a.get("dilations") or (1, 1)
    p = a["pads"]
    dtype = np.dtype(ins.shape.dtype)
    buffer = output_buffer(ins.shape.lens, dtype)
    if oh == ow == 1 and (kh, kw) == (h, w) and not any(p):
        return lambda x: np.mean(x, axis=(2, 3), keepdims=True, out=buffer())
    pad = padder((n, c, h, w), (p[0], p[1], p[2], p[3]), 0, dtype)

    def tap(xp, i, j):
        return xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]

    def window_sum(xp, out):
        np.copyto(out, tap(xp, 0, 0))
        for i in range(kh):
            for j in range(kw):
                if i or j:
                    out += tap(xp, i, j)
        return out

    if a.get("count_include_pad"):
        counts = np.full((1, 1, oh, ow), kh * kw, dtype)
    else:
        ones = padder((1, 1, h, w), (p[0], p[1], p[2], p[3]), 0, dtype)(np.ones((1, 1, h, w), dtype))
        counts = window_sum(ones, np.empty((1, 1, oh, ow), dtype))
    scale = (1 / counts).astype(dtype)

    def run(x):
        y = window_sum(pad(x), buffer())
        y *= scale
        return y
    return run


def global_averagepool_kernel(ins):
    if not plain_static(ins) or ins.shape.ndim < 3:
        return None
    axes = tuple(range(2, ins.shape.ndim))
    buffer = output_buffer(ins.shape.lens, ins.shape.dtype)
    return lambda x: np.mean(x, axis=axes, keepdims=True, out=buffer())
