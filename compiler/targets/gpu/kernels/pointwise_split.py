"""A fused pointwise body whose result goes straight into split-bf16 rows: one kernel where a
pre-activation (DenseNet's batch norm + ReLU before each convolution) was a pointwise kernel
writing fp32 and a split kernel reading it back (on the H200 DenseNet-121's fp32 pointwise kernels
took 17 % of its GPU time and its splits, most of them of pre-activations, 15 %; this reads 4
bytes and writes 6 per value instead of reading 8 and writing 10).

The result is laid out as ``split_bf16.along_last`` lays out a channels-last tensor: rows are
pixels, each row [hi | hi | lo] over the channels (LO_LEFT), zero-padded to ``width(K)``. Each
input is read as ``p[row * row_stride + k * channel_stride]``: a full-size channels-last operand
(row stride = its pixel stride, channel stride 1), a per-channel vector (0, 1) or a scalar
(0, 0). The source is text built without CuPy (tested on any machine), once per pointwise step;
``run`` takes it and compiles each distinct text once.
"""
from __future__ import annotations

import functools

import numpy as np

from ..pointwise_codegen import UnsupportedPointwise, generate
from .channels_last import pixel_stride
from .row_grid import row_grid
from .split_bf16 import DEVICE_HELPERS


def source(body: list[dict], n_inputs: int) -> str:
    """CUDA source of kernels ``perfbot_pw_split`` (a value per thread) and ``perfbot_pw_split4``
    (four channels per thread: K a multiple of 4, every operand 16-byte aligned with row
    strides a multiple of 4) for ``body`` over ``n_inputs`` fp32 inputs."""
    if body[-1]["dtype"] != "float32" or any(s["dtype"] == "float16" for s in body):
        raise UnsupportedPointwise("the split takes fp32 results")
    _in, _out, operation = generate(body, ["float32"] * n_inputs)
    xs = range(n_inputs)
    params = "".join(f"const float* __restrict__ p{i}, long long r{i}, int c{i}, " for i in xs)
    formals = ", ".join(f"float x{i}" for i in xs)
    load1 = "\n".join(f"            float v{i} = p{i}[row * r{i} + (long long)k * c{i}];" for i in xs)
    load4 = "\n".join(
        f"            float4 v{i} = c{i} ? *(const float4*)(p{i} + row * r{i} + k)"
        f" : make_float4(p{i}[row * r{i}], p{i}[row * r{i}], p{i}[row * r{i}], p{i}[row * r{i}]);"
        for i in xs)
    lane = {c: ", ".join(f"v{i}.{c}" for i in xs) for c in "xyzw"}
    return DEVICE_HELPERS + f"""
__device__ __forceinline__ float perfbot_pw_body({formals}) {{
    float out;
{operation}
    return out;
}}

extern "C" __global__ void perfbot_pw_split({params}unsigned short* __restrict__ dst,
                                            long long rows, int K, int KP, int lo) {{
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {{
        unsigned short* d = dst + row * KP;
        for (int k = threadIdx.x; k < K; k += blockDim.x) {{
{load1}
            perfbot_split_store(perfbot_pw_body({", ".join(f"v{i}" for i in xs)}), d + k, K, lo);
        }}
        for (int k = 3 * K + threadIdx.x; k < KP; k += blockDim.x)
            d[k] = 0;
    }}
}}

extern "C" __global__ void perfbot_pw_split4({params}unsigned short* __restrict__ dst,
                                             long long rows, int K, int KP, int lo) {{
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {{
        unsigned short* d = dst + row * KP;
        for (int k = 4 * threadIdx.x; k < K; k += 4 * blockDim.x) {{
{load4}
            float4 y = make_float4(perfbot_pw_body({lane["x"]}), perfbot_pw_body({lane["y"]}),
                                   perfbot_pw_body({lane["z"]}), perfbot_pw_body({lane["w"]}));
            perfbot_split_store4(y, d + k, K, lo);
        }}
        for (int k = 3 * K + threadIdx.x; k < KP; k += blockDim.x)
            d[k] = 0;
    }}
}}
"""


@functools.lru_cache(maxsize=None)
def _compiled(text: str):
    import cupy
    return cupy.RawModule(code=text, options=("--std=c++14",))


def operand_strides(a, k: int, lens: tuple):
    """(row stride, channel stride) in elements reading ``a`` (broadcast against the result's
    logical NCHW ``lens``) as rows of pixels by channels, or None when it cannot be read so."""
    if a.size == 1:
        return 0, 0
    if tuple(a.shape) == tuple(lens):
        row = pixel_stride(a)
        return None if row is None else (row, 1)
    shape = (1,) * (4 - a.ndim) + tuple(a.shape)
    if shape == (1, k, 1, 1) and a.flags.c_contiguous:
        return 0, 1
    return None


def run(text: str, args, lens: tuple, lo: int):
    """The body whose ``source`` is ``text`` over ``args`` (fp32 device arrays) split into
    (N, H, W, width(C)) uint16 rows, or None when an operand is not laid out as the kernel reads
    (the caller computes and splits)."""
    import cupy
    from .split_bf16 import width
    n, k, h, w = lens
    rows = n * h * w
    strides = [operand_strides(a, k, lens) for a in args]
    if any(s is None for s in strides) or any(a.dtype != cupy.float32 for a in args):
        return None
    kp = width(k)
    out = cupy.empty((n, h, w, kp), dtype=cupy.uint16)
    four = k % 4 == 0 and all(a.data.ptr % 16 == 0 and (r % 4 == 0) for a, (r, c) in zip(args, strides) if c)
    packed = []
    for a, (r, c) in zip(args, strides):
        packed += [a, np.int64(r), np.int32(c)]
    packed += [out, np.int64(rows), np.int32(k), np.int32(kp), np.int32(lo)]
    name = "perfbot_pw_split4" if four else "perfbot_pw_split"
    _compiled(text).get_function(name)(*row_grid(rows, k // 4 if four else k), tuple(packed))
    return out
