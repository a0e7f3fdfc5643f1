// GroupNorm / InstanceNorm over groups of channels (kernels/norm_groups.py), after row_reduce.cu.
// Element i of row r (sample r / G, group r % G): its offset and its channel.
__device__ __forceinline__ long long element(long long r, int i, int G, int CPG, int S, int* channel) {
    const int g = (int)(r % G);
    if (CHANNELS_LAST) {
        const int s = i / CPG, j = i - s * CPG;
        *channel = g * CPG + j;
        return (r / G) * (long long)S * G * CPG + (long long)s * G * CPG + g * CPG + j;
    }
    *channel = g * CPG + i / S;
    return r * (long long)CPG * S + i;
}

extern "C" __global__ void norm_groups(const T* __restrict__ x, const ST* __restrict__ scale,
        const ST* __restrict__ bias, T* __restrict__ y, long long rows, int G, int CPG, int S, float eps) {
    __shared__ float shared[32];
    const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rows) return;                   // a whole row's lanes leave together
    const int D = CPG * S;
    int c;
    float s = 0.0f;
    for (int i = threadIdx.x; i < D; i += LANES) s += (float)x[element(r, i, G, CPG, S, &c)];
    const float mean = row_reduce(s, false, shared) / D;
    float q = 0.0f;
    for (int i = threadIdx.x; i < D; i += LANES) {
        const float d = (float)x[element(r, i, G, CPG, S, &c)] - mean;
        q += d * d;
    }
    const float inv = rsqrtf(row_reduce(q, false, shared) / D + eps);
    for (int i = threadIdx.x; i < D; i += LANES) {
        const long long at = element(r, i, G, CPG, S, &c);
        const int k = PER_GROUP ? (int)(r % G) : c;
        float v = ((float)x[at] - mean) * inv * (float)scale[k] + (float)bias[k];
        if (SWISH) v = v / (1.0f + expf(-v));
        y[at] = (T)v;
    }
}
