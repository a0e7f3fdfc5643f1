// RMS normalisation over rows (kernels/rms_rows.py), after row_reduce.cu.
// x, y: (rows, D) packed; scale: (D).
extern "C" __global__ void rms_rows(const T* __restrict__ x, const ST* __restrict__ scale, T* __restrict__ y,
        long long rows, int D, float eps) {
    __shared__ float shared[32];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) return;                 // a whole row's lanes leave together
    const T* xr = x + row * D;
    float q = 0.0f;
    for (int i = threadIdx.x; i < D; i += LANES) { const float v = (float)xr[i]; q += v * v; }
    const float inv = rsqrtf(row_reduce(q, false, shared) / D + eps);
    T* yr = y + row * D;
    for (int i = threadIdx.x; i < D; i += LANES) yr[i] = (T)((float)xr[i] * inv * (float)scale[i]);
}
