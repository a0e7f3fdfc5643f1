"""Launch geometry of the row kernels (the split, the window gather, the conv epilogue, the slice
copy): rows over ``blockIdx.x * blockDim.y + threadIdx.y``, striding by the grid, a row's elements
over ``threadIdx.x``; 256 threads a block.

A row gets as many lanes as cover it: a multiple of 32 for rows of 32 elements or more, else the
next power of two, so that a warp takes several narrow rows. With a warp a row, a row of four
16-byte units (sixteen fp32 channels, split four at a time) left 28 of 32 lanes idle: the split
of TAAU's 16-channel 540 x 960 activations ran at ~0.5 TB/s on the H200, a quarter of its GPU
time. The kernels stride over a row's elements and the grid's rows, so any block shape covers
them."""
from __future__ import annotations

THREADS = 256
MAX_BLOCKS = 1 << 20


def lanes(width: int) -> int:
    """Threads a row of ``width`` elements gets: the next power of two below 32, else the next
    multiple of 32, at most a block."""
    width = max(1, int(width))
    if width >= 32:
        return min(THREADS, -(-width // 32) * 32)
    return 1 << (width - 1).bit_length()


def row_grid(rows: int, width: int) -> tuple[tuple[int], tuple[int, int]]:
    """(grid, block) for ``rows`` rows of ``width`` elements each, a thread per element."""
    threads_x = lanes(width)
    threads_y = THREADS // threads_x
    blocks = max(1, min(-(-int(rows) // threads_y), MAX_BLOCKS))
    return (blocks,), (threads_x, threads_y)
