"""float32 tanh, sigmoid and erf for numba-compiled loops (imported only where numba is).

``math.tanh``/``math.exp`` compile to calls of the C library, ~10-20 ns each, which the loop
cannot vectorise; a rational approximation is a few multiply-adds that it can. tanh: the
[13/6] minimax rational function on [-7.9, 7.9] that Eigen uses for float32 (error below
3e-7, float32's own resolution); sigmoid(x) = (1 + tanh(x/2)) / 2. erf: Abramowitz & Stegun
7.1.26 (absolute error below 1.5e-7), as the cpu target's NumPy spelling of Erf.
"""
from __future__ import annotations

import math

import numba
import numpy as np

# No "nnan"/"ninf": NaN and infinity keep their IEEE behaviour.
FASTMATH = {"contract", "reassoc", "arcp", "nsz"}
TANH_P = (4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05, 5.12229709037114e-08,
          -8.60467152213735e-11, 2.00018790482477e-13, -2.76076847742355e-16)
TANH_Q = (4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06)
TANH_CLAMP = 7.90531110763549805
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
F = np.float32


@numba.njit(inline="always", fastmath=FASTMATH, cache=True)
def tanh32(x):
    x = min(max(x, F(-TANH_CLAMP)), F(TANH_CLAMP))
    x2 = x * x
    p = F(TANH_P[6])
    p = p * x2 + F(TANH_P[5])
    p = p * x2 + F(TANH_P[4])
    p = p * x2 + F(TANH_P[3])
    p = p * x2 + F(TANH_P[2])
    p = p * x2 + F(TANH_P[1])
    p = p * x2 + F(TANH_P[0])
    q = F(TANH_Q[3])
    q = q * x2 + F(TANH_Q[2])
    q = q * x2 + F(TANH_Q[1])
    q = q * x2 + F(TANH_Q[0])
    return x * p / q


@numba.njit(inline="always", fastmath=FASTMATH, cache=True)
def sigmoid32(x):
    return F(0.5) * tanh32(F(0.5) * x) + F(0.5)


@numba.njit(inline="always", fastmath=FASTMATH, cache=True)
def erf32(x):
    ax = abs(x)
    t = F(1) / (F(1) + F(ERF_P) * ax)
    poly = F(ERF_A[4])
    poly = poly * t + F(ERF_A[3])
    poly = poly * t + F(ERF_A[2])
    poly = poly * t + F(ERF_A[1])
    poly = poly * t + F(ERF_A[0])
    y = F(1) - poly * t * F(math.exp(-ax * ax))
    return y if x >= 0 else -y


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def tanh32_into(x, out):
    """``out[:] = tanh(x)`` over 1-D float32 arrays."""
    for i in range(x.shape[0]):
        out[i] = tanh32(x[i])


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def sigmoid32_into(x, out):
    for i in range(x.shape[0]):
        out[i] = sigmoid32(x[i])


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def erf32_into(x, out):
    for i in range(x.shape[0]):
        out[i] = erf32(x[i])


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def swish32_into(x, out):
    """x * sigmoid(x) (SiLU: EfficientNet, MnasNet) in one pass."""
    for i in range(x.shape[0]):
        out[i] = x[i] * sigmoid32(x[i])
