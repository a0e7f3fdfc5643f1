template <int BYTES> struct Raw;
template <> struct Raw<2> { typedef unsigned short t; };
template <> struct Raw<4> { typedef unsigned int t; };
template <> struct Raw<8> { typedef uint2 t; };
template <> struct Raw<16> { typedef uint4 t; };
typedef Raw<VEC * sizeof(T)>::t Pack;

__device__ __forceinline__ void load(const T* p, float* v) {
    Pack raw = *(const Pack*)p;
    const T* e = (const T*)&raw;
#pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = (float)e[j];
}

__device__ __forceinline__ float activation(float v) {
    ACTIVATION
    return v;
}

// The activation of the convolution's input, applied to each element read inside the image
// (padding stays zero: the model pads the activated tensor).
__device__ __forceinline__ float prologue(float v) {
    PROLOGUE
    return v;
}

// x: (N, H, W, C); w: (KH, KW, C) fp32; y and r: (N, OH, OW, C); b: (C) or null.
extern "C" __global__ void depthwise_nhwc(const T* __restrict__ x, const float* __restrict__ w,
        const T* __restrict__ b, const T* __restrict__ r, T* __restrict__ y, IDX total,
        int C, int H, int W, int OH, int OW, int PH, int PW) {
    IDX i = (IDX)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const int CV = C / VEC;
    const int tiles = (OW + TW - 1) / TW;
    const int c = (int)(i % CV) * VEC; IDX rest = i / CV;
    const int ow0 = (int)(rest % tiles) * TW; rest /= tiles;
    const int oh = (int)(rest % OH);
    const IDX n = rest / OH;
    float acc[TW][VEC];
#pragma unroll
    for (int t = 0; t < TW; ++t)
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[t][j] = 0.0f;
    const int h0 = oh * SH - PH, w0 = ow0 * SW - PW;
    const int span = (TW - 1) * SW + KW;    // input pixels the row of TW outputs reads
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
        const int h = h0 + kh;
        if (h < 0 || h >= H) continue;
        const T* row = x + ((n * H + h) * (IDX)W) * C + c;
        float wk[KW][VEC];
#pragma unroll
        for (int kw = 0; kw < KW; ++kw)
#pragma unroll
            for (int j = 0; j < VEC; ++j) wk[kw][j] = w[(kh * KW + kw) * C + c + j];
#pragma unroll
        for (int s = 0; s < span; ++s) {
            const int iw = w0 + s;
            if (iw < 0 || iw >= W) continue;
            float v[VEC];
            load(row + (IDX)iw * C, v);
#pragma unroll
            for (int j = 0; j < VEC; ++j) v[j] = prologue(v[j]);
#pragma unroll
            for (int t = 0; t < TW; ++t) {
                const int kw = s - t * SW;     // resolved at compile time: s, t unrolled
                if (kw < 0 || kw >= KW) continue;
#pragma unroll
                for (int j = 0; j < VEC; ++j) acc[t][j] += v[j] * wk[kw][j];
            }
        }
    }
    float bias[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) bias[j] = 0.0f;
    if (HAS_BIAS) load(b + c, bias);
#pragma unroll
    for (int t = 0; t < TW; ++t) {
        const int ow = ow0 + t;
        if (ow >= OW) break;
        const IDX at = ((n * OH + oh) * (IDX)OW + ow) * C + c;
        float res[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) res[j] = 0.0f;
        if (HAS_RESIDUAL) load(r + at, res);
        Pack raw;
        T* e = (T*)&raw;
#pragma unroll
        for (int j = 0; j < VEC; ++j) e[j] = (T)activation(acc[t][j] + bias[j] + res[j]);
        *(Pack*)(y + at) = raw;
    }
}
