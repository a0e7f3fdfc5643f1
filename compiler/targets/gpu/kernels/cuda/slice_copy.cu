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

#define DEFINE_ROWS_COPY(NAME, U) \
extern "C" __global__ void NAME(const U* src, U* dst, long long rows, int width, long long ss, long long ds) { \
    perfbot_rows_copy<U>(src, dst, rows, width, ss, ds); }

DEFINE_ROWS_COPY(perfbot_rows_copy16, uint4)
DEFINE_ROWS_COPY(perfbot_rows_copy8, uint2)
DEFINE_ROWS_COPY(perfbot_rows_copy4, unsigned int)
DEFINE_ROWS_COPY(perfbot_rows_copy2, unsigned short)
DEFINE_ROWS_COPY(perfbot_rows_copy1, unsigned char)

// Interleave `parts` (2..4) sources of `width` columns into packed rows of width * parts:
// dst[row][k * parts + j] = src_j[row * stride_j + k]. Consecutive threads take consecutive k, so
// every source is read and the destination written in whole warp-wide runs.
template <typename U>
__device__ void perfbot_interleave(const U* __restrict__ s0, const U* __restrict__ s1,
                                   const U* __restrict__ s2, const U* __restrict__ s3,
                                   long long t0, long long t1, long long t2, long long t3,
                                   U* __restrict__ dst, long long rows, int width, int parts) {
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {
        U* d = dst + row * width * parts;
        for (int k = threadIdx.x; k < width; k += blockDim.x) {
            U* o = d + (long long)k * parts;
            o[0] = s0[row * t0 + k];
            o[1] = s1[row * t1 + k];
            if (parts > 2) o[2] = s2[row * t2 + k];
            if (parts > 3) o[3] = s3[row * t3 + k];
        }
    }
}

#define DEFINE_INTERLEAVE(NAME, U) \
extern "C" __global__ void NAME(const U* s0, const U* s1, const U* s2, const U* s3, long long t0, \
                                long long t1, long long t2, long long t3, U* dst, long long rows, \
                                int width, int parts) { \
    perfbot_interleave<U>(s0, s1, s2, s3, t0, t1, t2, t3, dst, rows, width, parts); }

DEFINE_INTERLEAVE(perfbot_interleave8, unsigned long long)
DEFINE_INTERLEAVE(perfbot_interleave4, unsigned int)
DEFINE_INTERLEAVE(perfbot_interleave2, unsigned short)
DEFINE_INTERLEAVE(perfbot_interleave1, unsigned char)

// Gather whole rows: dst[row] = src[index[row]], rows of `width` units, a row's units spread over
// the threads of its lane group, so that reads and writes go in warp-wide runs of whole units.
template <typename U>
__device__ void perfbot_gather_rows(const U* __restrict__ src, const long long* __restrict__ index,
                                    U* __restrict__ dst, long long rows, int width) {
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {
        const U* s = src + index[row] * width;
        U* d = dst + row * width;
        for (int k = threadIdx.x; k < width; k += blockDim.x)
            d[k] = s[k];
    }
}

#define DEFINE_GATHER_ROWS(NAME, U) \
extern "C" __global__ void NAME(const U* src, const long long* index, U* dst, long long rows, int width) { \
    perfbot_gather_rows<U>(src, index, dst, rows, width); }

DEFINE_GATHER_ROWS(perfbot_gather_rows16, uint4)
DEFINE_GATHER_ROWS(perfbot_gather_rows8, uint2)
DEFINE_GATHER_ROWS(perfbot_gather_rows4, unsigned int)
DEFINE_GATHER_ROWS(perfbot_gather_rows2, unsigned short)
DEFINE_GATHER_ROWS(perfbot_gather_rows1, unsigned char)
