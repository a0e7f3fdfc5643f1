"""The depthwise convolution's tap loops, compiled by numba (imported only where numba is).

Two loop orders: ``rows_taps`` walks output rows with the taps' input rows read at stride 1 (the
innermost loop runs along a row and vectorises; needs stride 1 and rows of some length;
``strided_rows_taps`` is the same for other strides); ``channels_taps`` walks output pixels with channels innermost over a channels-last copy of the
padded input (for short rows or strides: the loop then runs along the channels)."""
from __future__ import annotations

import numba

from .jit_math import FASTMATH

JIT = dict(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")


@numba.njit(**JIT)
def rows_taps(xp, w, bias, y, dh, dw):
    """Stride 1. ``xp``: the padded input (N, C, H', W'); ``w``: (C, kh, kw); ``y``: (N, C, oh, ow)."""
    n, c, oh, ow = y.shape
    kh, kw = w.shape[1], w.shape[2]
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                out = y[b, ch, i]
                out[:] = bias[ch]
                for p in range(kh):
                    src = xp[b, ch, i + p * dh]
                    for q in range(kw):
                        wv = w[ch, p, q]
                        inp = src[q * dw:q * dw + ow]
                        for j in range(ow):
                            out[j] += wv * inp[j]


@numba.njit(**JIT)
def strided_rows_taps(xp, w, bias, y, sh, sw, dh, dw):
    """Any stride; otherwise as ``rows_taps``."""
    n, c, oh, ow = y.shape
    kh, kw = w.shape[1], w.shape[2]
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                out = y[b, ch, i]
                out[:] = bias[ch]
                for p in range(kh):
                    src = xp[b, ch, i * sh + p * dh]
                    for q in range(kw):
                        wv = w[ch, p, q]
                        base = q * dw
                        for j in range(ow):
                            out[j] += wv * src[base + j * sw]


@numba.njit(**JIT)
def channels_taps(x, wt, bias, y, sh, sw, dh, dw, top, left, xp, acc):
    """``x``: (N, C, H, W) unpadded; ``wt``: (kh, kw, C); ``xp``: (N, H', W', C) scratch whose
    border is zero; ``acc``: (C,) scratch."""
    n, c, h, w = x.shape
    oh, ow = y.shape[2], y.shape[3]
    kh, kw = wt.shape[0], wt.shape[1]
    for b in range(n):
        for ch in range(c):
            for r in range(h):
                for s in range(w):
                    xp[b, top + r, left + s, ch] = x[b, ch, r, s]
        for i in range(oh):
            for j in range(ow):
                acc[:] = bias
                for p in range(kh):
                    row = i * sh + p * dh
                    for q in range(kw):
                        col = j * sw + q * dw
                        for ch in range(c):
                            acc[ch] += wt[p, q, ch] * xp[b, row, col, ch]
                for ch in range(c):
                    y[b, ch, i, j] = acc[ch]
