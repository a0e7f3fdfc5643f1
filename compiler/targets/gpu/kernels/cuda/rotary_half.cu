// Rotary position embedding, halves form: for x of (B, H, S, D) in any strides and caches of
// (B or 1, S, D/2) packed, y (B, H, S, D) packed gets
//   y[..., j]        = cos * x[..., j] - sin * x[..., j + D/2]
//   y[..., j + D/2]  = sin * x[..., j] + cos * x[..., j + D/2]
// One thread per (b, h, s, j < D/2) pair, fp32 arithmetic. cb: a cache's batch stride (0: shared).
extern "C" __global__ void rotary_half(const T* __restrict__ x, const T* __restrict__ cs,
        const T* __restrict__ sn, T* __restrict__ y, long long pairs, int H, int S, int half,
        long long sb, long long sh, long long ss, long long sd, long long cb) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pairs) return;
    const int j = (int)(i % half);
    long long r = i / half;
    const int s = (int)(r % S);
    r /= S;
    const int h = (int)(r % H);
    const long long b = r / H;
    const T* xr = x + b * sb + (long long)h * sh + (long long)s * ss;
    const float x1 = (float)xr[(long long)j * sd];
    const float x2 = (float)xr[(long long)(j + half) * sd];
    const long long c = b * cb + (long long)s * half + j;
    const float co = (float)cs[c], si = (float)sn[c];
    T* yr = y + ((b * H + h) * (long long)S + s) * (2LL * half);
    yr[j] = (T)(co * x1 - si * x2);
    yr[j + half] = (T)(si * x1 + co * x2);
}
