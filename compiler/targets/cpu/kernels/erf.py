"""Erf for float32 as a short chain of vectorised NumPy operations.

Abramowitz & Stegun 7.1.26: erf(x) = 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p |x|),
absolute error below 1.5e-7 — float32's own resolution near 1 — at a fraction of the cost of
SciPy's general routine. float64 keeps the reference (SciPy), which this could not match.
"""
from __future__ import annotations

import numpy as np

P = 0.3275911
A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf_f32(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    t = ax * np.float32(P)
    t += np.float32(1)
    np.reciprocal(t, out=t)
    poly = t * np.float32(A[4])
    for a in (A[3], A[2], A[1], A[0]):
        poly += np.float32(a)
        poly *= t
    np.square(ax, out=ax)
    np.negative(ax, out=ax)
    np.exp(ax, out=ax)
    poly *= ax
    np.subtract(np.float32(1), poly, out=poly)
    return np.copysign(poly, x, out=poly)
