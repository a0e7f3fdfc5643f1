"""RMS normalisation over the last axis of packed rows (Llama's RMSNorm) as one kernel: a warp per
row (a block for rows over ``row_reduce.WARP_ROW_MAX``), the sum of squares in fp32, the scale
applied in the one store. Exported graphs spell it as Pow, ReduceMean, Add, Sqrt, Reciprocal (or
Div), Mul, Mul: seven kernels and as many round trips."""
from __future__ import annotations

import numpy as np

from .raw_source import cuda_source, raw_kernel
from .row_reduce import REDUCE_SOURCE, row_launch

_SOURCE = REDUCE_SOURCE + cuda_source("rms_rows")

_TYPES = {"float16": "__half", "float32": "float"}


def rms_rows(x, width: int, scale, eps: float):
    """``x`` (C-contiguous, fp32 or fp16) RMS-normalised over rows of ``width`` elements, times
    ``scale`` (contiguous, ``width`` elements, of ``x``'s type or fp32)."""
    import cupy
    y = cupy.empty_like(x)
    rows = x.size // width
    if rows == 0:
        return y
    grid, block, lanes = row_launch(rows, width)
    defines = {"T": _TYPES[x.dtype.name], "ST": _TYPES[scale.dtype.name], "LANES": lanes}
    raw_kernel(_SOURCE, "rms_rows", defines)(grid, block, (x, scale, y, np.int64(rows), np.int32(width),
                                                           np.float32(eps)))
    return y
