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
from .raw_source import cuda_source, raw_kernel

_SOURCE = cuda_source("grouped_nhwc")
MAX_GROUP_CHANNELS = 32


def output_vector(cog: int) -> int:
    """Output channels a thread takes: the largest of 4, 2, 1 dividing the group's outputs."""
    return next(v for v in (4, 2, 1) if cog % v == 0)


def _kernel(dtype, cg, cog, vec, tile, window, strides, bias, residual, activation, wide):
    defines = {"T": {"float32": "float", "float16": "__half"}[dtype], "VEC": vec, "TW": tile, "CG": cg,
               "COG": cog, "KH": window[0], "KW": window[1], "SH": strides[0], "SW": strides[1],
               "HAS_BIAS": int(bias), "HAS_RESIDUAL": int(residual),
               "IDX": "long long" if wide else "int", "ACTIVATION": activation}
    return raw_kernel(_SOURCE, "grouped_nhwc", defines, options=("-std=c++14",))


def grouped_nhwc(x, w_tap, b, r, y, spec, activation: str) -> None:
    """``y`` = activation(conv(x) + b + r), every array packed channels-last: ``x`` (N, H, W, CIN),
    ``w_tap`` (KH, KW, CG, COUT) fp32, ``b`` (COUT,) or None, ``r`` and ``y`` (N, OH, OW, COUT)."""
    n, h, wd, cin = x.shape
    _, oh, ow, cout = y.shape
    kh, kw, cg, _ = w_tap.shape
    cog = cout // spec.group
    vec, tile = launch_shape(n * oh, ow, cout, output_vector(cog), row_tile(spec.strides[1]))
    total = n * oh * (-(-ow // tile)) * (cout // vec)
    wide = max(x.size, y.size, total) >= 2 ** 31 - 1
    index = np.int64 if wide else np.int32
    k = _kernel(x.dtype.name, cg, cog, vec, tile, (kh, kw), tuple(spec.strides), b is not None, r is not None,
                activation, wide)
    threads = 128
    k(((total + threads - 1) // threads,), (threads,),
      (x, w_tap, b if b is not None else np.uintp(0), r if r is not None else np.uintp(0), y, index(total),
       *(np.int32(v) for v in (cin, cout, h, wd, oh, ow, spec.pads_begin[0], spec.pads_begin[1]))))
