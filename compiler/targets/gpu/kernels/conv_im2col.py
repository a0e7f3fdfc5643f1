"""The convolution fallback: a strided window view and one batched GEMM per group, plain CuPy
(or NumPy when emulating). Runs where cuDNN is missing or hidden, or refuses a graph."""
from __future__ import annotations

import math

from .conv_spec import ConvSpec


def im2col_conv(xp, x, w, spec: ConvSpec):
    """Reference-structured convolution on the device: window view + batched GEMM per group."""
    n, c, *sp = spec.x_shape
    k, cg = spec.w_shape[:2]
    ks = spec.w_shape[2:]
    g = spec.group
    pads = [(0, 0), (0, 0)] + [(b, e) for b, e in zip(spec.pads_begin, spec.pads_end)]
    if any(p != (0, 0) for p in pads):
        x = xp.pad(x, pads)
    x = xp.ascontiguousarray(x)
    out_sp = spec.out_shape[2:]
    item = x.dtype.itemsize
    xs = [s // item for s in x.strides]
    # view (N, C, k1..kd, o1..od)
    shape = (n, c, *ks, *out_sp)
    strides = (xs[0], xs[1], *[xs[2 + i] * spec.dilations[i] for i in range(len(ks))],
               *[xs[2 + i] * spec.strides[i] for i in range(len(ks))])
    view = xp.lib.stride_tricks.as_strided(x, shape, tuple(s * item for s in strides))
    kk = int(cg * math.prod(int(v) for v in ks))
    cols = view.reshape(n, g, kk, int(math.prod(int(v) for v in out_sp)))
    wm = w.reshape(g, k // g, kk)
    acc = "float32" if x.dtype.name == "float16" else x.dtype.name
    from .gemm import make_matmul
    mm, _direct = make_matmul(xp, xp.__name__ == "cupy")
    out = mm(xp.ascontiguousarray(wm.astype(acc, copy=False)), xp.ascontiguousarray(cols.astype(acc, copy=False)))
    return out.reshape(n, k, *out_sp).astype(x.dtype, copy=False)
