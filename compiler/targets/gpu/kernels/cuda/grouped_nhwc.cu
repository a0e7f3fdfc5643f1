__device__ __forceinline__ float activation(float v) {
    ACTIVATION
    return v;
}

// A grouped 2-D convolution, channels-last. Each group maps CG input channels to COG output
// channels; a thread takes VEC consecutive output channels of one group over a row of TW output
// pixels. For each window tap it holds that tap's CG x VEC weights in registers and reads the
// group's CG input channels of each of its pixels.
// x: (N, H, W, CIN); w: (KH, KW, CG, COUT) fp32; b: (COUT) or null; r, y: (N, OH, OW, COUT).
extern "C" __global__ void grouped_nhwc(const T* __restrict__ x, const float* __restrict__ w,
        const T* __restrict__ b, const T* __restrict__ r, T* __restrict__ y, IDX total,
        int CIN, int COUT, int H, int W, int OH, int OW, int PH, int PW) {
    IDX i = (IDX)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const int CV = COUT / VEC;
    const int tiles = (OW + TW - 1) / TW;
    const int c = (int)(i % CV) * VEC; IDX rest = i / CV;
    const int ow0 = (int)(rest % tiles) * TW; rest /= tiles;
    const int oh = (int)(rest % OH);
    const IDX n = rest / OH;
    const int g0 = (c / COG) * CG;           // the group's first input channel
    float acc[TW][VEC];
#pragma unroll
    for (int t = 0; t < TW; ++t)
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[t][j] = 0.0f;
    const int h0 = oh * SH - PH;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
        const int h = h0 + kh;
        if (h < 0 || h >= H) continue;
        const T* row = x + ((n * H + h) * (IDX)W) * CIN + g0;
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
            float wk[CG][VEC];
#pragma unroll
            for (int ci = 0; ci < CG; ++ci)
#pragma unroll
                for (int j = 0; j < VEC; ++j) wk[ci][j] = w[((kh * KW + kw) * CG + ci) * COUT + c + j];
#pragma unroll
            for (int t = 0; t < TW; ++t) {
                const int iw = (ow0 + t) * SW - PW + kw;
                if (iw < 0 || iw >= W) continue;
                const T* px = row + (IDX)iw * CIN;
#pragma unroll
                for (int ci = 0; ci < CG; ++ci) {
                    const float v = (float)px[ci];
#pragma unroll
                    for (int j = 0; j < VEC; ++j) acc[t][j] += v * wk[ci][j];
                }
            }
        }
    }
#pragma unroll
    for (int t = 0; t < TW; ++t) {
        const int ow = ow0 + t;
        if (ow >= OW) break;
        const IDX at = ((n * OH + oh) * (IDX)OW + ow) * COUT + c;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            float v = acc[t][j];
            if (HAS_BIAS) v += (float)b[c + j];
            if (HAS_RESIDUAL) v += (float)r[at + j];
            y[at + j] = (T)activation(v);
        }
    }
}
