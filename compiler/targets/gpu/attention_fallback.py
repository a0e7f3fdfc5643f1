"""Attention where cuDNN's fused engines do not run it (fp32, which must stay exact; head sizes
they refuse; a process without the cuDNN frontend): Q.K^T and P.V as batched cuBLAS products
that read K transposed through its strides, and between them one kernel for scale, mask, causal
drop and softmax (``kernels.attention_softmax``), in place on the scores. fp32 products run
without TF32 and the softmax in fp32, so fp32 attention stays within fp32 rounding of the
reference; fp16 products accumulate in fp32. Every step can be captured into a CUDA graph.

The decomposed form it replaces took, per attention, a transpose copy of K, two CuPy products,
fp16 <-> fp32 casts and a softmax of about five kernels.
"""
from __future__ import annotations

from .kernels import attention_softmax as softmax_kernel

DTYPES = ("float32", "float16")


def takes(dtype: str, mask_dtype: str | None) -> bool:
    """Whether this path runs an attention of this type (and mask type, None for no mask)."""
    return dtype in DTYPES and softmax_kernel.supported(dtype, mask_dtype)


def runner(xp, scale: float, causal: bool = False):
    """``run(q, k, v, mask=None)`` over (batch, heads, seq, head) device arrays of any strides,
    with ``run.capturable`` saying whether CUDA graphs may record it."""
    from .kernels.gemm import make_matmul
    mm, direct = make_matmul(xp, True)

    def run(q, k, v, mask=None):
        scores = mm(q, k.swapaxes(-1, -2))
        return mm(softmax_kernel.attention_softmax(scores, scale, mask, causal), v)
    run.capturable = direct
    run.path = "strided-softmax"
    return run
