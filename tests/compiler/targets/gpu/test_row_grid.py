"""Launch geometry of the GPU row kernels (``kernels/row_grid``), on CPU: every row and every
element of a row gets a thread, blocks stay at 256 threads, the grid within its cap, and rows
narrower than a warp share one."""
import pytest

from compiler.targets.gpu.kernels.row_grid import MAX_BLOCKS, THREADS, lanes, row_grid


@pytest.mark.parametrize("rows,width", [(1, 1), (37, 3), (37, 29), (1000, 64), (5, 300), (3136, 1728),
                                        (10 ** 9, 8), (518400, 4), (518400, 16), (7, 0)])
def test_row_grid_covers_rows_and_elements(rows, width):
    (blocks,), (tx, ty) = row_grid(rows, width)
    assert tx * ty == THREADS
    assert tx >= min(width, THREADS)                  # a row's elements in one pass up to 256
    assert tx % 32 == 0 or (tx < 32 and tx & (tx - 1) == 0)     # whole warps, or a power of two within one
    assert 1 <= blocks <= MAX_BLOCKS
    assert blocks * ty >= rows or blocks == MAX_BLOCKS   # beyond the cap the kernels stride
    assert (blocks - 1) * ty < rows                   # no block without a row


def test_narrow_rows_share_a_warp():
    assert row_grid(1000, 4) == ((16,), (4, 64))       # eight rows a warp, 64 a block
    assert [lanes(w) for w in (1, 2, 3, 5, 16, 17, 31)] == [1, 2, 4, 8, 16, 32, 32]
    assert [lanes(w) for w in (32, 33, 96, 1000)] == [32, 64, 96, 256]
    assert row_grid(10, 1000) == ((10,), (256, 1))     # a wide row: a block of its own
