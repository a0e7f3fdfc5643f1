"""Convolution GEMMs with their epilogue fused: cuBLASLt (ctypes) adds the bias, the residual and
ReLU as it writes the product, where ``gemm`` + ``gemm_conv.epilogue`` wrote the product and then
read it back (on the H200 VGG-16 at batch 1 ran 12 such epilogue kernels per image).

``fused_matmul(a, b, ...)`` computes row-major ``relu(a @ b + bias + residual)`` for a packed or
transposed 2-D ``a`` (M, K) and ``b`` (K, N), bias (N,), residual (M, N) packed, into a new
(M, N) fp32 array, or returns None where it does not apply (the caller runs the unfused path).
As in ``gemm``, row-major C = A B is computed as column-major C^T = B^T A^T, so the bias runs
along the rows of cuBLASLt's D (its documented bias direction) and the residual is its C with
beta = 1. One descriptor set and algorithm (the heuristic's first) is kept per shape.
cuBLASLt calls capture into CUDA graphs with a fixed workspace, like the cuBLAS calls in ``gemm``.
"""
from __future__ import annotations

import ctypes
import functools

from .. import libraries
from .gemm import COMPUTE_32F, COMPUTE_32F_PEDANTIC, CUDA_R_16BF, CUDA_R_32F, OP_N, available, plan

# cublasLt.h enumerations
DESC_TRANSA, DESC_TRANSB, DESC_EPILOGUE, DESC_BIAS_POINTER = 3, 4, 7, 8
EPILOGUE_DEFAULT, EPILOGUE_RELU, EPILOGUE_BIAS = 1, 2, 4
PREF_MAX_WORKSPACE_BYTES = 1
WORKSPACE_BYTES = 32 << 20
ALIGN = 256                     # what the heuristic assumes of every pointer by default


class _HeuristicResult(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspace_size", ctypes.c_size_t), ("state", ctypes.c_int),
                ("waves_count", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


class _State:
    handle = None
    workspace = None
    plans: dict = {}


@functools.lru_cache(maxsize=1)
def lt_library():
    """cuBLASLt, loaded once, or None where it (or cuBLAS) is not available."""
    if not available():
        return None
    return libraries.load("cublaslt")


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed with cuBLAS status {status}")


def _handle():
    import cupy
    lib = lt_library()
    if _State.handle is None:
        h = ctypes.c_void_p()
        _check(lib.cublasLtCreate(ctypes.byref(h)), "cublasLtCreate")
        _State.handle = h
        _State.workspace = cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
    return _State.handle


def _layout(dtype: int, rows: int, cols: int, ld: int):
    lay = ctypes.c_void_p()
    _check(lt_library().cublasLtMatrixLayoutCreate(ctypes.byref(lay), ctypes.c_int(dtype), ctypes.c_uint64(rows),
                                            ctypes.c_uint64(cols), ctypes.c_int64(ld)), "cublasLtMatrixLayoutCreate")
    return lay


def _set(desc, attr: int, value) -> None:
    _check(lt_library().cublasLtMatmulDescSetAttribute(desc, ctypes.c_int(attr), ctypes.byref(value),
                                                ctypes.c_size_t(ctypes.sizeof(value))),
           "cublasLtMatmulDescSetAttribute")


class _Plan:
    """Descriptors and the chosen algorithm of one (shape, types, epilogue)."""

    def __init__(self, p, in_type: int, compute: int, epilogue: int, out_type: int = CUDA_R_32F):
        lib = lt_library()
        self.desc = ctypes.c_void_p()
        _check(lib.cublasLtMatmulDescCreate(ctypes.byref(self.desc), ctypes.c_int(compute), ctypes.c_int(CUDA_R_32F)),
               "cublasLtMatmulDescCreate")
        _set(self.desc, DESC_TRANSA, ctypes.c_int32(p.op_b))
        _set(self.desc, DESC_TRANSB, ctypes.c_int32(p.op_a))
        _set(self.desc, DESC_EPILOGUE, ctypes.c_uint32(epilogue))
        # column-major: A = b^T (N x K), B = a^T (K x M), D = out^T (N x M)
        self.a = _layout(in_type, *((p.n, p.k) if p.op_b == OP_N else (p.k, p.n)), p.ldb)
        self.b = _layout(in_type, *((p.k, p.m) if p.op_a == OP_N else (p.m, p.k)), p.lda)
        self.d = _layout(out_type, p.n, p.m, p.n)
        pref = ctypes.c_void_p()
        _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "cublasLtMatmulPreferenceCreate")
        ws = ctypes.c_uint64(WORKSPACE_BYTES)
        _check(lib.cublasLtMatmulPreferenceSetAttribute(pref, ctypes.c_int(PREF_MAX_WORKSPACE_BYTES), ctypes.byref(ws),
                                                        ctypes.c_size_t(ctypes.sizeof(ws))),
               "cublasLtMatmulPreferenceSetAttribute")
        result, found = _HeuristicResult(), ctypes.c_int(0)
        status = lib.cublasLtMatmulAlgoGetHeuristic(_handle(), self.desc, self.a, self.b, self.d, self.d, pref,
                                                    ctypes.c_int(1), ctypes.byref(result), ctypes.byref(found))
        lib.cublasLtMatmulPreferenceDestroy(pref)
        _check(status, "cublasLtMatmulAlgoGetHeuristic")
        if found.value < 1 or result.state != 0:
            raise RuntimeError("cuBLASLt has no algorithm for this product and epilogue")
        self.algo = result.algo


def plan_for(p, in_type: int, compute: int, epilogue: int, out_type: int = CUDA_R_32F):
    key = (p, in_type, compute, epilogue, out_type)
    if key not in _State.plans:
        try:
            _State.plans[key] = _Plan(p, in_type, compute, epilogue, out_type)
        except RuntimeError:
            _State.plans[key] = None      # remembered: the unfused path from now on
    return _State.plans[key]


def fused_matmul(a, b, bias=None, residual=None, relu: bool = False, split: bool = False):
    """``relu(a @ b + bias + residual)`` in fp32 (see the module text); ``split`` takes uint16
    split-bf16 operands (``matmul_split_bf16``'s), else fp32 ones in exact fp32 arithmetic. None
    where cuBLASLt is unavailable or the operands do not fit the call."""
    import cupy
    if lt_library() is None or a.ndim != 2 or b.ndim != 2:
        return None
    p = plan(a, b)          # 2-D operands: one product, no batch
    if p is None:
        return None
    m, n = p.m, p.n
    in_dtype = cupy.uint16 if split else cupy.float32
    if a.dtype != in_dtype or b.dtype != in_dtype:
        return None
    if bias is not None and (bias.dtype != cupy.float32 or bias.size != n or not bias.flags.c_contiguous):
        return None
    if residual is not None and (residual.dtype != cupy.float32 or residual.size != m * n
                                 or not residual.flags.c_contiguous):
        return None
    if any(x is not None and x.data.ptr % ALIGN for x in (a, b, bias, residual)):
        return None
    epilogue = (EPILOGUE_BIAS if bias is not None else 0) | (EPILOGUE_RELU if relu else 0) or EPILOGUE_DEFAULT
    chosen = plan_for(p, CUDA_R_16BF if split else CUDA_R_32F, COMPUTE_32F if split else COMPUTE_32F_PEDANTIC,
                       epilogue)
    if chosen is None:
        return None
    return launch(chosen, a, b, bias, residual, cupy.empty((m, n), dtype=cupy.float32))


def launch(chosen, a, b, bias, residual, out):
    """One ``cublasLtMatmul`` of a ``plan_for`` plan into ``out``: row-major a @ b, the bias
    through the epilogue, the residual as C with beta = 1."""
    import cupy
    if bias is not None:
        _set(chosen.desc, DESC_BIAS_POINTER, ctypes.c_void_p(bias.data.ptr))
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(1.0 if residual is not None else 0.0)
    c = residual if residual is not None else out
    lib = lt_library()
    _check(lib.cublasLtMatmul(
        _handle(), chosen.desc, ctypes.byref(alpha), ctypes.c_void_p(b.data.ptr), chosen.a,
        ctypes.c_void_p(a.data.ptr), chosen.b, ctypes.byref(beta), ctypes.c_void_p(c.data.ptr), chosen.d,
        ctypes.c_void_p(out.data.ptr), chosen.d, ctypes.byref(chosen.algo), ctypes.c_void_p(_State.workspace.data.ptr),
        ctypes.c_size_t(WORKSPACE_BYTES), ctypes.c_void_p(cupy.cuda.get_current_stream().ptr)), "cublasLtMatmul")
    return out
