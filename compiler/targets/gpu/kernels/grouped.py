"""Grouped 2-D convolution with few channels per group, as one CUDA kernel over channels-last data.

RegNet's 3x3 convolutions have 8 (up to 24) channels per group and ResNeXt's 4 to 32. cuDNN runs
fp32 ones on its exact (non-tensor-core) engines: on the H200 RegNet-Y-400MF's first grouped
convolution (batch 64, 48 channels in 6 groups, 112 -> 56 pixels) took 0.55 ms, about 2.5
TFLOP/s, where its input and output take 0.05 ms to move. Each output here needs CG x KH x KW
multiply-adds, few enough that the convolution is bound by memory: a thread takes VEC output
channels of one group over a row of TW output pixels and reads the group's input channels of each
window pixel, the tap's weights held in registers. Sums are fp32; bias, residual and the
activation are applied before the store.
"""
from __future__ import annotations

import numpy as np

from .depthwise import launch_shape, row_tile
from .raw_source import compile_ahead as compile_ahead_raw
from .raw_source import cuda_source, raw_kernel

_SOURCE = cuda_source("grouped_nhwc")
MAX_GROUP_CHANNELS = 32


def output_vector(cog: int) -> int:
    """Output channels a thread takes: the largest of 4, 2, 1 dividing the group's outputs."""
    return next(v for v in (4, 2, 1) if cog % v == 0)


_OPTIONS = ("-std=c++14",)


def _variant(spec, dtype: str, x_size: int, y_size: int, bias: bool, residual: bool, activation: str):
    """(defines, launch threads, index type) of the kernel for ``spec``: the launch that
    ``grouped_nhwc`` and ``compile_ahead`` both derive, so the variant compiled ahead is the one
    launched."""
    n, _cin, _h, _w = spec.x_shape
    cout, cg, kh, kw = spec.w_shape
    _, _, oh, ow = spec.out_shape
    cog = cout // spec.group
    vec, tile = launch_shape(n * oh, ow, cout, output_vector(cog), row_tile(spec.strides[1]))
    total = n * oh * (-(-ow // tile)) * (cout // vec)
    wide = max(x_size, y_size, total) >= 2 ** 31 - 1
    defines = {"T": {"float32": "float", "float16": "__half"}[dtype], "VEC": vec, "TW": tile, "CG": cg,
               "COG": cog, "KH": kh, "KW": kw, "SH": spec.strides[0], "SW": spec.strides[1],
               "HAS_BIAS": int(bias), "HAS_RESIDUAL": int(residual),
               "IDX": "long long" if wide else "int", "ACTIVATION": activation}
    return defines, total, np.int64 if wide else np.int32


def compile_ahead(spec, activation: str) -> None:
    """Start compiling the variant ``grouped_nhwc`` will launch for ``spec`` on a worker thread
    (each takes 0.5 s of NVRTC cold: the group's channels and the window unroll fully)."""
    defines, _total, _index = _variant(spec, spec.dtype, int(np.prod(spec.x_shape)), int(np.prod(spec.out_shape)),
                                       spec.bias, spec.residual, activation)
    compile_ahead_raw(_SOURCE, "grouped_nhwc", defines, options=_OPTIONS)


def grouped_nhwc(x, w_tap, b, r, y, spec, activation: str) -> None:
    """``y`` = activation(conv(x) + b + r), every array packed channels-last: ``x`` (N, H, W, CIN),
    ``w_tap`` (KH, KW, CG, COUT) fp32, ``b`` (COUT,) or None, ``r`` and ``y`` (N, OH, OW, COUT)."""
    n, h, wd, cin = x.shape
    _, oh, ow, cout = y.shape
    defines, total, index = _variant(spec, x.dtype.name, x.size, y.size, b is not None, r is not None, activation)
    k = raw_kernel(_SOURCE, "grouped_nhwc", defines, options=_OPTIONS)
    threads = 128
    k(((total + threads - 1) // threads,), (threads,),
      (x, w_tap, b if b is not None else np.uintp(0), r if r is not None else np.uintp(0), y, index(total),
       *(np.int32(v) for v in (cin, cout, h, wd, oh, ow, spec.pads_begin[0], spec.pads_begin[1]))))
