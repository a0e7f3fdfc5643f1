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

from .raw_source import cuda_source, raw_kernel

WARPS = 8

_SOURCE = cuda_source("attention_softmax")

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
