"""Output buffers of convolutions in their layout, and the shared buffers of zeros that split
cuDNN graphs read as their residual (``conv_spec.zero_residual``)."""
from __future__ import annotations

from .channels_last import logical_axes

_zero_buffers: dict = {}


def empty(lens, dtype, nhwc: bool):
    """An uninitialised logical NCHW array, a channels-last view when ``nhwc``."""
    import cupy
    if not nhwc:
        return cupy.empty(lens, dtype=dtype)
    n, c, *sp = lens
    return cupy.empty((n, *sp, c), dtype=dtype).transpose(logical_axes(len(lens)))


def zeros(lens, dtype, nhwc: bool):
    """``empty``'s array set to zeros by a memset (a channels-last view is not C-contiguous, so
    CuPy's fill would compile a kernel for it, on the cold compile's path)."""
    import cupy
    out = empty(lens, dtype, nhwc)
    cupy.cuda.runtime.memsetAsync(out.data.ptr, 0, out.nbytes, cupy.cuda.get_current_stream().ptr)
    return out


def shared_zeros(lens, dtype, nhwc: bool):
    """One buffer of zeros per device, shape, type and layout, for every convolution that reads
    zeros as its residual: cuDNN only reads it."""
    import cupy
    key = (cupy.cuda.Device().id, tuple(lens), dtype, nhwc)
    if key not in _zero_buffers:
        _zero_buffers[key] = zeros(lens, dtype, nhwc)
    return _zero_buffers[key]
