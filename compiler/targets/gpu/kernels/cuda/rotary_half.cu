// Rotary position embedding, halves form, over the first 2 * half features of each head: for x of
// (B, H, S, D) in any strides and caches of (B or 1, S, half) packed, y (B, H, S, D) packed gets
//   y[..., j]        = cos * x[..., j] - sin * x[..., j + half]        (j < half)
//   y[..., j + half] = sin * x[..., j] + cos * x[..., j + half]
//   y[..., e]        = x[..., e]                                       (e >= 2 * half)
// One thread per pair or per feature handed on (D - half a row), fp32 arithmetic. cb: a cache's
// batch stride (0: one cache for the whole batch).
extern "C" __global__ void rotary_half(const T* __restrict__ x, const T* __restrict__ cs,
        const T* __restrict__ sn, T* __restrict__ y, long long items, int H, int S, int D, int half,
        long long sb, long long sh, long long ss, long long sd, long long cb) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= items) return;
    const int per_row = D - half;
    const int k = (int)(i % per_row);
    long long r = i / per_row;
    const int s = (int)(r % S);
    r /= S;
    const int h = (int)(r % H);
    const long long b = r / H;
    const T* xr = x + b * sb + (long long)h * sh + (long long)s * ss;
    T* yr = y + ((b * H + h) * (long long)S + s) * D;
    if (k >= half) {                                   // past the rotated features: as it is
        const int e = k + half;
        yr[e] = xr[(long long)e * sd];
        return;
    }
    const float x1 = (float)xr[(long long)k * sd];
    const float x2 = (float)xr[(long long)(k + half) * sd];
    const long long c = b * cb + (long long)s * half + k;
    const float co = (float)cs[c], si = (float)sn[c];
    yr[k] = (T)(co * x1 - si * x2);
    yr[k + half] = (T)(si * x1 + co * x2);
}
