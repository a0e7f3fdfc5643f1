"""Matrix products through cuBLAS called directly (ctypes), so they can be captured in CUDA graphs.

CuPy refuses every cuBLAS call while a stream is being captured; cuBLAS itself supports capture
once it has a fixed workspace. This module calls ``cublasGemmStridedBatchedEx`` on CuPy's cuBLAS
handle with CuPy arrays' pointers, on the current stream. fp32 products keep fp32 arithmetic
(``CUBLAS_COMPUTE_32F_PEDANTIC``: no TF32), fp16 products accumulate in fp32.

``matmul(a, b)`` handles row-major ``(..., M, K) @ (..., K, N)`` where the batch dimensions of
one side are all 1 (or absent) or equal to the other's; anything else returns None and the caller
uses ``cupy.matmul``.
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import numpy as np

from .. import libraries

OP_N, OP_T = 0, 1
CUDA_R_32F, CUDA_R_16F, CUDA_R_64F, CUDA_R_16BF = 0, 2, 1, 14
COMPUTE_32F, COMPUTE_32F_PEDANTIC, COMPUTE_64F = 68, 69, 70
GEMM_DEFAULT = -1
WORKSPACE_BYTES = 32 << 20

_TYPES = {"float32": CUDA_R_32F, "float16": CUDA_R_16F, "float64": CUDA_R_64F}


class _State:
    lib = None
    workspace = None
    handles: set = set()


@functools.lru_cache(maxsize=1)
def _library():
    import cupy  # noqa: F401 - loads CuPy's libcublas first, so dlopen finds the same copy
    from cupy_backends.cuda.libs import cublas  # noqa: F401
    lib = libraries.load("cublas")
    if lib is not None:
        lib.cublasGemmStridedBatchedEx.restype = ctypes.c_int
    return lib


def available() -> bool:
    try:
        return _library() is not None
    except Exception:  # noqa: BLE001
        return False


def _handle():
    import cupy
    lib = _library()
    handle = cupy.cuda.device.get_cublas_handle()
    if handle not in _State.handles:
        if _State.workspace is None:
            _State.workspace = cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
        status = lib.cublasSetWorkspace_v2(ctypes.c_void_p(handle),
                                           ctypes.c_void_p(_State.workspace.data.ptr),
                                           ctypes.c_size_t(WORKSPACE_BYTES))
        if status != 0:
            raise RuntimeError(f"cublasSetWorkspace failed ({status})")
        _State.handles.add(handle)
    stream = cupy.cuda.get_current_stream().ptr
    lib.cublasSetStream_v2(ctypes.c_void_p(handle), ctypes.c_void_p(stream))
    return handle


def _operand(x):
    """(transpose flag for cuBLAS, leading dimension) of a row-major matrix batch ``x``, or
    None if its last two axes are not a plain or transposed packed layout."""
    item = x.itemsize
    s1, s2 = x.strides[-2] // item, x.strides[-1] // item
    rows, cols = x.shape[-2], x.shape[-1]
    # The stride of a length-1 axis is never stepped over (a broadcast row has stride 0), so a
    # single row or column is packed whatever that stride says.
    if s2 == 1 or cols == 1:
        if rows == 1:
            return OP_N, max(cols, 1)
        if s1 == cols:
            return OP_N, max(s1, 1)
    if s1 == 1 or rows == 1:
        if cols == 1:
            return OP_T, max(rows, 1)
        if s2 == rows:
            return OP_T, max(s2, 1)
    return None


def _batch_stride(x, batch_shape):
    """Element stride between consecutive matrices of ``x`` over ``batch_shape`` (0 when
    broadcast), or None when its batch axes are not one evenly strided run. Axes of length 1 are
    never stepped over, so their strides (arbitrary after a transpose or an expand) do not count."""
    nb = x.ndim - 2
    if nb == 0 or all(n == 1 for n in x.shape[:nb]):
        return 0
    if tuple(x.shape[:nb]) != tuple(batch_shape):
        return None
    item = x.itemsize
    axes = [(int(x.shape[i]), x.strides[i] // item) for i in range(nb) if x.shape[i] != 1]
    step = axes[-1][1]
    if step < 0:
        return None
    expect = step
    for size, stride in reversed(axes):
        if stride != expect:
            return None
        expect = stride * size
    return step


@dataclass(frozen=True)
class GemmPlan:
    """One ``cublasGemmStridedBatchedEx`` call for row-major ``a @ b``: operand flags and leading
    dimensions, batch strides (elements), sizes."""
    op_a: int
    lda: int
    op_b: int
    ldb: int
    stride_a: int
    stride_b: int
    m: int
    n: int
    k: int
    batch: tuple
    count: int


def plan(a, b) -> GemmPlan | None:
    """The cuBLAS call computing ``a @ b`` from the operands' memory as it is, or None when their
    layout needs a copy first. Reads only shapes and strides (NumPy arrays plan the same)."""
    if a.ndim < 2 or b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        return None
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    batch = tuple(int(x) for x in np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    count = 1
    for x in batch:
        count *= x
    oa, ob = _operand(a), _operand(b)
    sa, sb = _batch_stride(a, batch), _batch_stride(b, batch)
    if None in (oa, ob, sa, sb) or max(m, n, k, count) >= 2 ** 31 or min(m, n, k) == 0:
        return None
    return GemmPlan(oa[0], oa[1], ob[0], ob[1], sa, sb, int(m), int(n), int(k), batch, count)


def matmul(a, b, out=None, accumulate: bool = False):
    """``a @ b`` through cuBLAS on the current stream, or None when the layout is not handled.
    With ``accumulate`` the product is added to ``out`` (a packed array of the result's shape)."""
    import cupy
    lib = _library()
    if lib is None or a.dtype != b.dtype or a.dtype.name not in _TYPES or a.ndim < 2 or b.ndim < 2:
        return None
    if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous and out is None and b.shape[0] == a.shape[-1]:
        # (..., M, K) @ (K, N) with a packed: one GEMM with M * batch rows.
        lead = a.shape[:-1]
        out = matmul(a.reshape(-1, a.shape[-1]), b)
        return None if out is None else out.reshape(*lead, b.shape[-1])
    p = plan(a, b)
    if p is None:
        return None
    m, n, batch = p.m, p.n, p.batch
    if out is None:
        if accumulate:
            raise ValueError("accumulate needs out")
        out = cupy.empty(batch + (m, n), dtype=a.dtype)
    elif tuple(out.shape) != batch + (m, n) or not out.flags.c_contiguous or out.dtype != a.dtype:
        return None
    dtype = a.dtype.name
    compute = {"float32": COMPUTE_32F_PEDANTIC, "float16": COMPUTE_32F, "float64": COMPUTE_64F}[dtype]
    _call(p, a, b, out, _TYPES[dtype], _TYPES[dtype], compute, accumulate)
    return out


def _call(p: GemmPlan, a, b, out, in_type: int, out_type: int, compute: int, accumulate: bool):
    lib = _library()
    ctype = ctypes.c_double if compute == COMPUTE_64F else ctypes.c_float
    alpha, beta = ctype(1.0), ctype(1.0 if accumulate else 0.0)
    handle = _handle()
    # Row-major C = A B is column-major C^T = B^T A^T: cuBLAS sees (N x M) = (N x K)(K x M).
    status = lib.cublasGemmStridedBatchedEx(
        ctypes.c_void_p(handle), ctypes.c_int(p.op_b), ctypes.c_int(p.op_a),
        ctypes.c_int(p.n), ctypes.c_int(p.m), ctypes.c_int(p.k), ctypes.byref(alpha),
        ctypes.c_void_p(b.data.ptr), ctypes.c_int(in_type), ctypes.c_int(p.ldb), ctypes.c_longlong(p.stride_b),
        ctypes.c_void_p(a.data.ptr), ctypes.c_int(in_type), ctypes.c_int(p.lda), ctypes.c_longlong(p.stride_a),
        ctypes.byref(beta), ctypes.c_void_p(out.data.ptr), ctypes.c_int(out_type), ctypes.c_int(p.n),
        ctypes.c_longlong(p.m * p.n), ctypes.c_int(p.count), ctypes.c_int(compute), ctypes.c_int(GEMM_DEFAULT))
    if status != 0:
        raise RuntimeError(f"cublasGemmStridedBatchedEx failed with status {status}")


def matmul_split_bf16(a_bits, b_bits, out=None, accumulate: bool = False):
    """fp32 ``a @ b`` from split-bf16 operands (``split_bf16.along_last(a, LO_LEFT)``,
    ``split_bf16.along_rows(b)``: uint16 bit patterns): one bf16 tensor-core GEMM accumulating in fp32, fp32 out. None when the
    direct path is unavailable or the layout is not handled."""
    import cupy
    if _library() is None or a_bits.dtype != np.uint16 or b_bits.dtype != np.uint16:
        return None
    p = plan(a_bits, b_bits)
    if p is None:
        return None
    shape = p.batch + (p.m, p.n)
    if out is None:
        if accumulate:
            raise ValueError("accumulate needs out")
        out = cupy.empty(shape, dtype=cupy.float32)
    elif tuple(out.shape) != shape or not out.flags.c_contiguous or out.dtype != np.float32:
        return None
    _call(p, a_bits, b_bits, out, CUDA_R_16BF, CUDA_R_32F, COMPUTE_32F, accumulate)
    return out


def array_matmul(xp, a, b):
    """The array module's ``a @ b`` in the operands' dtype, as MatMul defines it: NumPy returns a
    product of bfloat16 (ml_dtypes) operands in float32 (the emulated gpu target runs on NumPy)."""
    out = xp.matmul(a, b)
    return out if out.dtype == a.dtype else out.astype(a.dtype)


def make_matmul(xp, on_gpu: bool):
    """A ``matmul(a, b)`` for lowerings: direct cuBLAS where it applies, else the array module's."""
    if not on_gpu or not available():
        return (lambda a, b: array_matmul(xp, a, b)), False

    def mm(a, b):
        out = matmul(a, b)
        if out is None:
            # Unhandled layout or broadcast: materialise plain operands (copy kernels, which
            # CUDA graphs capture) and take the direct path again.
            batch = tuple(int(x) for x in np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
            a2 = xp.ascontiguousarray(xp.broadcast_to(a, batch + a.shape[-2:])) if a.ndim > 2 or batch else a
            b2 = xp.ascontiguousarray(xp.broadcast_to(b, batch + b.shape[-2:])) if b.ndim > 2 else b
            # copy(), not ascontiguousarray(): CuPy counts a length-1 axis of any stride as
            # contiguous and would hand back the same (e.g. broadcast, stride-0) view.
            out = matmul(a2.copy(), b2.copy())
        return xp.matmul(a, b) if out is None else out
    return mm, True
