"""What the CPU kernels share: which instructions they take and how they pad."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

FAST_DTYPES = ("float32", "float64")


def plain_static(ins, ndim: int | None = None) -> bool:
    """Static, packed float32/64 shapes on the instruction and its inputs."""
    shapes = [ins.shape] + [i.shape for i in ins.inputs]
    for s in shapes:
        if not isinstance(s, Shape) or not s.static or not s.standard():
            return False
    if ins.shape.dtype not in FAST_DTYPES:
        return False
    return ndim is None or ins.inputs[0].shape.ndim == ndim


def padder(lens, pads, fill, dtype):
    """A function padding an (N, C, H, W) array by ``pads`` (top, left, bottom, right) into a
    buffer prepared once (its border is filled once and never written again)."""
    n, c, h, w = lens
    top, left, bottom, right = pads
    if not any(pads):
        return lambda x: x
    buf = np.full((n, c, h + top + bottom, w + left + right), fill, dtype=dtype)
    inner = buf[:, :, top:top + h, left:left + w]

    def pad(x):
        inner[...] = x
        return buf
    return pad
