"""2-D pooling as one CUDA kernel: a thread per output element, or, channels-last, per 16 bytes of
one output pixel's channels (8 fp16, 4 fp32, 2 fp64) where the channel count and the input's start
allow, walks its window. Sums are taken in fp32 (fp64 for fp64 tensors)."""
from __future__ import annotations

import numpy as np

from .raw_source import cuda_source

# Index math is 32-bit unless a tensor has 2^31 elements or more: with 64-bit division per output
# element, Inception-v3's nine channels-last 3x3 average pools took 1.07 ms of its ~10 ms per
# batch of 32 on the H200.
_SOURCE = cuda_source("pool2d")

_kernels: dict = {}


def _kernel(mode: str, dtype: str, nhwc: bool, vec: int, wide: bool):
    import cupy
    key = (mode, dtype, nhwc, vec, wide)
    if key not in _kernels:
        t = {"float32": "float", "float16": "half", "float64": "double"}[dtype]
        if mode == "max":
            acc, init, finish = "acc[j] = v[j] > acc[j] ? v[j] : acc[j];", "-1.0f/0.0f", "(a)"
        else:
            acc, init, finish = "acc[j] += v[j];", "0.0f", "(count ? (a) / count : 0.0f)"
        src = _SOURCE.replace("{T}", t).replace("{ACC}", acc).replace("{INIT}", init) \
            .replace("{name}", f"{mode}_{dtype}")
        src = (f"#define NHWC {int(nhwc)}\n#define VEC {vec}\n#define IDX {'long long' if wide else 'int'}\n"
               f"#define POOL_FINISH(a) {finish}\n#define ACC_T {'double' if dtype == 'float64' else 'float'}\n") + src
        if dtype == "float16":
            src = "#include <cuda_fp16.h>\n" + src
        _kernels[key] = cupy.RawKernel(src, f"pool2d_{mode}_{dtype}")
    return _kernels[key]


def channel_pack(channels: int, itemsize: int, address: int) -> int:
    """Channels a thread of the channels-last kernel takes: the most, up to 16 bytes, that divide
    ``channels`` and keep every load aligned. One fp16 channel a thread (2-byte loads), ResNet-18's
    max pool over (64, 112, 112, 64) fp16 took 0.19 ms on the H200, a sixth of the copy bandwidth."""
    vec = 16 // itemsize
    while vec > 1 and (channels % vec or address % (vec * itemsize)):
        vec //= 2
    return vec


def pool2d(x, out_shape, mode, kernel, strides, pads_begin, pads_end, dilations, include_pad):
    import cupy
    n, c, h, w = x.shape
    oh, ow = out_shape[2], out_shape[3]
    nhwc = x.transpose(0, 2, 3, 1).flags.c_contiguous and not x.flags.c_contiguous
    if nhwc:
        y = cupy.empty((n, oh, ow, c), dtype=x.dtype).transpose(0, 3, 1, 2)
    else:
        x = cupy.ascontiguousarray(x)
        y = cupy.empty(out_shape, dtype=x.dtype)
    vec = channel_pack(c, x.itemsize, x.data.ptr) if nhwc else 1
    total = y.size // vec
    wide = max(x.size, y.size) >= 2 ** 31 - 1
    threads = 256
    blocks = (total + threads - 1) // threads
    k = _kernel(mode, x.dtype.name, nhwc, vec, wide)
    index = np.int64 if wide else np.int32
    k((blocks,), (threads,), (x, y, index(total), np.int32(c), np.int32(h), np.int32(w),
                               np.int32(oh), np.int32(ow), np.int32(kernel[0]), np.int32(kernel[1]),
                               np.int32(strides[0]), np.int32(strides[1]), np.int32(pads_begin[0]),
                               np.int32(pads_begin[1]), np.int32(dilations[0]), np.int32(dilations[1]),
                               np.int32(include_pad), np.int32(pads_end[0]), np.int32(pads_end[1])))
    return y
