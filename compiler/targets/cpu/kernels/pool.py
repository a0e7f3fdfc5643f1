"""MaxPool and AveragePool as element-wise maxima or sums over kernel-tap slices of a padded
buffer; GlobalAveragePool as one mean into a kept buffer."""
from __future__ import annotations

import numpy as np

from .common import output_buffer, padder, plain_static


class Taps:
    """A 2-D pool's kernel taps: ``combine(out, xp)`` folds every tap's strided view of the
    padded input ``xp`` into ``out`` with ``ufunc`` (maximum, add)."""

    def __init__(self, ins):
        a = ins.attrs
        self.lens = tuple(ins.inputs[0].shape.lens)
        self.oh, self.ow = ins.shape.lens[2:]
        self.kh, self.kw = a["kernel_shape"]
        self.sh, self.sw = a["strides"]
        self.dh, self.dw = a.get("dilations") or (1, 1)
        self.pads = tuple(a["pads"][:4])
        self.dtype = np.dtype(ins.shape.dtype)

    def view(self, xp, i, j):
        return xp[:, :, i * self.dh:i * self.dh + self.sh * (self.oh - 1) + 1:self.sh,
                  j * self.dw:j * self.dw + self.sw * (self.ow - 1) + 1:self.sw]

    def combine(self, ufunc, out, xp):
        np.copyto(out, self.view(xp, 0, 0))
        for i in range(self.kh):
            for j in range(self.kw):
                if i or j:
                    ufunc(out, self.view(xp, i, j), out=out)
        return out


def _plain_window(ins) -> bool:
    return plain_static(ins, 4) and not ins.attrs.get("ceil_mode")


def maxpool_kernel(ins):
    if not _plain_window(ins) or ins.attrs.get("indices"):
        return None
    taps = Taps(ins)
    pad = padder(taps.lens, taps.pads, -np.inf, taps.dtype)
    buffer = output_buffer(ins.shape.lens, taps.dtype)
    return lambda x: taps.combine(np.maximum, buffer(), pad(x))


def averagepool_kernel(ins):
    """AveragePool as a sum over kernel-tap slices times 1 / (taps counted at each output), the
    counts worked out once at lowering; a window covering the whole input is one mean."""
    if not _plain_window(ins):
        return None
    taps = Taps(ins)
    buffer = output_buffer(ins.shape.lens, taps.dtype)
    if (taps.oh, taps.ow) == (1, 1) and (taps.kh, taps.kw) == taps.lens[2:] and not any(taps.pads):
        return lambda x: np.mean(x, axis=(2, 3), keepdims=True, out=buffer())
    pad = padder(taps.lens, taps.pads, 0, taps.dtype)
    if ins.attrs.get("count_include_pad"):
        counts = np.full((1, 1, taps.oh, taps.ow), taps.kh * taps.kw, taps.dtype)
    else:
        ones = np.ones((1, 1) + taps.lens[2:], taps.dtype)
        padded = padder((1, 1) + taps.lens[2:], taps.pads, 0, taps.dtype)(ones)
        counts = taps.combine(np.add, np.empty((1, 1, taps.oh, taps.ow), taps.dtype), padded)
    scale = (1 / counts).astype(taps.dtype)

    def run(x):
        y = taps.combine(np.add, buffer(), pad(x))
        y *= scale
        return y
    return run


def global_averagepool_kernel(ins):
    if not plain_static(ins) or ins.shape.ndim < 3:
        return None
    axes = tuple(range(2, ins.shape.ndim))
    buffer = output_buffer(ins.shape.lens, ins.shape.dtype)
    return lambda x: np.mean(x, axis=axes, keepdims=True, out=buffer())
