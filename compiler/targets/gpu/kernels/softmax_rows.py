"""Softmax and LogSoftmax over the last axis of packed rows as one kernel: a warp per row (a block
for rows over ``row_reduce.WARP_ROW_MAX``), fp16 read and written as fp16 with fp32 arithmetic
inside. The CuPy lowering takes a cast up, a max, a subtraction, an exp, a sum, a division and a
cast down, seven kernels and as many round trips through memory.

Three passes over the row (maximum, sum of exponentials, store) read it from memory once and from
L1/L2 after that, as PyTorch's softmax_warp_forward does.
"""
from __future__ import annotations

import numpy as np

from .raw_source import cuda_source, raw_kernel
from .row_reduce import REDUCE_SOURCE, row_launch

_SOURCE = REDUCE_SOURCE + cuda_source("softmax_rows")


def softmax_rows(x, width: int, log: bool = False):
    """Softmax (LogSoftmax with ``log``) of C-contiguous ``x`` (fp32 or fp16) over rows of
    ``width`` elements."""
    import cupy
    y = cupy.empty_like(x)
    rows = x.size // width
    if rows == 0:
        return y
    grid, block, lanes = row_launch(rows, width)
    defines = {"T": "__half" if x.dtype.name == "float16" else "float", "LANES": lanes, "LOG": int(log)}
    raw_kernel(_SOURCE, "softmax_rows", defines)(grid, block, (x, y, np.int64(rows), np.int32(width)))
    return y
