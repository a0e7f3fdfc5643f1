"""Softmax and LogSoftmax over the last axis of packed rows as one kernel: a warp per row (a block
for rows over ``row_reduce.WARP_ROW_MAX``), fp16 read and written as fp16 with fp32 arithmetic
inside. The CuPy lowering takes a cast up, a max, a subtraction, an exp, a sum, a division and a
cast down, seven kernels and as many round trips through memory.

Three passes over the row (maximum, sum of exponentials, store) read it from memory once and from
L1/L2 after that, as PyTorch's softmax_warp_forward does.
"""
from __future__ import annotations

import numpy as np

from .raw_source import raw_kernel
from .row_reduce import REDUCE_SOURCE, row_launch

_SOURCE = REDUCE_SOURCE + r"""
// x, y: (rows, D) packed.
extern "C" __global__ void softmax_rows(const T* __restrict__ x, T* __restrict__ y, long long rows, int D) {
    __shared__ float shared[32];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) return;                 // a whole row's lanes leave together
    const T* xr = x + row * D;
    float m = NEG_INF;
    for (int i = threadIdx.x; i < D; i += LANES) m = fmaxf(m, (float)xr[i]);
    m = row_reduce(m, true, shared);
    float s = 0.0f;
    for (int i = threadIdx.x; i < D; i += LANES) s += expf((float)xr[i] - m);
    s = row_reduce(s, false, shared);
    T* yr = y + row * D;
    if (LOG) {
        const float shift = m + logf(s);
        for (int i = threadIdx.x; i < D; i += LANES) yr[i] = (T)((float)xr[i] - shift);
    } else {
        const float inv = 1.0f / s;
        for (int i = threadIdx.x; i < D; i += LANES) yr[i] = (T)(expf((float)xr[i] - m) * inv);
    }
}
"""


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
