"""A residual Add and the LayerNorm or RMSNorm after it over the last axis as one kernel: each row
is summed from its two inputs (rounded to the data type, as the Add alone stores it), optionally
written out (the residual stream), and normalised with fp32 sums; a warp per row, a block for rows
over ``row_reduce.WARP_ROW_MAX``."""
from __future__ import annotations

import numpy as np

from .raw_source import raw_kernel
from .row_reduce import REDUCE_SOURCE, row_launch

_SOURCE = REDUCE_SOURCE + r"""
__device__ __forceinline__ float summed(const T* a, const T* b, long long at) {
    return (float)(T)((float)a[at] + (float)b[at]);
}

// a, b, y, s: (rows, D) packed; scale, bias: (D), bias null unless HAS_BIAS.
extern "C" __global__ void residual_norm_rows(const T* __restrict__ a, const T* __restrict__ b,
        const T* __restrict__ scale, const T* __restrict__ bias, T* __restrict__ y, T* __restrict__ s,
        long long rows, int D, float eps) {
    __shared__ float shared[32];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) return;                 // a whole row's lanes leave together
    const long long base = row * D;
    float mean = 0.0f;
    if (!RMS) {
        float t = 0.0f;
        for (int i = threadIdx.x; i < D; i += LANES) t += summed(a, b, base + i);
        mean = row_reduce(t, false, shared) / D;
    }
    float q = 0.0f;
    for (int i = threadIdx.x; i < D; i += LANES) { const float d = summed(a, b, base + i) - mean; q += d * d; }
    const float inv = rsqrtf(row_reduce(q, false, shared) / D + eps);
    for (int i = threadIdx.x; i < D; i += LANES) {
        const float v = summed(a, b, base + i);
        if (WRITE_SUM) s[base + i] = (T)v;
        float o = (v - mean) * inv * (float)scale[i];
        if (HAS_BIAS) o += (float)bias[i];
        y[base + i] = (T)o;
    }
}
"""


def residual_norm_rows(a, b, width: int, scale, bias, eps: float, rms: bool, write_sum: bool):
    """(y, sum) or y for C-contiguous ``a`` and ``b`` (fp32 or fp16) over rows of ``width``;
    ``scale`` and ``bias`` (or None) contiguous, ``width`` elements of the data's type."""
    import cupy
    y = cupy.empty_like(a)
    s = cupy.empty_like(a) if write_sum else None
    rows = a.size // width
    if rows:
        grid, block, lanes = row_launch(rows, width)
        defines = {"T": "__half" if a.dtype.name == "float16" else "float", "LANES": lanes, "RMS": int(rms),
                   "HAS_BIAS": int(bias is not None), "WRITE_SUM": int(write_sum)}
        null = np.uintp(0)
        raw_kernel(_SOURCE, "residual_norm_rows", defines)(
            grid, block, (a, b, scale, bias if bias is not None else null, y, s if write_sum else null,
                          np.int64(rows), np.int32(width), np.float32(eps)))
    return (y, s) if write_sum else y
