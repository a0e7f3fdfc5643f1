"""2-D pooling as one CUDA kernel: a thread per output element walks its window."""
from __future__ import annotations

_SOURCE = r"""
extern "C" __global__ void pool2d_{name}(const {T}* x, {T}* y, long long total,
        int C, int H, int W, int OH, int OW, int KH, int KW, int SH, int SW,
        int PH, int PW, int DH, int DW, int include_pad, int pad_h_end, int pad_w_end) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
#if NHWC
    // i walks (n, oh, ow, c); x is (n, h, w, c)
    int c = i % C; long long r = i / C;
    int ow = r % OW; r /= OW;
    int oh = r % OH; r /= OH;
    const {T}* xc = x + r * (long long)H * W * C + c;
    const int step = C;
#else
    int ow = i % OW; long long r = i / OW;
    int oh = r % OH; r /= OH;
    const {T}* xc = x + r * (long long)H * W;
    const int step = 1;
#endif
    int h0 = oh * SH - PH, w0 = ow * SW - PW;
    float acc = {INIT};
    int count = 0;
    for (int kh = 0; kh < KH; ++kh) {
        int h = h0 + kh * DH;
        for (int kw = 0; kw < KW; ++kw) {
            int w = w0 + kw * DW;
            if (h < 0 || h >= H || w < 0 || w >= W) {
                if (include_pad && h < H + pad_h_end && w < W + pad_w_end) count++;
                continue;
            }
            float v = (float)xc[(long long)(h * W + w) * step];
            {ACC}
            count++;
        }
    }
    {FINISH}
}
"""

_kernels: dict = {}


def _kernel(mode: str, dtype: str, nhwc: bool):
    import cupy
    key = (mode, dtype, nhwc)
    if key not in _kernels:
        t = {"float32": "float", "float16": "half", "float64": "double"}[dtype]
        if mode == "max":
            acc, init, finish = "acc = v > acc ? v : acc;", "-1.0f/0.0f", f"y[i] = ({t})acc;"
        else:
            acc, init = "acc += v;", "0.0f"
            finish = f"y[i] = ({t})(count ? acc / count : 0.0f);"
        src = _SOURCE.replace("{T}", t).replace("{ACC}", acc).replace("{INIT}", init) \
            .replace("{FINISH}", finish).replace("{name}", f"{mode}_{dtype}")
        src = f"#define NHWC {int(nhwc)}\n" + src
        if dtype == "float16":
            src = "#include <cuda_fp16.h>\n" + src
        _kernels[key] = cupy.RawKernel(src, f"pool2d_{mode}_{dtype}")
    return _kernels[key]


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
    total = y.size
    threads = 256
    blocks = (total + threads - 1) // threads
    k = _kernel(mode, x.dtype.name, nhwc)
    import numpy as np
    k((blocks,), (threads,), (x, y, np.int64(total), np.int32(c), np.int32(h), np.int32(w),
                               np.int32(oh), np.int32(ow), np.int32(kernel[0]), np.int32(kernel[1]),
                               np.int32(strides[0]), np.int32(strides[1]), np.int32(pads_begin[0]),
                               np.int32(pads_begin[1]), np.int32(dilations[0]), np.int32(dilations[1]),
                               np.int32(include_pad), np.int32(pads_end[0]), np.int32(pads_end[1])))
    return y
