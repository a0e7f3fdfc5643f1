"""Rotary position embedding (halves form) as one kernel: each thread rotates one pair of a head's
features, or hands on one feature past the rotated ones, reading x in whatever strides the heads'
transpose left it and writing the packed (batch, heads, sequence, head size) result attention
reads."""
from __future__ import annotations

import numpy as np

from .raw_source import cuda_source, raw_kernel

_SOURCE = cuda_source("rotary_half")
_TYPES = {"float16": "__half", "float32": "float"}
THREADS = 256


def rotary_half(x, cos, sin):
    """``x`` (B, H, S, D; fp32 or fp16, any non-negative strides) with its first 2 * half
    features rotated by ``cos`` and ``sin`` (C-contiguous (B or 1, S, half), of x's type) and the
    rest handed on, into a new packed array."""
    import cupy
    b, h, s, d = x.shape
    half = cos.shape[-1]
    y = cupy.empty((b, h, s, d), dtype=x.dtype)
    items = b * h * s * (d - half)
    if items == 0:
        return y
    item = x.itemsize
    sb, sh, ss, sd = (st // item for st in x.strides)
    cb = 0 if cos.shape[0] == 1 else s * half
    kernel = raw_kernel(_SOURCE, "rotary_half", {"T": _TYPES[x.dtype.name]})
    kernel((-(-items // THREADS),), (THREADS,),
           (x, cos, sin, y, np.int64(items), np.int32(h), np.int32(s), np.int32(d), np.int32(half),
            np.int64(sb), np.int64(sh), np.int64(ss), np.int64(sd), np.int64(cb)))
    return y
