"""Launch geometry of the row kernels (the split, the window gather, the conv epilogue, the slice
copy): rows over ``blockIdx.x * blockDim.y + threadIdx.y``, striding by the grid, a row's elements
over ``threadIdx.x``; 256 threads a block, as few lanes per row as cover it (at least a warp)."""
from __future__ import annotations

THREADS = 256
MAX_BLOCKS = 1 << 20


def row_grid(rows: int, width: int) -> tuple[tuple[int], tuple[int, int]]:
    """(grid, block) for ``rows`` rows of ``width`` elements each, a thread per element."""
    threads_x = min(THREADS, max(32, -(-int(width) // 32) * 32))
    threads_y = THREADS // threads_x
    blocks = max(1, min(-(-int(rows) // threads_y), MAX_BLOCKS))
    return (blocks,), (threads_x, threads_y)
