"""Copy a packed (rows, width) array into a column slice of a wider (rows, stride) one: how a
channels-last concatenation writes each input into its channel range. Interleave the columns of
a few such arrays into one: how a concatenation followed by a channel shuffle writes its inputs.
Gather whole rows of a packed array by a row index: how a rearrangement found at compile time
(a roll, then a window partition) moves runs of channels.

CuPy's strided copy (``dst[..., a:b] = src``) runs its index math in 64 bits over every axis, per
element: Inception-v3's concatenations took 0.52 ms of its ~8.6 ms per fp32 batch of 32 on the
H200 that way. Here rows are spread over blocks and threads, a row's bytes over threads, in the
widest unit (16, 8, 4, 2 or 1 bytes) that every row start, slice offset and pointer allows: no
division per element, and 16-byte accesses wherever channel counts are multiples of four fp32
(or eight fp16) values.
"""
from __future__ import annotations

import functools

import numpy as np

from .raw_source import cuda_source
from .row_grid import row_grid

_SOURCE = cuda_source("slice_copy")


@functools.lru_cache(maxsize=None)
def _module():
    import cupy
    return cupy.RawModule(code=_SOURCE, options=("--std=c++14",))


def unit_bytes(*quantities: int) -> int:
    """The widest access unit dividing every byte count and address given."""
    for unit in (16, 8, 4, 2):
        if all(int(q) % unit == 0 for q in quantities):
            return unit
    return 1


def into_columns(dst, src, offset: int) -> None:
    """``dst[:, offset:offset + src.shape[1]] = src`` for a packed 2-D ``src`` and a 2-D ``dst``
    with packed rows (any row stride); both the same dtype."""
    rows, width = src.shape
    if rows == 0 or width == 0:
        return
    item = src.itemsize
    if src.dtype != dst.dtype or src.strides[1] != item or dst.strides[1] != item or dst.shape[0] != rows \
            or offset + width > dst.shape[1]:
        raise ValueError("into_columns wants packed rows of one dtype, within the destination")
    row_bytes, src_stride, dst_stride = width * item, src.strides[0], dst.strides[0]
    dst_ptr = dst.data.ptr + offset * item
    unit = unit_bytes(row_bytes, src_stride, dst_stride, src.data.ptr, dst_ptr)
    units = row_bytes // unit
    _module().get_function(f"perfbot_rows_copy{unit}")(
        *row_grid(rows, units),
        (np.uint64(src.data.ptr), np.uint64(dst_ptr), np.int64(rows), np.int32(units), np.int64(src_stride // unit),
         np.int64(dst_stride // unit)))


MAX_PARTS = 4   # sources of one interleave launch (pointers passed as arguments, none uploaded)


def interleave_columns(dst, srcs) -> None:
    """``dst[:, k * len(srcs) + j] = srcs[j][:, k]`` for a packed 2-D ``dst`` and 2-D ``srcs`` of one
    width with packed rows (any row stride); all the same dtype."""
    rows, width = srcs[0].shape
    parts = len(srcs)
    item = dst.itemsize
    if not 2 <= parts <= MAX_PARTS or dst.shape != (rows, width * parts) or not dst.flags.c_contiguous \
            or any(s.shape != (rows, width) or s.dtype != dst.dtype or s.strides[1] != item for s in srcs):
        raise ValueError("interleave_columns wants 2 to 4 sources of one shape and dtype with packed rows")
    if rows == 0 or width == 0:
        return
    padded = list(srcs) + [srcs[0]] * (MAX_PARTS - parts)
    _module().get_function(f"perfbot_interleave{item}")(
        *row_grid(rows, width),
        (*(np.uint64(s.data.ptr) for s in padded), *(np.int64(s.strides[0] // item) for s in padded),
         np.uint64(dst.data.ptr), np.int64(rows), np.int32(width), np.int32(parts)))


def gather_rows(dst, src, index) -> None:
    """``dst[r] = src[index[r]]`` for packed 2-D ``src`` and ``dst`` of one dtype and width and a
    device int64 vector ``index`` of valid row numbers (made at compile time; not checked here)."""
    rows, width = dst.shape
    if src.dtype != dst.dtype or src.ndim != 2 or src.shape[1] != width or not src.flags.c_contiguous \
            or not dst.flags.c_contiguous or index.shape != (rows,) or index.dtype != np.int64:
        raise ValueError("gather_rows wants packed rows of one dtype and width, and an int64 row index")
    if rows == 0 or width == 0:
        return
    row_bytes = width * src.itemsize
    unit = unit_bytes(row_bytes, src.data.ptr, dst.data.ptr)
    units = row_bytes // unit
    _module().get_function(f"perfbot_gather_rows{unit}")(
        *row_grid(rows, units),
        (np.uint64(src.data.ptr), np.uint64(index.data.ptr), np.uint64(dst.data.ptr), np.int64(rows), np.int32(units)))
