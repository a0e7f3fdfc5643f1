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


# Results up to this size live in one buffer per instruction, written again by every run (no
# allocation, warm in cache); larger ones are allocated per run, where allocating costs
# nothing next to the work and keeping them all would cost a batch-64 network gigabytes.
MAX_KEPT_BYTES = 1 << 22


def output_buffer(lens, dtype):
    """A function returning the array an instruction writes its result into."""
    dtype = np.dtype(dtype)
    lens = tuple(int(n) for n in lens)
    if int(np.prod(lens, dtype=np.int64)) * dtype.itemsize > MAX_KEPT_BYTES:
        return lambda: np.empty(lens, dtype=dtype)
    kept = np.empty(lens, dtype=dtype)
    return lambda: kept


def clamp(x, low, high, out):
    """``out = min(max(x, low), high)``, either bound None, NaN kept. One ``np.clip`` with both
    bounds given: on this NumPy, ``np.maximum(x, 0)`` against a scalar runs ~3x slower (and
    ``np.clip`` with a bound of None as slowly)."""
    t = x.dtype.type
    return np.clip(x, t(-np.inf if low is None else low), t(np.inf if high is None else high), out=out)
