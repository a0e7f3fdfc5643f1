__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// x, y: (rows, D) packed; scale, bias: (D) or null. CACHE > 0: each lane keeps its CACHE
// elements of the row in registers, loaded once, all at the start.
extern "C" __global__ void layernorm_rows(const T* __restrict__ x, const T* __restrict__ scale,
        const T* __restrict__ bias, T* __restrict__ y, long long rows, int D, float eps) {
    const long long row = (long long)blockIdx.x * WARPS + threadIdx.y;
    if (row >= rows) return;                 // a whole warp leaves together
    const int lane = threadIdx.x;
    const T* xr = x + row * D;
    T* yr = y + row * D;
#if CACHE > 0
    float v[CACHE];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const int i = lane + 32 * k;
        v[k] = i < D ? (float)xr[i] : 0.0f;
        s += v[k];
    }
    const float mean = warp_sum(s) / D;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const float d = lane + 32 * k < D ? v[k] - mean : 0.0f;
        q += d * d;
    }
    const float inv = rsqrtf(warp_sum(q) / D + eps);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const int i = lane + 32 * k;
        if (i < D) {
            float o = (v[k] - mean) * inv;
            if (HAS_SCALE) o *= (float)scale[i];
            if (HAS_BIAS) o += (float)bias[i];
            yr[i] = (T)o;
        }
    }
#else
    float s = 0.0f;
    for (int i = lane; i < D; i += 32) s += (float)xr[i];
    const float mean = warp_sum(s) / D;
    float q = 0.0f;
    for (int i = lane; i < D; i += 32) { float d = (float)xr[i] - mean; q += d * d; }
    const float inv = rsqrtf(warp_sum(q) / D + eps);
    for (int i = lane; i < D; i += 32) {
        float v = ((float)xr[i] - mean) * inv;
        if (HAS_SCALE) v *= (float)scale[i];
        if (HAS_BIAS) v += (float)bias[i];
        yr[i] = (T)v;
    }
#endif
}
