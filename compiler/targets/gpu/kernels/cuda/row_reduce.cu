// Row reductions the one-pass row kernels share (kernels/row_reduce.py): LANES threads a row.
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
