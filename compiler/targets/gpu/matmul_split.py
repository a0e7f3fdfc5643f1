"""fp32 MatMul/Gemm products as split-bf16 GEMMs (``kernels/split_bf16``) where they are large
enough to gain from tensor cores; small or thin products (a batch-1 fully connected layer is a
matrix-vector product bound by reading the weights, which the split makes 1.5x larger) keep the
exact fp32 GEMM."""
from __future__ import annotations

from .kernels import split_bf16
from .kernels.gemm import available, matmul_split_bf16

# The split pays one pass over each operand; below these the exact GEMM is at least as fast.
MIN_ROWS, MIN_K, MIN_N = 64, 64, 64


def enabled(on_gpu: bool, dtype: str, options) -> bool:
    """Whether fp32 products may split (``GpuOptions.fp32_split``) and cuBLAS is there to run them."""
    return on_gpu and dtype == "float32" and options.fp32_split and available()


def worth(a, b) -> bool:
    rows = 1
    for n in a.shape[:-1]:
        rows *= int(n)
    return rows >= MIN_ROWS and a.shape[-1] >= MIN_K and b.shape[-1] >= MIN_N


def split_matmul(exact, constant_right: bool):
    """``mm(a, b)``: the split-bf16 product of fp32 ``a`` (..., M, K) and ``b`` (..., K, N), or
    ``exact(a, b)`` where the split does not apply. ``constant_right``: ``b`` is a weight (the same
    array every run), so its split is made once."""
    weights: dict = {}

    def right_of(b):
        if not constant_right:
            return split_bf16.along_rows(b)
        # A Gemm's transB weight arrives as a fresh view each run: key by the array that owns
        # the memory and the view's geometry. The entry keeps both alive, so the id is not reused.
        owner = b
        while getattr(owner, "base", None) is not None:
            owner = owner.base
        key = (id(owner), b.shape, b.strides)
        if key not in weights:
            weights.clear()
            weights[key] = (owner, split_bf16.along_rows(b))
        return weights[key][1]

    def mm(a, b):
        if a.dtype.name != "float32" or b.dtype.name != "float32" or a.ndim < 2 or b.ndim < 2 \
                or not worth(a, b):
            return exact(a, b)
        b3 = right_of(b)
        a3 = split_bf16.along_last(a, split_bf16.LO_LEFT)
        if b3.ndim == 2 and a3.ndim > 2:
            # (..., M, 3K) @ (3K, N): one GEMM over all rows.
            out = matmul_split_bf16(a3.reshape(-1, a3.shape[-1]), b3)
            out = None if out is None else out.reshape(*a3.shape[:-1], b3.shape[-1])
        else:
            out = matmul_split_bf16(a3, b3)
        return exact(a, b) if out is None else out
    return mm
