"""One kernel per recurrent time step: the recurrent product and the cell update fused.

At small batch a step's recurrent product is a matrix-vector product (the word-language-model
rows: batch 1, hidden 200), so a cuBLAS GEMM plus a cell kernel is two launches per step for a few
microseconds of work: on the H200 the LSTM row replayed at 0.48x of PyTorch's cuDNN RNN in a CUDA
graph. Here one warp owns one hidden unit: it takes the dot products of h_prev with that unit's
rows of R (one per gate, read along their contiguous length), reduces them across the warp and
applies the cell, writing h (and c) for the step. Batches up to ``MAX_BATCH`` (the accumulators
live in registers); larger batches use the GEMM path, where a GEMM pays off anyway.

fp32 only; gate order as ONNX: LSTM i, o, f, c; GRU z, r, h (linear_before_reset = 1).
"""
from __future__ import annotations

import functools

import numpy as np

MAX_BATCH = 8
WARPS_PER_BLOCK = 2

_SOURCE = r"""
__device__ __forceinline__ float perfbot_sigmoid(float v) { return 1.f / (1.f + expf(-v)); }

/* acc[g][b] = sum_k h_prev[b, k] * R[g * H + unit, k] for G gates and NB batch rows, reduced
   over the warp. NB is a template argument so only the batch's accumulators exist and get
   reduced; the k loop is unrolled so a lane has several loads in flight (the step is bound by
   load latency, not arithmetic). */
template <int G, int NB>
__device__ __forceinline__ void perfbot_recurrent_dots(const float* __restrict__ R, const float* __restrict__ h_prev,
                                                        int H, int unit, int lane, float acc[G][NB]) {
    #pragma unroll
    for (int g = 0; g < G; ++g)
        #pragma unroll
        for (int b = 0; b < NB; ++b) acc[g][b] = 0.f;
    #pragma unroll 4
    for (int k = lane; k < H; k += 32) {
        float r[G];
        #pragma unroll
        for (int g = 0; g < G; ++g) r[g] = __ldg(R + (size_t)(g * H + unit) * H + k);
        #pragma unroll
        for (int b = 0; b < NB; ++b) {
            float hv = h_prev[(size_t)b * H + k];
            #pragma unroll
            for (int g = 0; g < G; ++g) acc[g][b] += r[g] * hv;
        }
    }
    #pragma unroll
    for (int g = 0; g < G; ++g)
        #pragma unroll
        for (int b = 0; b < NB; ++b)
            #pragma unroll
            for (int off = 16; off > 0; off >>= 1)
                acc[g][b] += __shfl_xor_sync(0xffffffffu, acc[g][b], off);
}

template <int NB>
__global__ void perfbot_lstm_step(const float* __restrict__ xw, const float* __restrict__ R,
        const float* __restrict__ h_prev, const float* __restrict__ c_prev,
        float* __restrict__ h_out, float* __restrict__ c_out, int H) {
    int unit = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (unit >= H) return;
    float acc[4][NB];
    perfbot_recurrent_dots<4, NB>(R, h_prev, H, unit, lane, acc);
    #pragma unroll
    for (int b = 0; b < NB; ++b) {
        if (lane == b) {
            const float* x = xw + (size_t)b * 4 * H;
            float gi = perfbot_sigmoid(x[unit] + acc[0][b]);
            float go = perfbot_sigmoid(x[H + unit] + acc[1][b]);
            float gf = perfbot_sigmoid(x[2 * H + unit] + acc[2][b]);
            float c = gf * c_prev[(size_t)b * H + unit] + gi * tanhf(x[3 * H + unit] + acc[3][b]);
            c_out[(size_t)b * H + unit] = c;
            h_out[(size_t)b * H + unit] = go * tanhf(c);
        }
    }
}

template <int NB>
__global__ void perfbot_gru_step(const float* __restrict__ xw, const float* __restrict__ R,
        const float* __restrict__ rb, int has_rb, const float* __restrict__ h_prev,
        float* __restrict__ h_out, int H) {
    int unit = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (unit >= H) return;
    float acc[3][NB];
    perfbot_recurrent_dots<3, NB>(R, h_prev, H, unit, lane, acc);
    float bz = has_rb ? rb[unit] : 0.f, br = has_rb ? rb[H + unit] : 0.f, bn = has_rb ? rb[2 * H + unit] : 0.f;
    #pragma unroll
    for (int b = 0; b < NB; ++b) {
        if (lane == b) {
            const float* x = xw + (size_t)b * 3 * H;
            float z = perfbot_sigmoid(x[unit] + acc[0][b] + bz);
            float r = perfbot_sigmoid(x[H + unit] + acc[1][b] + br);
            float n = tanhf(x[2 * H + unit] + r * (acc[2][b] + bn));
            h_out[(size_t)b * H + unit] = (1.f - z) * n + z * h_prev[(size_t)b * H + unit];
        }
    }
}
"""

@functools.lru_cache(maxsize=None)
def _function(name: str):
    """One instantiation (e.g. ``perfbot_lstm_step<1>``), compiled on first use only."""
    import cupy
    return cupy.RawModule(code=_SOURCE, options=("--std=c++14",), name_expressions=[name]).get_function(name)


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
