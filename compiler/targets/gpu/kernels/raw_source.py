"""CUDA sources: kept as ``.cu`` files in ``kernels/cuda/`` (package data, so an installed package
has them), read by name; and kernels compiled from one source text with ``#define`` settings,
once per settings."""
from __future__ import annotations

import functools
from pathlib import Path

CUDA_DIR = Path(__file__).with_name("cuda")
_compiled: dict = {}


@functools.lru_cache(maxsize=None)
def cuda_source(name: str) -> str:
    """The text of ``kernels/cuda/<name>.cu`` (one string object per name, read once)."""
    return (CUDA_DIR / f"{name}.cu").read_text()


def raw_kernel(source: str, name: str, defines: dict, options: tuple = ()):
    """The ``cupy.RawKernel`` ``name`` of ``source`` under ``defines`` (``T`` ``__half`` brings in
    cuda_fp16.h), compiled on first use."""
    import cupy
    key = (id(source), name, tuple(sorted(defines.items())), options)
    if key not in _compiled:
        head = "".join(f"#define {k} {v}\n" for k, v in defines.items())
        if defines.get("T") == "__half":
            head = "#include <cuda_fp16.h>\n" + head
        _compiled[key] = cupy.RawKernel(head + source, name, options=options)
    return _compiled[key]
