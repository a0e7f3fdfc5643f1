"""A residual Add and the LayerNorm or RMSNorm after it over the last axis as one kernel: each row
is summed from its two inputs (rounded to the data type, as the Add alone stores it), optionally
written out (the residual stream), and normalised with fp32 sums; a warp per row, a block for rows
over ``row_reduce.WARP_ROW_MAX``. Each lane loads its part of the row into registers once
(``row_reduce.cached_per_lane``): the kernel that read the row three times from memory ran at
about 1 TB/s on BERT-base's rows (768 fp32, 1,024 rows: one warp per row, 8 warps an SM), bound by
the latency of its dependent loads."""
from __future__ import annotations

import numpy as np

from .raw_source import raw_kernel
from .row_reduce import REDUCE_SOURCE, cached_per_lane, row_launch

_SOURCE = REDUCE_SOURCE + r"""
__device__ __forceinline__ float summed(const T* a, const T* b, long long at) {
    return (float)(T)((float)a[at] + (float)b[at]);
}

// a, b, y, s: (rows, D) packed; scale, bias: (D), bias null unless HAS_BIAS. CACHE > 0: each lane
// keeps its CACHE elements of the row in registers, loaded once, all at the start.
extern "C" __global__ void residual_norm_rows(const T* __restrict__ a, const T* __restrict__ b,
        const T* __restrict__ scale, const T* __restrict__ bias, T* __restrict__ y, T* __restrict__ s,
        long long rows, int D, float eps) {
    __shared__ float shared[32];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) return;                 // a whole row's lanes leave together
    const long long base = row * D;
    float mean = 0.0f;
#if CACHE > 0
    float v[CACHE];
    float t = 0.0f;
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const int i = threadIdx.x + k * LANES;
        v[k] = i < D ? summed(a, b, base + i) : 0.0f;
        t += v[k];
    }
    if (!RMS) mean = row_reduce(t, false, shared) / D;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const float d = threadIdx.x + k * LANES < D ? v[k] - mean : 0.0f;
        q += d * d;
    }
    const float inv = rsqrtf(row_reduce(q, false, shared) / D + eps);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const int i = threadIdx.x + k * LANES;
        if (i < D) {
            if (WRITE_SUM) s[base + i] = (T)v[k];
            float o = (v[k] - mean) * inv * (float)scale[i];
            if (HAS_BIAS) o += (float)bias[i];
            y[base + i] = (T)o;
        }
    }
#else
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
#endif
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
                   "HAS_BIAS": int(bias is not None), "WRITE_SUM": int(write_sum),
                   "CACHE": cached_per_lane(width, lanes)}
        null = np.uintp(0)
        raw_kernel(_SOURCE, "residual_norm_rows", defines)(
            grid, block, (a, b, scale, bias if bias is not None else null, y, s if write_sum else null,
                          np.int64(rows), np.int32(width), np.float32(eps)))
    return (y, s) if write_sum else y
