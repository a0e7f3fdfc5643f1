"""Attention where cuDNN's fused engines do not run it (fp32, which must stay exact; head sizes
they refuse; a process without the cuDNN frontend): Q.K^T and P.V as batched cuBLAS products
that read K transposed through its strides, and between them one kernel for scale, mask, causal
drop and softmax (``kernels.attention_softmax``), in place on the scores. fp32 products are
split-bf16 products where the target splits its other large fp32 products (``matmul_split``,
``GpuOptions.fp32_split``), else exact fp32 GEMMs without TF32; the softmax runs in fp32, fp16
products accumulate in fp32. Every step can be captured into a CUDA graph.

With exact products this path lost to the unfused form on fp32 BERT-base (H200, an A/B of the
two: the unfused MatMuls, which split, ran 3.2 % faster): the two products are most of an
attention's time at sequence 128, and an exact fp32 GEMM runs at a fraction of the split's speed.

The decomposed form it replaces took, per attention, a transpose copy of K, two CuPy products,
fp16 <-> fp32 casts and a softmax of about five kernels.
"""
from __future__ import annotations

from .kernels import attention_softmax as softmax_kernel

DTYPES = ("float32", "float16")


def takes(dtype: str, mask_dtype: str | None) -> bool:
    """Whether this path runs an attention of this type (and mask type, None for no mask)."""
    return dtype in DTYPES and softmax_kernel.supported(dtype, mask_dtype)


def runner(xp, scale: float, causal: bool = False, split: bool = False):
    """``run(q, k, v, mask=None)`` over (batch, heads, seq, head) device arrays of any strides,
    with ``run.capturable`` saying whether CUDA graphs may record it. ``split``: fp32 products
    as split-bf16 products (``matmul_split.enabled``)."""
    from .kernels.gemm import make_matmul
    mm, direct = make_matmul(xp, True)
    if split:
        from .matmul_split import split_matmul
        mm = split_matmul(mm, constant_right=False)

    def run(q, k, v, mask=None):
        scores = mm(q, k.swapaxes(-1, -2))
        return mm(softmax_kernel.attention_softmax(scores, scale, mask, causal), v)
    run.capturable = direct
    run.path = "strided-softmax"
    return run
