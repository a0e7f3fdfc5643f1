"""Recurrent steps as fused kernels: the recurrent product and the cell update in one kernel per
time step, or every step of a sequence in one launch.

At small batch a step's recurrent product is a matrix-vector product (the word-language-model
rows: batch 1, hidden 200), so a cuBLAS GEMM plus a cell kernel is two launches per step for a few
microseconds of work: on the H200 the LSTM row replayed at 0.48x of PyTorch's cuDNN RNN in a CUDA
graph. Here one warp owns one hidden unit: it takes the dot products of h_prev with that unit's
rows of R (one per gate, read along their contiguous length), reduces them across the warp and
applies the cell, writing h (and c) for the step. Batches up to ``MAX_BATCH`` (the accumulators
live in registers); larger batches use the GEMM path, where a GEMM pays off anyway.

The whole-sequence kernels (``lstm_sequence``, ``gru_sequence``) go further: a step kernel spends
most of its few microseconds starting and reading its unit's rows of R from L2, so here each warp
loads its rows into registers once and stays resident for all steps. Up to hidden size 256 on
sm_90 the grid is one thread-block cluster: h goes to every block's shared memory and the
cluster's hardware barrier ends a step; wider (up to ``SEQ_MAX_HIDDEN``) a grid-wide barrier in
global memory does, h read back from the output (see the kernel source). Same dot-product order
as the step kernel, so the same results up to how the compiler fuses the cell's multiply-adds.

fp32 only; gate order as ONNX: LSTM i, o, f, c; GRU z, r, h (linear_before_reset = 1).
"""
from __future__ import annotations

import functools

import numpy as np

from .raw_source import cuda_source

MAX_BATCH = 8
WARPS_PER_BLOCK = 2

_SOURCE = cuda_source("rnn_step")

@functools.lru_cache(maxsize=None)
def _function(name: str):
    """One instantiation (e.g. ``perfbot_lstm_step<1>``), compiled on first use only."""
    import cupy
    return cupy.RawModule(code=_SOURCE, options=("--std=c++14", f"-DPERFBOT_RNN_CLUSTER={SEQ_CLUSTER}"),
                          name_expressions=[name]).get_function(name)


def applies(dtype: str, batch: int) -> bool:
    return dtype == "float32" and 1 <= batch <= MAX_BATCH


def _grid(h: int):
    threads = 32 * WARPS_PER_BLOCK
    return (-(-h // WARPS_PER_BLOCK),), (threads,)


def lstm_step(xw_t, r, h_prev, c_prev, h_out, c_out):
    """h_out, c_out = the LSTM cell of step input projection ``xw_t`` (B, 4H, biases included) and
    h_prev @ r.T, with ``r`` the direction's recurrent weights (4H, H) as ONNX lays them out."""
    b, h = h_prev.shape
    grid, block = _grid(h)
    _function(f"perfbot_lstm_step<{b}>")(grid, block, (xw_t, r, h_prev, c_prev, h_out, c_out,
                                                                    np.int32(h)))


def gru_step(xw_t, r, rb, h_prev, h_out):
    """h_out = the linear-before-reset GRU cell of ``xw_t`` (B, 3H, input bias included), h_prev @ r.T
    and the recurrent bias ``rb`` (3H, or None)."""
    b, h = h_prev.shape
    grid, block = _grid(h)
    _function(f"perfbot_gru_step<{b}>")(grid, block, (xw_t, r, rb if rb is not None else r,
                                                                   np.int32(rb is not None), h_prev, h_out,
                                                                   np.int32(h)))


# Whole-sequence kernels: warps per block (grid exchange); blocks of a cluster (cluster exchange:
# the portable cluster size, so one cluster holds up to 8 * 32 warps); the widest hidden size whose
# recurrent rows a warp holds in registers (4 gates x 16 values a lane for LSTM).
SEQ_WARPS = 8
SEQ_CLUSTER = 8
SEQ_MAX_HIDDEN = 512


@functools.lru_cache(maxsize=None)
def _multiprocessors() -> int:
    import cupy
    return int(cupy.cuda.Device().attributes["MultiProcessorCount"])


def _sequence_blocks(h: int) -> int:
    return -(-h // SEQ_WARPS)


def sequence_applies(dtype: str, batch: int, h: int) -> bool:
    """Whether a whole sequence runs as one launch: the step kernels' conditions, a hidden size
    whose rows fit in registers, and (for the grid exchange, the fallback) no more blocks than
    SMs. Every block waits for every other at each step, so all must be resident at once: one
    block per SM always is (a block of SEQ_WARPS warps fits an SM whatever its registers)."""
    return (applies(dtype, batch) and h <= SEQ_MAX_HIDDEN
            and _sequence_blocks(h) <= _multiprocessors())


def _cluster_threads(h: int) -> int:
    return 32 * -(-h // SEQ_CLUSTER)


@functools.lru_cache(maxsize=None)
def _cluster_fits(name: str, batch: int, h: int) -> bool:
    """Whether one cluster runs the sequence: clusters exist (sm_90 on), and a block of
    ceil(H / SEQ_CLUSTER) warps fits an SM with the kernel's registers."""
    import cupy
    if int(cupy.cuda.Device().compute_capability) < 90 or _cluster_threads(h) > 1024:
        return False
    return _cluster_threads(h) <= _function(f"{name}_cluster<{batch}, {-(-h // 32)}>").max_threads_per_block


def _sequence_launch(name: str, batch: int, h: int, steps: int, reverse: bool, args: tuple, exchange: str):
    """``exchange``: "cluster" where it fits, else the grid barrier; "grid" always the latter."""
    import cupy
    tail = (np.int32(h), np.int32(steps), np.int32(reverse))
    if exchange == "cluster" and _cluster_fits(name, batch, h):
        kernel = _function(f"{name}_cluster<{batch}, {-(-h // 32)}>")
        kernel((SEQ_CLUSTER,), (_cluster_threads(h),), args + tail, shared_mem=2 * batch * h * 4)
        return
    counter = cupy.zeros(1, dtype=cupy.uint32)    # zeroed on the stream, before the launch
    kernel = _function(f"{name}<{batch}, {-(-h // 32)}>")
    kernel((_sequence_blocks(h),), (32 * SEQ_WARPS,), args + (counter,) + tail)


def _y_step(y) -> np.int64:
    """Elements between consecutive steps of ``y`` (T, B, H), whose (B, H) slices are packed."""
    assert y.strides[1] == y.shape[2] * y.itemsize and y.strides[2] == y.itemsize
    return np.int64(y.strides[0] // y.itemsize)


def lstm_sequence(xw, r, h0, c0, y, c_out, reverse: bool, exchange: str = "cluster"):
    """Every step of one LSTM direction in one launch: ``xw`` (T, B, 4H) input projections with
    biases, ``r`` (4H, H) recurrent weights, ``h0``/``c0`` (B, H); ``y`` (T, B, H), a view whose
    steps may be strided (Y's slice for the direction), receives each step's h, ``c_out`` (B, H)
    the last c. ``exchange`` as ``_sequence_launch``."""
    t, b, _ = xw.shape
    h = h0.shape[1]
    _sequence_launch("perfbot_lstm_seq", b, h, t, reverse, (xw, r, h0, c0, y, _y_step(y), c_out), exchange)


def gru_sequence(xw, r, rb, h0, y, reverse: bool, exchange: str = "cluster"):
    """Every step of one linear-before-reset GRU direction in one launch (as ``lstm_sequence``;
    ``rb`` the (3H) recurrent bias or None)."""
    t, b, _ = xw.shape
    h = h0.shape[1]
    _sequence_launch("perfbot_gru_seq", b, h, t, reverse,
                     (xw, r, rb if rb is not None else r, np.int32(rb is not None), h0, y, _y_step(y)), exchange)
