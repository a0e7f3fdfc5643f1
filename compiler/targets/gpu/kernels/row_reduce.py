"""CUDA helpers the one-pass row kernels share: a row is reduced by LANES threads (a warp, or a
whole block of 256), sums and maxima in fp32, across warps through shared memory."""
from __future__ import annotations

THREADS = 256
WARP_ROW_MAX = 1024     # rows up to this many elements take a warp each, longer ones a block

REDUCE_SOURCE = r"""
#define NEG_INF (-__int_as_float(0x7f800000))     // NVRTC brings no math.h for INFINITY

__device__ __forceinline__ float combine(float a, float b, bool is_max) {
    return is_max ? fmaxf(a, b) : a + b;
}

// The sum (or maximum) of v over the LANES threads of a row; every lane gets it. With LANES >
// 32 the row is the whole block and every thread must call it (it synchronises).
__device__ __forceinline__ float row_reduce(float v, bool is_max, float* shared) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = combine(v, __shfl_xor_sync(0xffffffffu, v, o), is_max);
    if (LANES == 32) return v;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();                       // the previous call's readers are done with shared
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < LANES / 32 ? shared[lane] : (is_max ? NEG_INF : 0.0f);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = combine(v, __shfl_xor_sync(0xffffffffu, v, o), is_max);
    return v;
}
"""


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
