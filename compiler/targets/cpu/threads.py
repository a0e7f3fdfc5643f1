"""Threads of the cpu target.

BLAS's own threading scales badly on the small matrix products of batch-1 inference (a 64-row
GEMM split 16 ways) and spins when the machine is busy. The cpu target therefore runs BLAS
single-threaded (``threadpoolctl``, for the duration of a root's run) and splits the work itself:
kernels hand independent chunks (output channels, output columns, rows, im2col channel ranges)
to one shared thread pool. NumPy releases the GIL inside these calls, so chunks run in parallel.

``PERFBOT_CPU_THREADS`` sets the number of threads (default: the CPUs this process may use, at
most ``DEFAULT_MAX_THREADS``: batch-1 products are too small to gain from more — measured on a
16-core host, ResNet-50 ran faster on 4–8 threads than on 16);
``PERFBOT_CPU_THREADS=blas`` leaves the threading to BLAS instead (kernels run unsplit).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache

import numpy as np

# Handing a chunk to another thread costs tens of microseconds of Python; a chunk must carry
# at least this many multiply-adds (or copied elements) to be worth it.
MIN_PARALLEL_MACS = 1 << 22
MIN_PARALLEL_COPY = 1 << 18
DEFAULT_MAX_THREADS = 8


def parts_for(work: int, per_part: int) -> int:
    """How many chunks ``work`` units make, at least ``per_part`` each, one per thread at most."""
    return max(1, min(thread_count(), work // per_part))


def blas_threading() -> bool:
    return os.environ.get("PERFBOT_CPU_THREADS", "").strip().lower() == "blas"


@lru_cache(maxsize=1)
def thread_count() -> int:
    env = os.environ.get("PERFBOT_CPU_THREADS", "").strip()
    if env.lower() == "blas":
        return 1
    if env:
        return max(1, int(env))
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        available = os.cpu_count() or 1
    return max(1, min(available, DEFAULT_MAX_THREADS))


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor | None:
    n = thread_count()
    return ThreadPoolExecutor(max_workers=n, thread_name_prefix="perfbot-cpu") if n > 1 else None


@lru_cache(maxsize=1)
def _controller():
    from threadpoolctl import ThreadpoolController
    return ThreadpoolController()


@contextmanager
def single_threaded_blas():
    if blas_threading():
        yield
        return
    with _controller().limit(limits=1, user_api="blas"):
        yield


def run_chunks(fn, chunks) -> None:
    """``fn(chunk)`` for every chunk, in parallel when there is more than one."""
    chunks = list(chunks)
    pool = _pool()
    if pool is None or len(chunks) < 2:
        for c in chunks:
            fn(c)
        return
    # The calling thread takes the first chunk itself instead of idling.
    futures = [pool.submit(fn, c) for c in chunks[1:]]
    fn(chunks[0])
    for f in futures:
        f.result()


def split(n: int, parts: int, align: int = 1) -> list[slice]:
    """``range(n)`` cut into at most ``parts`` contiguous slices (lengths multiples of
    ``align`` except the last)."""
    parts = max(1, min(parts, -(-n // align)))
    step = -(-n // parts)
    step = -(-step // align) * align
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, macs: int) -> np.ndarray:
    """``np.matmul(a, b, out=out)`` split over threads: along the stack when it has a matrix
    per thread, else along the output's columns or rows, whichever is longer."""
    workers = parts_for(macs, MIN_PARALLEL_MACS)
    if workers == 1:
        return np.matmul(a, b, out=out)
    if out.ndim >= 3 and out.shape[0] >= workers and a.ndim == b.ndim == out.ndim \
            and a.shape[0] == b.shape[0] == out.shape[0]:
        run_chunks(lambda s: np.matmul(a[s], b[s], out=out[s]), split(out.shape[0], workers))
    elif out.shape[-1] >= out.shape[-2]:
        run_chunks(lambda s: np.matmul(a, b[..., s], out=out[..., s]), split(out.shape[-1], workers, 16))
    else:
        run_chunks(lambda s: np.matmul(a[..., s, :], b, out=out[..., s, :]),
                   split(out.shape[-2], workers, 8))
    return out
