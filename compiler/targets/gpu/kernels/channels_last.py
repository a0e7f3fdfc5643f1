"""Channels-last rows: a rank-4 logical (N, C, H, W) array stored pixel by pixel, each pixel's
channels packed. A channel slice of a wider channels-last buffer (a chained concatenation) is
such rows too, with a pixel stride wider than its channel count."""
from __future__ import annotations


def memory_axes(rank: int) -> tuple:
    """The axes of a logical (N, C, spatial...) array in channels-last memory order."""
    return (0, *range(2, rank), 1)


def logical_axes(rank: int) -> tuple:
    """The inverse of ``memory_axes``: a channels-last (N, spatial..., C) array's axes in logical
    (N, C, spatial...) order."""
    return (0, rank - 1, *range(1, rank - 1))


def pixel_stride(x) -> int | None:
    """Elements from one pixel's channels to the next one's when ``x`` is stored as channels-last
    rows, else None."""
    if x.ndim != 4:
        return None
    n, c, h, w = x.shape
    s_n, s_c, s_h, s_w = (s // x.itemsize for s in x.strides)
    if (c > 1 and s_c != 1) or (w > 1 and s_w < c) or (h > 1 and s_h != w * s_w) or (n > 1 and s_n != h * s_h):
        return None
    return s_w if w > 1 else s_h if h > 1 else s_n if n > 1 else c
