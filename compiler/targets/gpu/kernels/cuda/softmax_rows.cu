// Softmax over rows (kernels/softmax_rows.py), after row_reduce.cu.
// x, y: (rows, D) packed.
extern "C" __global__ void softmax_rows(const T* __restrict__ x, T* __restrict__ y, long long rows, int D) {
    __shared__ float shared[32];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) return;                 // a whole row's lanes leave together
    const T* xr = x + row * D;
    float m = NEG_INF;
    for (int i = threadIdx.x; i < D; i += LANES) m = fmaxf(m, (float)xr[i]);
    m = row_reduce(m, true, shared);
    float s = 0.0f;
    for (int i = threadIdx.x; i < D; i += LANES) s += expf((float)xr[i] - m);
    s = row_reduce(s, false, shared);
    T* yr = y + row * D;
    if (LOG) {
        const float shift = m + logf(s);
        for (int i = threadIdx.x; i < D; i += LANES) yr[i] = (T)((float)xr[i] - shift);
    } else {
        const float inv = 1.0f / s;
        for (int i = threadIdx.x; i < D; i += LANES) yr[i] = (T)(expf((float)xr[i] - m) * inv);
    }
}
