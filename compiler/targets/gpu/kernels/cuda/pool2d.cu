// VEC channels of one pixel a thread, moved as one aligned load/store of VEC * sizeof(T) bytes.
struct __align__(VEC * sizeof({T})) Pack { {T} v[VEC]; };

extern "C" __global__ void pool2d_{name}(const {T}* x, {T}* y, IDX total,
        int C, int H, int W, int OH, int OW, int KH, int KW, int SH, int SW,
        int PH, int PW, int DH, int DW, int include_pad, int pad_h_end, int pad_w_end) {
    IDX i = (IDX)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
#if NHWC
    // i walks (n, oh, ow, c / VEC); x is (n, h, w, c)
    int CV = C / VEC;
    int cv = (int)(i % CV); IDX r = i / CV;
    int ow = (int)(r % OW); r /= OW;
    int oh = (int)(r % OH); r /= OH;
    const {T}* xc = x + r * (IDX)H * W * C + cv * VEC;
    const int step = C;
#else
    int ow = (int)(i % OW); IDX r = i / OW;
    int oh = (int)(r % OH); r /= OH;
    const {T}* xc = x + r * (IDX)H * W;
    const int step = 1;
#endif
    int h0 = oh * SH - PH, w0 = ow * SW - PW;
    ACC_T acc[VEC];
    for (int j = 0; j < VEC; ++j) acc[j] = {INIT};
    int count = 0;
    for (int kh = 0; kh < KH; ++kh) {
        int h = h0 + kh * DH;
        for (int kw = 0; kw < KW; ++kw) {
            int w = w0 + kw * DW;
            if (h < 0 || h >= H || w < 0 || w >= W) {
                if (include_pad && h < H + pad_h_end && w < W + pad_w_end) count++;
                continue;
            }
            const {T}* p = xc + (IDX)(h * W + w) * step;
            const Pack q = *(const Pack*)p;
            ACC_T v[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) v[j] = (ACC_T)q.v[j];
#pragma unroll
            for (int j = 0; j < VEC; ++j) { {ACC} }
            count++;
        }
    }
    Pack o;
#pragma unroll
    for (int j = 0; j < VEC; ++j) o.v[j] = ({T})(POOL_FINISH(acc[j]));
    *(Pack*)(y + i * VEC) = o;
}
