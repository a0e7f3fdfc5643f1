"""GlobalAveragePool on the gpu target: ``kernels.global_average``'s reduction for channels-last
data (what a convolution leaves), CuPy's mean for any other layout."""
from __future__ import annotations

from .kernels import global_average as kernel
from .kernels.channels_last import pixel_stride


def global_average_runner(xp, dtype: str):
    """The runner of a rank-4 fp32 or fp16 GlobalAveragePool."""
    def run(x):
        stride = pixel_stride(x)
        if stride is not None and not x.flags.c_contiguous:
            return kernel.global_average(x, stride)
        return xp.mean(x, axis=(2, 3), keepdims=True, dtype="float32").astype(dtype, copy=False)
    run.path = "global-average"
    return run
