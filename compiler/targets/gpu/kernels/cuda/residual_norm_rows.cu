// Residual add + LayerNorm or RMSNorm over rows (kernels/residual_norm_rows.py), after row_reduce.cu.
__device__ __forceinline__ float summed(const T* a, const T* b, long long at) {
    return (float)(T)((float)a[at] + (float)b[at]);
}

// a, b, y, s: (rows, D) packed; scale, bias: (D), bias null unless HAS_BIAS. CACHE > 0: each lane
// keeps its CACHE elements of the row in registers, loaded once, all at the start.
extern "C" __global__ void residual_norm_rows(const T* __restrict__ a, const T* __restrict__ b,
        const T* __restrict__ scale, const T* __restrict__ bias, T* __restrict__ y, T* __restrict__ s,
        long long rows, int D, float eps) {
    __shared__ float shared[32];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) return;                 // a whole row's lanes leave together
    const long long base = row * D;
    float mean = 0.0f;
#if CACHE > 0
    float v[CACHE];
    float t = 0.0f;
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const int i = threadIdx.x + k * LANES;
        v[k] = i < D ? summed(a, b, base + i) : 0.0f;
        t += v[k];
    }
    if (!RMS) mean = row_reduce(t, false, shared) / D;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const float d = threadIdx.x + k * LANES < D ? v[k] - mean : 0.0f;
        q += d * d;
    }
    const float inv = rsqrtf(row_reduce(q, false, shared) / D + eps);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
        const int i = threadIdx.x + k * LANES;
        if (i < D) {
            if (WRITE_SUM) s[base + i] = (T)v[k];
            float o = (v[k] - mean) * inv * (float)scale[i];
            if (HAS_BIAS) o += (float)bias[i];
            y[base + i] = (T)o;
        }
    }
#else
    if (!RMS) {
        float t = 0.0f;
        for (int i = threadIdx.x; i < D; i += LANES) t += summed(a, b, base + i);
        mean = row_reduce(t, false, shared) / D;
    }
    float q = 0.0f;
    for (int i = threadIdx.x; i < D; i += LANES) { const float d = summed(a, b, base + i) - mean; q += d * d; }
    const float inv = rsqrtf(row_reduce(q, false, shared) / D + eps);
    for (int i = threadIdx.x; i < D; i += LANES) {
        const float v = summed(a, b, base + i);
        if (WRITE_SUM) s[base + i] = (T)v;
        float o = (v - mean) * inv * (float)scale[i];
        if (HAS_BIAS) o += (float)bias[i];
        y[base + i] = (T)o;
    }
#endif
}
