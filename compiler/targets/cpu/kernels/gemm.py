"""Gemm with a literal B: B scaled by alpha once at lowering (transB is a transposed view), C
scaled by beta once; a run is one matrix product into a kept buffer and one add."""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL

from ..threads import matmul_into
from .common import output_buffer, plain_static


def gemm_kernel(ins):
    a = ins.attrs
    if not plain_static(ins) or len(ins.inputs) < 2 or ins.inputs[1].op != LITERAL:
        return None
    dtype = np.dtype(ins.shape.dtype)
    if any(i.shape.dtype != dtype.name for i in ins.inputs):
        return None
    b = ins.inputs[1].value
    if a["alpha"] != 1.0:
        b = (b.astype(np.float64) * a["alpha"]).astype(dtype)
    # a transposed view: BLAS reads it as it is (no copy of a large classifier's weights)
    b = b.T if a["transB"] else b
    c = None
    if len(ins.inputs) > 2:
        if ins.inputs[2].op != LITERAL:
            return None
        c = (ins.inputs[2].value.astype(np.float64) * a["beta"]).astype(dtype)
    trans_a = a["transA"]
    m, n = ins.shape.lens
    macs = m * n * b.shape[0]
    buffer = output_buffer((m, n), dtype)

    def run(x, *_):
        y = matmul_into(x.T if trans_a else x, b, buffer(), macs)
        if c is not None:
            y += c
        return y
    return run
