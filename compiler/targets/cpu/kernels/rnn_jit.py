"""The float32 LSTM and GRU recurrences of one direction as numba-compiled loops (imported only
where numba is). Per step: the recurrent product accumulated row by row of R^T (a loop the
compiler vectorises), then the gates element by element with ``jit_math``'s tanh/sigmoid."""
from __future__ import annotations

import numba
import numpy as np

from .jit_math import FASTMATH, sigmoid32, tanh32


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def _recurrent_product(out, h, rt, first, last):
    """out[j] += sum_k h[k] * rt[k, j] for j in [first, last)."""
    for k in range(rt.shape[0]):
        hk = h[k]
        for j in range(first, last):
            out[j - first] += hk * rt[k, j]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def lstm_steps(xw, rt, h, c, y, reverse):
    """``xw``: (seq, batch, 4H) input projections with both biases; ``rt``: (H, 4H); ``h``, ``c``:
    (batch, H) initial state, updated in place to the final one; ``y``: (seq, batch, H) out.
    Gate order i, o, f, candidate (ONNX's)."""
    seq, batch, width = xw.shape
    hidden = rt.shape[0]
    z = np.empty(width, np.float32)
    for s in range(seq):
        t = seq - 1 - s if reverse else s
        for b in range(batch):
            z[:] = xw[t, b]
            _recurrent_product(z, h[b], rt, 0, width)
            for j in range(3 * hidden):
                z[j] = sigmoid32(z[j])
            for j in range(3 * hidden, width):
                z[j] = tanh32(z[j])
            for j in range(hidden):
                cell = z[2 * hidden + j] * c[b, j] + z[j] * z[3 * hidden + j]
                c[b, j] = cell
                y[t, b, j] = z[hidden + j] * tanh32(cell)
            h[b, :] = y[t, b]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def gru_steps(xw, rt, rb, h, y, reverse, linear_before_reset):
    """``xw``: (seq, batch, 3H) input projections with the biases that add outside a product;
    ``rt``: (H, 3H); ``rb``: the recurrent bias of the candidate (only read when
    ``linear_before_reset``); ``h``: (batch, H), updated to the final state. Gates z, r, h."""
    seq, batch, width = xw.shape
    hidden = rt.shape[0]
    zr = np.empty(2 * hidden, np.float32)
    cand = np.empty(hidden, np.float32)
    gated = np.empty(hidden, np.float32)
    for s in range(seq):
        t = seq - 1 - s if reverse else s
        for b in range(batch):
            zr[:] = xw[t, b, :2 * hidden]
            _recurrent_product(zr, h[b], rt, 0, 2 * hidden)
            for j in range(2 * hidden):
                zr[j] = sigmoid32(zr[j])
            if linear_before_reset:
                cand[:] = rb[2 * hidden:]
                _recurrent_product(cand, h[b], rt, 2 * hidden, width)
                for j in range(hidden):
                    cand[j] = xw[t, b, 2 * hidden + j] + zr[hidden + j] * cand[j]
            else:
                for j in range(hidden):
                    gated[j] = zr[hidden + j] * h[b, j]
                cand[:] = xw[t, b, 2 * hidden:]
                _recurrent_product(cand, gated, rt, 2 * hidden, width)
            for j in range(hidden):
                hc = tanh32(cand[j])
                y[t, b, j] = hc + zr[j] * (h[b, j] - hc)
            h[b, :] = y[t, b]
