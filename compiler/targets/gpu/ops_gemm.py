"""Lowerings of MatMul, Gemm and two-operand Einsum: direct cuBLAS (split-bf16 for large fp32
products, ``matmul_split``), else the array module's product."""
from __future__ import annotations

import math

from compiler.targets.einsum_plan import plan_einsum

from .lowering import literal_of, lowers


def matmul_for(L, ins=None):
    """The product for a MatMul/Gemm: split-bf16 for large fp32 ones on the GPU (the weight's
    split made once when it is a literal), else direct cuBLAS, else the array module's."""
    from .kernels.gemm import make_matmul
    mm, direct = make_matmul(L.xp, L.backend.on_gpu)
    from . import matmul_split
    if ins is not None and direct and matmul_split.enabled(True, ins.shape.dtype, L.options):
        return matmul_split.split_matmul(mm, literal_of(ins, 1) is not None), True
    return mm, direct


@lowers("MatMul")
def _matmul(ins, L):
    xp = L.xp
    a, b = ins.inputs[0].shape, ins.inputs[1].shape
    if a.ndim == 1 or b.ndim == 1:
        fn = lambda x, y: xp.matmul(x, y)  # noqa: E731 - vector forms: CuPy's path
        fn.capturable = False
        return fn
    mm, direct = matmul_for(L, ins)
    padded = _padded_weight(ins, L) if direct else None
    if padded is not None:
        n = b.lens[1]

        def fn(x, _y):
            return mm(x, padded)[..., :n]     # a view: its reader (often the output's copy) reads it strided
    else:
        fn = lambda x, y: mm(x, y)  # noqa: E731
    fn.capturable = direct
    return fn


HALF_ROW = 8    # fp16/bf16 elements in the 16 bytes tensor-core GEMMs load at once


def _padded_weight(ins, L):
    """A literal fp16/bf16 (K, N) weight whose rows are not a whole number of 16-byte loads,
    zero-padded on the device to the next such width (None otherwise). cuBLAS takes unaligned
    kernels for such a weight: GPT-2's tied 50,257-word head ran at about 130 TFLOP/s. The
    product is then made N-padded and handed on as the view of its first N columns."""
    w = literal_of(ins, 1)
    if w is None or w.ndim != 2 or w.dtype.name not in ("float16", "bfloat16") or w.shape[1] % HALF_ROW == 0 \
            or w.shape[1] < 256:
        return None
    xp = L.xp
    k, n = w.shape
    padded = xp.zeros((k, -(-n // HALF_ROW) * HALF_ROW), dtype=w.dtype)
    padded[:, :n] = xp.asarray(w)
    return padded


@lowers("Gemm")
def _gemm(ins, L):
    alpha = float(ins.attrs.get("alpha", 1.0))
    beta = float(ins.attrs.get("beta", 1.0))
    ta = int(ins.attrs.get("transA", 0))
    tb = int(ins.attrs.get("transB", 0))
    dtype = ins.shape.dtype
    mm, direct = matmul_for(L, ins)

    def gemm(a, b, c=None):
        if ta:
            a = a.T
        if tb:
            b = b.T
        y = mm(a, b)
        if alpha != 1.0:
            y *= alpha
        if c is not None and beta != 0:
            y += c if beta == 1.0 else beta * c
        return y.astype(dtype, copy=False)
    gemm.capturable = direct
    return gemm


@lowers("Einsum")
def _einsum(ins, L):
    xp = L.xp
    eq = ins.attrs["equation"]
    plan = plan_einsum(eq) if len(ins.inputs) == 2 else None
    if plan is None:
        dtype = ins.shape.dtype

        def fn(*xs):
            # NumPy's einsum takes no bfloat16 (ml_dtypes, the emulated target): widen, as the
            # reference does, and round the result back
            wide = [x.astype("float32") if x.dtype.name == "bfloat16" else x for x in xs]
            return xp.einsum(eq, *wide).astype(dtype, copy=False)
        fn.capturable = False
        return fn
    perm_a, perm_b, perm_out = plan.perm_a, plan.perm_b, plan.perm_out
    nb, na, nc = len(plan.batch), len(plan.free_a), len(plan.contract)
    mm, direct = matmul_for(L)
    dtype = ins.shape.dtype

    def einsum(x, y):
        xa = x.transpose(perm_a)
        yb = y.transpose(perm_b)
        bshape = xa.shape[:nb]
        ashape = xa.shape[nb:nb + na]
        cshape = xa.shape[nb + na:]
        bfshape = yb.shape[nb + nc:]
        m, k, n = math.prod(ashape), math.prod(cshape), math.prod(bfshape)
        xa = xp.ascontiguousarray(xa).reshape(bshape + (m, k))
        yb = xp.ascontiguousarray(yb).reshape(bshape + (k, n))
        r = mm(xa, yb).reshape(bshape + ashape + bfshape)
        return r.transpose(perm_out).astype(dtype, copy=False)
    einsum.capturable = direct
    return einsum
