"""GroupNormalization and InstanceNormalization as one kernel: a row is one (sample, group), its
channels-per-group x spatial elements, normalised with fp32 sums (mean first, then the mean of
squared differences, as the reference does), the per-channel scale and bias and an optional SiLU
applied in the one store. The CuPy lowering takes a cast, two means, a subtraction, a square, a
division, a scale, a bias and a cast back.

The input is logical (N, C, spatial...) stored packed, or, for rank 4, channels-last (as the gpu
target stores convolution outputs); the output is stored as the input is.
"""
from __future__ import annotations

import numpy as np

from .raw_source import cuda_source, raw_kernel
from .row_reduce import REDUCE_SOURCE, row_launch

_SOURCE = REDUCE_SOURCE + cuda_source("norm_groups")

_TYPES = {"float16": "__half", "float32": "float"}


def norm_groups(x, scale, bias, groups: int, eps: float, per_group: bool, channels_last: bool,
                swish: bool = False):
    """``x`` (N, C, spatial...) packed, or rank 4 channels-last, normalised over ``groups``
    groups of channels; ``scale``/``bias`` packed, per channel, or per group with ``per_group``,
    of ``x``'s type or fp32 (cuda_fp16.h comes in with fp16 ``x`` only)."""
    import cupy
    n, c = x.shape[:2]
    spatial = x.size // max(1, n * c)
    if channels_last:
        y = cupy.empty((n,) + x.shape[2:] + (c,), x.dtype).transpose(0, 3, 1, 2)
    else:
        y = cupy.empty_like(x)
    rows, cpg = n * groups, c // groups
    if x.size == 0:
        return y
    grid, block, lanes = row_launch(rows, cpg * spatial)
    defines = {"T": _TYPES[x.dtype.name], "ST": _TYPES[scale.dtype.name], "LANES": lanes,
               "CHANNELS_LAST": int(channels_last), "PER_GROUP": int(per_group), "SWISH": int(swish)}
    k = raw_kernel(_SOURCE, "norm_groups", defines)
    k(grid, block, (x, scale, bias, y, np.int64(rows), np.int32(groups), np.int32(cpg), np.int32(spatial),
                    np.float32(eps)))
    return y

