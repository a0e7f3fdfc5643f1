template <typename U>
__device__ void perfbot_rows_copy(const U* __restrict__ src, U* __restrict__ dst, long long rows,
                                  int width, long long src_stride, long long dst_stride) {
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {
        const U* s = src + row * src_stride;
        U* d = dst + row * dst_stride;
        for (int k = threadIdx.x; k < width; k += blockDim.x)
            d[k] = s[k];
    }
}

#define PERFBOT_ROWS_COPY(NAME, U) \
extern "C" __global__ void NAME(const U* src, U* dst, long long rows, int width, long long ss, long long ds) { \
    perfbot_rows_copy<U>(src, dst, rows, width, ss, ds); }

PERFBOT_ROWS_COPY(perfbot_rows_copy16, uint4)
PERFBOT_ROWS_COPY(perfbot_rows_copy8, uint2)
PERFBOT_ROWS_COPY(perfbot_rows_copy4, unsigned int)
PERFBOT_ROWS_COPY(perfbot_rows_copy2, unsigned short)
PERFBOT_ROWS_COPY(perfbot_rows_copy1, unsigned char)
