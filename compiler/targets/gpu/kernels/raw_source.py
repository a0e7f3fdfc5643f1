"""CUDA sources: kept as ``.cu`` files in ``kernels/cuda/`` (package data, so an installed package
has them), read by name; and kernels compiled from one source text with ``#define`` settings,
once per settings, either where first launched (``raw_kernel``) or ahead on worker threads
(``compile_ahead``)."""
from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

CUDA_DIR = Path(__file__).with_name("cuda")
_compiled: dict = {}
_ahead: dict = {}           # key -> Future of a compile started by compile_ahead, until first use
_workers: list = []         # the worker pool, once made
_workers_made = threading.Lock()


@functools.lru_cache(maxsize=None)
def cuda_source(name: str) -> str:
    """The text of ``kernels/cuda/<name>.cu`` (one string object per name, read once)."""
    return (CUDA_DIR / f"{name}.cu").read_text()


def _key(source: str, name: str, defines: dict, options: tuple) -> tuple:
    return (id(source), name, tuple(sorted(defines.items())), options)


def _kernel(key, source: str, name: str, defines: dict, options: tuple):
    """The ``cupy.RawKernel`` of ``key``, made (not compiled: CuPy compiles at first launch or
    ``compile()``) the first time it is asked for."""
    import cupy
    if key not in _compiled:
        head = "".join(f"#define {k} {v}\n" for k, v in defines.items())
        if defines.get("T") == "__half":
            head = "#include <cuda_fp16.h>\n" + head
        _compiled[key] = cupy.RawKernel(head + source, name, options=options)
    return _compiled[key]


def raw_kernel(source: str, name: str, defines: dict, options: tuple = ()):
    """The ``cupy.RawKernel`` ``name`` of ``source`` under ``defines`` (``T`` ``__half`` brings in
    cuda_fp16.h), compiled on first use; where ``compile_ahead`` started its compile, that compile
    is waited for (and its error, if any, raised here) instead of a second one started."""
    key = _key(source, name, defines, options)
    kernel = _kernel(key, source, name, defines, options)
    pending = _ahead.pop(key, None)
    if pending is not None:
        pending.result()
    return kernel


def compile_ahead(source: str, name: str, defines: dict, options: tuple = ()) -> None:
    """Start compiling ``raw_kernel(source, name, defines, options)`` on a worker thread for the
    current device and return at once. NVRTC lets other Python threads run while it compiles (on
    the H200 a thread compiling the split-bf16 module left the main thread's Python at full
    speed), so a lowering that asks for the variants it will launch before it launches them gets
    their compiles side by side, where each first launch compiled its variant alone: ResNeXt-50's
    seven grouped-kernel variants took 4.0 s of a cold fp32 compile on the H100, one after another."""
    import cupy
    key = _key(source, name, defines, options)
    if key in _compiled:
        return              # made already: compiled, or being compiled
    kernel = _kernel(key, source, name, defines, options)
    _ahead[key] = _pool().submit(_compile_on, kernel, cupy.cuda.Device().id)


def _compile_on(kernel, device_id: int) -> None:
    import cupy
    with cupy.cuda.Device(device_id):
        kernel.compile()


def _pool():
    """The worker threads compiles ahead run on: one per core, at most eight (each NVRTC compile
    takes one core)."""
    if not _workers:
        with _workers_made:
            if not _workers:
                from concurrent.futures import ThreadPoolExecutor
                _workers.append(ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1)),
                                                   thread_name_prefix="kernel compile"))
    return _workers[0]
