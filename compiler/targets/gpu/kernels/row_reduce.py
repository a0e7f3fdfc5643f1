"""CUDA helpers the one-pass row kernels share: a row is reduced by LANES threads (a warp, or a
whole block of 256), sums and maxima in fp32, across warps through shared memory."""
from __future__ import annotations

from .raw_source import cuda_source

THREADS = 256
WARP_ROW_MAX = 1024     # rows up to this many elements take a warp each, longer ones a block

REDUCE_SOURCE = cuda_source("row_reduce")


def lanes_for(width: int) -> int:
    """Threads per row: a warp for rows up to ``WARP_ROW_MAX`` elements, else the block."""
    return 32 if width <= WARP_ROW_MAX else THREADS


MAX_CACHED = 32         # elements a lane keeps in registers at most


def cached_per_lane(width: int, lanes: int) -> int:
    """How many of a row's elements each of its ``lanes`` keeps in registers (loaded once, all
    at the start, so their loads overlap), or 0 when a row is too long for that: then the kernel
    reads the row from memory in each pass."""
    per_lane = -(-int(width) // int(lanes))
    return per_lane if per_lane <= MAX_CACHED else 0


def row_launch(rows: int, width: int) -> tuple[tuple[int], tuple[int, int], int]:
    """(grid, block, lanes) for ``rows`` rows of ``width`` elements: blockIdx.x * blockDim.y +
    threadIdx.y is the row, threadIdx.x the lane."""
    lanes = lanes_for(width)
    per_block = THREADS // lanes
    return (-(-int(rows) // per_block),), (lanes, per_block), lanes
