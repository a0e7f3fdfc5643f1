extern "C" __global__ void perfbot_conv_epilogue4(float4* y, const float4* b, const float4* r,
                                                  long long rows, int K4, int flags) {
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {
        float4* yr = y + row * K4;
        const float4* rr = r + row * K4;
        for (int q = threadIdx.x; q < K4; q += blockDim.x) {
            float4 v = yr[q];
            if (flags & 1) { float4 c = b[q]; v.x += c.x; v.y += c.y; v.z += c.z; v.w += c.w; }
            if (flags & 2) { float4 c = rr[q]; v.x += c.x; v.y += c.y; v.z += c.z; v.w += c.w; }
            if (flags & 4) {                   /* NaN stays NaN, as NumPy's maximum keeps it */
                v.x = v.x < 0.0f ? 0.0f : v.x; v.y = v.y < 0.0f ? 0.0f : v.y;
                v.z = v.z < 0.0f ? 0.0f : v.z; v.w = v.w < 0.0f ? 0.0f : v.w;
            }
            yr[q] = v;
        }
    }
}
