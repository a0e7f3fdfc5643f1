"""Where device arrays come from: CuPy on a CUDA GPU.

Importing this module never imports CuPy; ``load()`` does, when a root is lowered. The array
module is kept behind ``Backend`` so the executor's plumbing (liveness, copies, roots) can also be
exercised with NumPy standing in for CuPy (``Backend.emulated()``): kernels that only exist as
CUDA source then run their reference computation instead.
"""
from __future__ import annotations

import functools

import numpy as np


class Backend:
    def __init__(self, xp, on_gpu: bool):
        self.xp = xp
        self.on_gpu = on_gpu

    @classmethod
    def emulated(cls) -> "Backend":
        return cls(np, False)

    def to_device(self, value):
        if self.on_gpu:
            return self.xp.asarray(value)
        return np.asarray(value)

    def to_host(self, value):
        if self.on_gpu and isinstance(value, self.xp.ndarray):
            return self.xp.asnumpy(value)
        return value

    def is_device_array(self, value) -> bool:
        return isinstance(value, self.xp.ndarray)


def gpu_available() -> bool:
    """Whether CuPy imports and sees a CUDA device."""
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:  # noqa: BLE001 - any import or driver failure means "no GPU"
        return False


def load(emulate: bool | None = None) -> Backend:
    """CuPy, or NumPy standing in for it when emulating (``GpuOptions.emulate``; tests of the
    plumbing on machines without a GPU; no CUDA code runs then). None: the environment says."""
    if emulate is None:
        from .options import GpuOptions
        emulate = GpuOptions.from_environment().emulate
    return _load(bool(emulate))


@functools.lru_cache(maxsize=2)
def _load(emulate: bool) -> Backend:
    from compiler.errors import CompileError
    if emulate:
        return Backend.emulated()
    try:
        import cupy
    except ImportError as exc:
        raise CompileError("the gpu target needs CuPy (pip install 'perfbot[gpu]')") from exc
    if not cupy.cuda.is_available():
        raise CompileError("the gpu target found no usable CUDA device")
    return Backend(cupy, True)


load.cache_clear = _load.cache_clear    # forgets a failed CuPy load (kept: callers clear it)
