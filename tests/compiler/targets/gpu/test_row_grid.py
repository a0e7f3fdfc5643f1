"""Launch geometry of the GPU row kernels (``kernels/row_grid``), on CPU: every row and every
element of a row gets a thread, blocks stay at 256 threads, the grid within its cap."""
import pytest

from compiler.targets.gpu.kernels.row_grid import MAX_BLOCKS, THREADS, row_grid


@pytest.mark.parametrize("rows,width", [(1, 1), (37, 3), (37, 29), (1000, 64), (5, 300), (3136, 1728),
                                        (10 ** 9, 8)])
def test_row_grid_covers_rows_and_elements(rows, width):
    (blocks,), (tx, ty) = row_grid(rows, width)
    assert tx * ty == THREADS and tx % 32 == 0
    assert tx >= min(width, THREADS)                  # a row's elements in one pass up to 256
    assert 1 <= blocks <= MAX_BLOCKS
    assert blocks * ty >= rows or blocks == MAX_BLOCKS   # beyond the cap the kernels stride
    assert (blocks - 1) * ty < rows                   # no block without a row


def test_row_grid_narrow_rows_share_a_block():
    assert row_grid(1000, 4) == ((125,), (32, 8))      # a warp per row, eight rows a block
    assert row_grid(10, 1000) == ((10,), (256, 1))     # a wide row: a block of its own
