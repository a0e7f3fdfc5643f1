"""MaxPool as an element-wise maximum over kernel-tap slices of a padded buffer."""
from __future__ import annotations

import numpy as np

from .common import padder, plain_static


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
