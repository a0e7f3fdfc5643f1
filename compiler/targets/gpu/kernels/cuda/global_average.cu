// x: N images of HW pixels, pixel stride P, image stride S_N; block (LANES, ROWS) over
// (channel, pixel); grid (channel blocks, N, segments). FINAL: one segment, write the mean.
extern "C" __global__ void channel_sums(const T* __restrict__ x, float* __restrict__ partial,
        T* __restrict__ y, int C, int HW, long long P, long long S_N, int per_segment, float scale) {
    __shared__ float part[ROWS][LANES];
    const int c = blockIdx.x * LANES + threadIdx.x;
    const int n = blockIdx.y, segment = blockIdx.z;
    const int begin = segment * per_segment;
    const int end = min(HW, begin + per_segment);
    float acc = 0.0f;
    if (c < C) {
        const T* p = x + n * S_N + c;
        for (int i = begin + threadIdx.y; i < end; i += ROWS) acc += (float)p[i * P];
    }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y != 0 || c >= C) return;
    float sum = 0.0f;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) sum += part[r][threadIdx.x];
#if FINAL
    y[(long long)n * C + c] = (T)(sum * scale);
#else
    partial[((long long)n * gridDim.z + segment) * C + c] = sum;
#endif
}

// partial: (N, segments, C) -> y: (N, C), a thread per output.
extern "C" __global__ void segment_means(const float* __restrict__ partial, T* __restrict__ y,
        int C, int segments, int total, float scale) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const int n = i / C, c = i % C;
    const float* p = partial + (long long)n * segments * C + c;
    float sum = 0.0f;
    for (int s = 0; s < segments; ++s) sum += p[(long long)s * C];
    y[i] = (T)(sum * scale);
}
