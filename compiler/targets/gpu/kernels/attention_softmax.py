"""The softmax step of attention as one kernel: scores (batch, heads, q, k) scaled, plus an
optional mask read through broadcast strides, causal positions dropped, softmax over keys in fp32,
written back in the scores' type (in place is fine). The decomposed graph takes a cast, a max,
a subtract, an exp, a sum, a divide and a cast back for this, each a pass over the scores.

fp32 scores use ``expf``, fp16 ones the hardware ``__expf``, whose error is far below fp16's.
A warp per row: three sweeps over a row of at most a few thousand keys (max, sum, store), the
second and third from L1/L2. A row whose keys are all masked is written as zeros, as the
reference's Attention does. This kernel belongs to the attention lowering; it is not a general
Softmax.
"""
from __future__ import annotations

import numpy as np

from .raw_source import raw_kernel

WARPS = 8

_SOURCE = r"""
#define NEG_INF __int_as_float(0xff800000)
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// s, p: (rows = B*H*Q, K) packed; mask: element strides ms (b, h, q, k), or null.
extern "C" __global__ void attention_softmax(const T* __restrict__ s, const M* __restrict__ mask,
        T* __restrict__ p, long long rows, int H, int Q, int K, float scale,
        long long m0, long long m1, long long m2, long long m3) {
    const long long row = (long long)blockIdx.x * WARPS + threadIdx.y;
    if (row >= rows) return;                 // a whole warp leaves together
    const int lane = threadIdx.x;
    const int qi = (int)(row % Q);
    const long long bh = row / Q;
    const T* sr = s + row * K;
    const M* mr = HAS_MASK ? mask + (bh / H) * m0 + (bh % H) * m1 + qi * m2 : nullptr;
    const int end = CAUSAL ? min(K, qi + 1) : K;
    float top = NEG_INF;
    for (int j = lane; j < end; j += 32) {
        float v = (float)sr[j] * scale;
        if (HAS_MASK) v += (float)mr[j * m3];
        top = fmaxf(top, v);
    }
    top = warp_max(top);
    const float shift = top == NEG_INF ? 0.0f : top;
    float total = 0.0f;
    for (int j = lane; j < end; j += 32) {
        float v = (float)sr[j] * scale;
        if (HAS_MASK) v += (float)mr[j * m3];
        total += EXP(v - shift);
    }
    total = warp_sum(total);
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;
    T* pr = p + row * K;
    for (int j = lane; j < K; j += 32) {
        float v = (float)sr[j] * scale;
        if (HAS_MASK) v += (float)mr[j * m3];
        pr[j] = (T)(j < end ? EXP(v - shift) * inv : 0.0f);
    }
}
"""

_TYPES = {"float16": "__half", "float32": "float"}


def _kernel(dtype: str, mask_dtype: str | None, causal: bool):
    # fp32 stays exact: expf (within 2 ulp); the hardware approximation only below fp32.
    defines = {"T": _TYPES[dtype], "M": _TYPES[dtype], "WARPS": WARPS,
               "EXP": "expf" if dtype == "float32" else "__expf", "HAS_MASK": int(mask_dtype is not None),
               "CAUSAL": int(causal)}
    return raw_kernel(_SOURCE, "attention_softmax", defines)


def supported(dtype: str, mask_dtype: str | None) -> bool:
    return dtype in _TYPES and mask_dtype in (None, dtype)


def attention_softmax(scores, scale: float, mask=None, causal: bool = False, out=None):
    """softmax(scores * scale + mask) over the last axis of packed ``scores`` (B, H, Q, K);
    ``mask`` broadcasts to it (any strides) or is None; ``causal`` drops keys after the query."""
    import cupy
    out = scores if out is None else out
    b, h, q, k = scores.shape
    rows = b * h * q
    strides = (0, 0, 0, 0)
    if mask is not None:
        view = cupy.broadcast_to(mask, scores.shape)
        strides = tuple(st // view.itemsize for st in view.strides)
    kern = _kernel(scores.dtype.name, None if mask is None else mask.dtype.name, causal)
    kern((-(-rows // WARPS),), (32, WARPS),
         (scores, mask if mask is not None else np.uintp(0), out, np.int64(rows), np.int32(h), np.int32(q),
          np.int32(k), np.float32(scale), *(np.int64(st) for st in strides)))
    return out
