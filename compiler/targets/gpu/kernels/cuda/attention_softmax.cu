// Attention's fused scale, mask and softmax over score rows (kernels/attention_softmax.py).
#define NEG_INF __int_as_float(0xff800000)
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// s, p: (rows = B*H*Q, K) packed; mask: element strides ms (b, h, q, k), or null.
extern "C" __global__ void attention_softmax(const T* __restrict__ s, const M* __restrict__ mask,
        T* __restrict__ p, long long rows, int H, int Q, int K, float scale,
        long long m0, long long m1, long long m2, long long m3) {
    const long long row = (long long)blockIdx.x * WARPS + threadIdx.y;
    if (row >= rows) return;                 // a whole warp leaves together
    const int lane = threadIdx.x;
    const int qi = (int)(row % Q);
    const long long bh = row / Q;
    const T* sr = s + row * K;
    const M* mr = HAS_MASK ? mask + (bh / H) * m0 + (bh % H) * m1 + qi * m2 : nullptr;
    const int end = CAUSAL ? min(K, qi + 1) : K;
    float top = NEG_INF;
    for (int j = lane; j < end; j += 32) {
        float v = (float)sr[j] * scale;
        if (HAS_MASK) v += (float)mr[j * m3];
        top = fmaxf(top, v);
    }
    top = warp_max(top);
    const float shift = top == NEG_INF ? 0.0f : top;
    float total = 0.0f;
    for (int j = lane; j < end; j += 32) {
        float v = (float)sr[j] * scale;
        if (HAS_MASK) v += (float)mr[j * m3];
        total += EXP(v - shift);
    }
    total = warp_sum(total);
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;
    T* pr = p + row * K;
    for (int j = lane; j < K; j += 32) {
        float v = (float)sr[j] * scale;
        if (HAS_MASK) v += (float)mr[j * m3];
        pr[j] = (T)(j < end ? EXP(v - shift) * inv : 0.0f);
    }
}
