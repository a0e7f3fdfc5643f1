"""MatMul of a stacked activation by a 2-D weight as ONE matrix product: (…, K) is viewed as
(rows, K), so BLAS sees a single large GEMM instead of NumPy's loop of one GEMM per batch, split over the
cpu target's threads."""
from __future__ import annotations

import numpy as np

from ..threads import matmul_into
from .common import plain_static


def matmul_kernel(ins):
    if len(ins.inputs) != 2 or not plain_static(ins):
        return None
    a, b = (i.shape for i in ins.inputs)
    if b.ndim != 2 or a.ndim < 3 or a.dtype != b.dtype:
        return None
    k, n = b.lens
    out = tuple(ins.shape.lens)
    rows = int(np.prod(out[:-1]))
    dtype = np.dtype(ins.shape.dtype)

    def run(x, w):
        y = np.empty((rows, n), dtype=dtype)
        return matmul_into(x.reshape(rows, k), w, y, rows * k * n).reshape(out)
    return run
