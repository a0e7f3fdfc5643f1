"""MatMul into a kept buffer. A stacked activation times a 2-D weight is ONE matrix product:
(…, K) is viewed as (rows, K), so BLAS sees a single large GEMM instead of NumPy's loop of one
GEMM per batch, split over the cpu target's threads. Other operands (2-D × 2-D, batched
attention products) go to ``np.matmul`` as they are."""
from __future__ import annotations

import numpy as np

from ..threads import matmul_into
from .common import output_buffer, plain_static


def matmul_kernel(ins):
    if len(ins.inputs) != 2 or not plain_static(ins):
        return None
    a, b = (i.shape for i in ins.inputs)
    if a.dtype != b.dtype or a.ndim < 2 or b.ndim < 2:
        return None
    out = tuple(ins.shape.lens)
    buffer = output_buffer(out, ins.shape.dtype)
    if b.ndim != 2 or a.ndim < 3:
        macs = int(np.prod(out, dtype=np.int64)) * a.lens[-1]
        return lambda x, w: matmul_into(x, w, buffer(), macs)
    k, n = b.lens
    rows = int(np.prod(out[:-1]))

    def run(x, w):
        y = buffer().reshape(rows, n)
        return matmul_into(x.reshape(rows, k), w, y, rows * k * n).reshape(out)
    return run
