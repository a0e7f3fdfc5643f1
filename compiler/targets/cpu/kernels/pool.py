"""MaxPool and AveragePool as element-wise maxima or sums over kernel-tap slices of a padded
buffer; GlobalAveragePool as one mean into a kept buffer."""
from __future__ import annotations

import numpy as np

from .common import output_buffer, padder, plain_static


class Taps:
    """A 2-D pool's kernel taps: ``combine(out, xp)`` folds every tap's strided view of the
    padded input ``xp`` into ``out`` with ``ufunc`` (maximum, add). ``pads`` are the explicit
    ones; ``full_pads`` add, at the bottom and right, the overhang of ceil_mode's last windows."""

    def __init__(self, ins):
        a = ins.attrs
        self.lens = tuple(ins.inputs[0].shape.lens)
        self.oh, self.ow = ins.shape.lens[2:]
        self.kh, self.kw = a["kernel_shape"]
        self.sh, self.sw = a["strides"]
        self.dh, self.dw = a.get("dilations") or (1, 1)
        self.pads = tuple(a["pads"][:4])
        self.dtype = np.dtype(ins.shape.dtype)
        top, left, bottom, right = self.pads
        h, w = self.lens[2:]
        over_h = max(0, (self.oh - 1) * self.sh + (self.kh - 1) * self.dh + 1 - (h + top + bottom))
        over_w = max(0, (self.ow - 1) * self.sw + (self.kw - 1) * self.dw + 1 - (w + left + right))
        self.full_pads = (top, left, bottom + over_h, right + over_w)

    def counts(self, include_pad: bool) -> np.ndarray:
        """How many taps of each output window count for an average: the ones over the input,
        plus the explicit padding's when ``include_pad`` (never the ceil-mode overhang)."""
        top, left, bottom, right = self.full_pads
        h, w = self.lens[2:]
        counted = np.zeros((1, 1, h + top + bottom, w + left + right), self.dtype)
        if include_pad:
            counted[:, :, :h + top + self.pads[2], :w + left + self.pads[3]] = 1
        else:
            counted[:, :, top:top + h, left:left + w] = 1
        return self.combine(np.add, np.empty((1, 1, self.oh, self.ow), self.dtype), counted)

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


def maxpool_kernel(ins):
    if not plain_static(ins, 4) or ins.attrs.get("indices"):
        return None
    taps = Taps(ins)
    pad = padder(taps.lens, taps.full_pads, -np.inf, taps.dtype)
    buffer = output_buffer(ins.shape.lens, taps.dtype)
    return lambda x: taps.combine(np.maximum, buffer(), pad(x))


def averagepool_kernel(ins):
    """AveragePool as a sum over kernel-tap slices times 1 / (taps counted at each output), the
    counts worked out once at lowering; a window covering the whole input is one mean."""
    if not plain_static(ins, 4):
        return None
    taps = Taps(ins)
    buffer = output_buffer(ins.shape.lens, taps.dtype)
    if (taps.oh, taps.ow) == (1, 1) and (taps.kh, taps.kw) == taps.lens[2:] and not any(taps.pads):
        return lambda x: np.mean(x, axis=(2, 3), keepdims=True, out=buffer())
    pad = padder(taps.lens, taps.full_pads, 0, taps.dtype)
    scale = (1 / taps.counts(bool(ins.attrs.get("count_include_pad")))).astype(taps.dtype)

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
