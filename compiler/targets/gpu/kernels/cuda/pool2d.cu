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
#if VEC == 4
            float4 q = *(const float4*)p;
            float v[4] = {q.x, q.y, q.z, q.w};
#else
            ACC_T v[1] = {(ACC_T)p[0]};
#endif
            for (int j = 0; j < VEC; ++j) { {ACC} }
            count++;
        }
    }
#if VEC == 4
    float4 o;
    o.x = POOL_FINISH(acc[0]); o.y = POOL_FINISH(acc[1]); o.z = POOL_FINISH(acc[2]); o.w = POOL_FINISH(acc[3]);
    *(float4*)(y + i * 4) = o;
#else
    y[i] = ({T})(POOL_FINISH(acc[0]));
#endif
}
