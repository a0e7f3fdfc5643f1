"""A convolution's epilogue (bias, residual, clamp) as one numba-compiled pass over the product
(imported only where numba is): NumPy takes a pass per term."""
from __future__ import annotations

import numba

from .jit_math import FASTMATH, sigmoid32


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def bias_residual_clamp(out, bias, res, has_res, low, high, swish, hardswish):
    """``out``: (N, G, M, P) in place; ``bias``: (G, M); ``res``: like ``out`` when ``has_res``.
    ``low``/``high``: -inf/inf for no bound. A NaN stays NaN. ``swish``: then v · sigmoid(v); ``hardswish``: v · clip(v / 6 + 1/2, 0, 1)."""
    n, g, m, p = out.shape
    six, half, zero, one = out.dtype.type(6), out.dtype.type(0.5), out.dtype.type(0), out.dtype.type(1)
    for b in range(n):
        for gi in range(g):
            for mi in range(m):
                row = out[b, gi, mi]
                add = bias[gi, mi]
                if has_res:
                    rrow = res[b, gi, mi]
                    for j in range(p):
                        v = row[j] + add + rrow[j]
                        row[j] = v if v != v else min(max(v, low), high)
                else:
                    for j in range(p):
                        v = row[j] + add
                        row[j] = v if v != v else min(max(v, low), high)
                if swish:
                    for j in range(p):
                        row[j] = row[j] * sigmoid32(row[j])
                if hardswish:
                    for j in range(p):
                        v = row[j]
                        row[j] = v * min(max(v / six + half, zero), one)
