"""fp16/bf16 linear layers as one cuBLASLt call: ``gelu(a @ w + bias)`` or ``a @ w + bias +
residual`` written once in the operands' type (fp32 accumulation), where the unfused program
wrote the product, read it back for the bias add and again for each GELU step.

cuBLASLt's GELU epilogue is the tanh approximation; an erf-form GELU taken here differs from the
exact one by at most about 5e-4 absolute, under fp16's rounding of the values where it peaks. Plans
are ``gemm_lt``'s (one per shape, type and epilogue, kept by it); calls capture into CUDA graphs.

H200, torchvision ViT-B/16 fp16 batch 32 (eager kernel profile): its 36 linear layers with a bias
(12 with GELU) ran as 1.42 ms of plain GEMMs plus about 1.47 ms of bias/GELU kernels; as these
calls they take 1.61 ms (0.64 ms with GELU, 0.97 ms with bias or bias + residual).
"""
from __future__ import annotations

import numpy as np

from . import gemm_lt
from .gemm import COMPUTE_32F, CUDA_R_16BF, CUDA_R_16F, plan

EPILOGUE_GELU = 32
_TYPES = {"float16": CUDA_R_16F, "bfloat16": CUDA_R_16BF}


def supported(dtype: str) -> bool:
    return dtype in _TYPES and gemm_lt.lt_library() is not None


def _epilogue(gelu: bool) -> int:
    return gemm_lt.EPILOGUE_BIAS | (EPILOGUE_GELU if gelu else 0)


def plan_of(m: int, k: int, n: int, dtype: str, gelu: bool):
    """The cuBLASLt plan of packed (m, k) @ (k, n) with this epilogue, or None where cuBLASLt has
    none (then the caller runs the unfused steps). Built from shapes alone, at lowering time."""
    item = np.dtype(np.float16).itemsize
    a = np.lib.stride_tricks.as_strided(np.empty(1, np.float16), (m, k), (k * item, item))
    b = np.lib.stride_tricks.as_strided(np.empty(1, np.float16), (k, n), (n * item, item))
    p = plan(a, b)
    if p is None:
        return None
    return gemm_lt.plan_for(p, _TYPES[dtype], COMPUTE_32F, _epilogue(gelu), _TYPES[dtype])


def linear(chosen, a, w, bias, residual=None):
    """``chosen`` (``plan_of``) run over packed ``a`` (M, K), ``w`` (K, N), ``bias`` (N,) and an
    optional packed ``residual`` (M, N); a new (M, N) array. Operands must be 256-byte aligned
    (fresh CuPy arrays are); returns None otherwise."""
    import cupy
    if any(x is not None and x.data.ptr % gemm_lt.ALIGN for x in (a, w, bias, residual)):
        return None
    out = cupy.empty((a.shape[0], w.shape[1]), dtype=a.dtype)
    return gemm_lt.launch(chosen, a, w, bias, residual, out)
