"""Device kernels of the exact-fp32 GEMM convolution (``ops_nn._gemm_conv``): the window gather
(im2col over channels-last data, padding read as zeros) and the fused epilogue (bias, residual,
ReLU in one pass over the GEMM's output).

Shapes travel as kernel arguments, not as constants in the source, so one compiled kernel serves
every convolution (a kernel per shape would cost a runtime compile per distinct convolution).
"""
from __future__ import annotations

import functools

import numpy as np

from .raw_source import cuda_source
from .row_grid import row_grid

_IM2COL = cuda_source("conv_im2col_nhwc_body")    # element-wise kernel bodies
_EPILOGUE = cuda_source("conv_epilogue_body")


# fp32 with K a multiple of 4: four values per thread, rows over blocks and threads, no index
# division (``_EPILOGUE`` divides a 64-bit index by K per element: Inception-v3's 74 epilogues
# took 0.65 ms of its ~8.6 ms per fp32 batch of 32 on the H200).
_EPILOGUE4 = cuda_source("conv_epilogue4")


@functools.lru_cache(maxsize=None)
def _epilogue4_kernel():
    import cupy
    return cupy.RawKernel(_EPILOGUE4, "perfbot_conv_epilogue4")


@functools.lru_cache(maxsize=None)
def _im2col_kernel():
    import cupy
    return cupy.ElementwiseKernel(
        "raw T x, int32 C, int32 H, int32 W, int32 OH, int32 OW, int32 KH, int32 KW, "
        "int32 SH, int32 SW, int32 PT, int32 PL, int32 DH, int32 DW", "T col", _IM2COL, "perfbot_im2col_nhwc")


@functools.lru_cache(maxsize=None)
def _epilogue_kernel():
    import cupy
    return cupy.ElementwiseKernel("raw T b, raw T r, int64 K, int32 flags", "T y", _EPILOGUE,
                                  "perfbot_conv_epilogue")


def im2col_nhwc(x, spec):
    """Windows of channels-last ``x`` (N, H, W, C packed) as an (N*OH*OW, KH*KW*C) matrix whose
    columns run over (ky, kx, c), matching weights laid out as (KH, KW, C, K)."""
    import cupy
    n, c, h, w = spec.x_shape
    _k, _cg, kh, kw = spec.w_shape
    _, _, oh, ow = spec.out_shape
    cols = cupy.empty((n * oh * ow, kh * kw * c), dtype=x.dtype)
    _im2col_kernel()(x, c, h, w, oh, ow, kh, kw, spec.strides[0], spec.strides[1],
                     spec.pads_begin[0], spec.pads_begin[1], spec.dilations[0], spec.dilations[1], cols)
    return cols


def epilogue(y, bias=None, residual=None, relu=False):
    """In place on the GEMM's (rows, K) output: + bias[K], + residual (same packed layout), ReLU."""
    flags = (1 if bias is not None else 0) | (2 if residual is not None else 0) | (4 if relu else 0)
    if not flags:
        return y
    k = int(y.shape[-1])
    operands = [a for a in (y, bias, residual) if a is not None]
    if y.dtype.name == "float32" and k % 4 == 0 and all(a.flags.c_contiguous and a.data.ptr % 16 == 0
                                                         and a.dtype == y.dtype for a in operands):
        rows = y.size // k
        _epilogue4_kernel()(*row_grid(rows, k // 4),
                            (y, bias if bias is not None else y, residual if residual is not None else y,
                             np.int64(rows), np.int32(k // 4), np.int32(flags)))
        return y
    dummy = y.reshape(-1)[:1]
    _epilogue_kernel()(bias if bias is not None else dummy, residual if residual is not None else dummy,
                       y.shape[-1], flags, y)
    return y
