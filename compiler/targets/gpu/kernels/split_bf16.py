"""Split-bf16 operands: fp32 products on bf16 tensor cores with near-fp32 accuracy.

Every fp32 value v is written as hi + lo, hi = bf16(v) and lo = bf16(v - hi) (round to nearest
even), which holds v to about 2^-17 relative. Then

    a . b  ~  a_hi . b_hi  +  a_hi . b_lo  +  a_lo . b_hi

(the dropped a_lo . b_lo is below 2^-16 of each product), and the three products are one GEMM
over a reduction three times as long: the left operand's rows are laid out [hi | hi | lo], the
right operand's columns [hi ; lo ; hi]. bf16 x bf16 products are exact in fp32 and cuBLAS
accumulates in fp32, so the result is within ~1e-5 relative of fp32 arithmetic (TF32, PyTorch's
default for convolutions, is within ~1e-3), while the GEMM runs on tensor cores: ~800 TFLOP/s of
bf16 against ~51 TFLOP/s of exact fp32 on an H200.

A split row holds the three parts back to back, then zeros up to a multiple of 8 elements (zeros
on both sides of a product add nothing), so rows start 16-byte aligned as tensor-core GEMMs and
cuDNN want. Values travel as uint16 bit patterns
(CuPy has no bfloat16 type); cuBLAS reads them as CUDA_R_16BF.
"""
from __future__ import annotations

import threading

import numpy as np

from .raw_source import cuda_source
from .row_grid import row_grid

ALIGN = 8
# Rows whose three parts fit in 32 values go through the row-per-thread kernel.
NARROW = 32
# Which of the three parts holds lo: the left operand is [hi | hi | lo], the right [hi ; lo ; hi].
LO_LEFT, LO_RIGHT = 2, 1

# bf16 rounding and the three-part stores, shared with generated kernels (``pointwise_split``).
DEVICE_HELPERS = cuda_source("split_bf16_helpers")

# One thread per source value: it reads the value once, splits it and writes it to its three
# places (part p of a row at p * K); the row's tail up to the aligned width is zeroed. Rows are
# spread over blockIdx.x and threadIdx.y, a row's values over threadIdx.x, so neighbouring
# threads write neighbouring bytes. Index math is 32-bit within a row: with 64-bit division per
# element the split ran ResNet-50 at half the exact path's rate on an H200.
_SOURCE = DEVICE_HELPERS + cuda_source("split_bf16")


def width(k: int) -> int:
    """Row width of a split operand with reduction length ``k``: the three parts, then zeros up
    to a multiple of 8 elements (16 bytes, as tensor-core GEMMs and cuDNN want rows aligned)."""
    return -(-3 * int(k) // ALIGN) * ALIGN


_compiled: list = []                # the module, once compiled
_compiling = threading.Lock()


def _module():
    """The compiled module. A caller arriving while another thread compiles it (``prepare``)
    waits for that compile instead of starting its own."""
    if not _compiled:
        with _compiling:
            if not _compiled:
                import cupy
                module = cupy.RawModule(code=_SOURCE, options=("--std=c++14",))
                module.get_function("perfbot_split_narrow")    # compiles the whole source
                _compiled.append(module)
    return _compiled[0]


def prepare(device_id: int) -> None:
    """Compile the module on a background thread while the caller goes on: NVRTC lets other
    Python threads run (on the H200 a thread compiling this module, 0.52 s cold, left the main
    thread's Python at full speed), so the compile overlaps a lowering's cuDNN plan builds
    instead of following them."""
    import cupy

    def compile_on(device):
        with cupy.cuda.Device(device):
            _module()
    threading.Thread(target=compile_on, args=(device_id,), name="split-bf16 compile", daemon=True).start()


def _launch(name: str, rows: int, k: int, args: tuple):
    _module().get_function(name)(*row_grid(rows, k), args)


def along_last(x, lo: int):
    """fp32 (..., K) -> uint16 (..., width(K)), split along the last axis with lo in part ``lo``
    (LO_LEFT for a left operand (..., M, K), LO_RIGHT for the rows of a transposed right one)."""
    import cupy
    x = cupy.ascontiguousarray(x, dtype=cupy.float32)
    k = int(x.shape[-1])
    kp = width(k)
    out = cupy.empty(x.shape[:-1] + (kp,), dtype=cupy.uint16)
    rows = x.size // max(k, 1)
    if rows and 0 < k and 3 * k <= NARROW:
        blocks = max(1, min(-(-rows // 256), 1 << 16))
        _module().get_function("perfbot_split_narrow")(
            (blocks,), (256,), (x, out, np.int64(rows), np.int32(k), np.int32(kp), np.int64(k), np.int32(lo)))
    elif rows and k and k % 4 == 0 and x.data.ptr % 16 == 0:
        _launch("perfbot_split_last4", rows, k // 4,
                (x, out, np.int64(rows), np.int32(k), np.int32(kp), np.int64(k // 4), np.int32(lo)))
    elif rows and k:
        _launch("perfbot_split_last", rows, k,
                (x, out, np.int64(rows), np.int32(k), np.int32(kp), np.int64(k), np.int32(lo)))
    else:
        out.fill(0)
    return out


def along_rows(x):
    """A right operand fp32 (..., K, N) -> uint16 (..., width(K), N) laid out [hi ; lo ; hi],
    as a transposed view of a packed (..., N, width(K)): a transposed operand (e.g. a ``transB``
    weight, or K^T in attention) is split where it lies, anything else is packed transposed
    first."""
    return along_last(x.swapaxes(-1, -2), LO_RIGHT).swapaxes(-1, -2)


def im2col_left(x, spec):
    """The convolution windows of channels-last ``x`` (N, H, W, C packed) as the split left
    operand: (N*OH*OW, width(KH*KW*C)), columns (ky, kx, c) within each part."""
    import cupy
    n, c, h, w = spec.x_shape
    _k, _cg, kh, kw = spec.w_shape
    _, _, oh, ow = spec.out_shape
    kk = kh * kw * c
    kp = width(kk)
    rows = n * oh * ow
    cols = cupy.empty((rows, kp), dtype=cupy.uint16)
    i32 = np.int32
    four = c % 4 == 0 and x.data.ptr % 16 == 0
    _launch("perfbot_im2col_split4" if four else "perfbot_im2col_split", rows, kk // 4 if four else kk,
            (x, cols, np.int64(rows), i32(kp), i32(c), i32(h), i32(w), i32(oh), i32(ow), i32(kh), i32(kw),
             i32(spec.strides[0]), i32(spec.strides[1]), i32(spec.pads_begin[0]), i32(spec.pads_begin[1]),
             i32(spec.dilations[0]), i32(spec.dilations[1]), i32(LO_LEFT)))
    return cols


# ----- the same arithmetic in NumPy: the definition the device kernels are tested against ------
def bf16_round(v: np.ndarray) -> np.ndarray:
    """fp32 values rounded to the nearest bf16 (ties to even), as fp32."""
    u = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32)
    special = (u & 0x7F800000) == 0x7F800000
    r = (u + np.uint32(0x7FFF) + ((u >> 16) & 1)).astype(np.uint32)
    r = np.where(special | ((r & 0x7F800000) == 0x7F800000), u, r)
    r = np.where(np.isnan(v), u | np.uint32(0x00400000), r)     # NaN stays NaN once truncated
    return (r & np.uint32(0xFFFF0000)).view(np.float32)


def hi_lo(v: np.ndarray):
    v = np.asarray(v, dtype=np.float32)
    hi = bf16_round(v)
    with np.errstate(invalid="ignore"):
        lo = np.where(np.isfinite(hi), bf16_round(v - hi), np.float32(0))
    return hi, lo.astype(np.float32)


def matmul_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` (fp32) as the split GEMM computes it: three bf16 products summed in fp32
    (exactly representable products; the sum taken in float64 here, an upper bound on fp32's)."""
    ah, al = hi_lo(a)
    bh, bl = hi_lo(b)
    f = np.float64
    return (ah.astype(f) @ bh.astype(f) + ah.astype(f) @ bl.astype(f) + al.astype(f) @ bh.astype(f)).astype(np.float32)
