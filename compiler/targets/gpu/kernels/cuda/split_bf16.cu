extern "C" __global__ void perfbot_split_last(const float* __restrict__ x, unsigned short* __restrict__ out,
                                              long long rows, int K, int KP, long long ldx, int lo) {
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {
        const float* src = x + row * ldx;
        unsigned short* dst = out + row * KP;
        for (int k = threadIdx.x; k < K; k += blockDim.x)
            perfbot_split_store(src[k], dst + k, K, lo);
        for (int k = 3 * K + threadIdx.x; k < KP; k += blockDim.x)
            dst[k] = 0;
    }
}

/* The same with four values per thread (K a multiple of 4, rows 16-byte aligned): one 16-byte
   load and three 8-byte stores per thread, against 4 + 3 x 2 bytes per access above (ResNet-50's
   channel splits took a third of its GPU time at ~1.7 TB/s). */
extern "C" __global__ void perfbot_split_last4(const float4* __restrict__ x, unsigned short* __restrict__ out,
                                               long long rows, int K, int KP, long long ldx4, int lo) {
    int K4 = K >> 2;
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {
        const float4* src = x + row * ldx4;
        unsigned short* dst = out + row * KP;
        for (int q = threadIdx.x; q < K4; q += blockDim.x)
            perfbot_split_store4(src[q], dst + 4 * q, K, lo);
        for (int k = 3 * K + threadIdx.x; k < KP; k += blockDim.x)
            dst[k] = 0;
    }
}

/* Rows of at most ten values (3K <= 30, so KP <= 32; a stem convolution's three colour
   channels): with a thread per value most of every warp idled and each wrote 2 bytes to a row
   of its own (ResNet-50's 64 x 224 x 224 x 3 input took 0.54 ms: ~0.26 TB/s read and written).
   Here a thread splits a whole row into shared memory, then the block's rows, contiguous in the
   output, go out as 16-byte stores. Launched with 256 threads. */
extern "C" __global__ void perfbot_split_narrow(const float* __restrict__ x, unsigned short* __restrict__ out,
                                                long long rows, int K, int KP, long long ldx, int lo) {
    __shared__ __align__(16) unsigned short staged[256 * 32];
    for (long long base = (long long)blockIdx.x * 256; base < rows; base += (long long)gridDim.x * 256) {
        long long row = base + threadIdx.x;
        unsigned short* mine = staged + threadIdx.x * KP;
        if (row < rows) {
            const float* src = x + row * ldx;
            for (int k = 0; k < K; ++k) {
                unsigned short hi, low;
                perfbot_split4(src[k], hi, low);
                mine[k] = lo == 0 ? low : hi;
                mine[K + k] = lo == 1 ? low : hi;
                mine[2 * K + k] = lo == 2 ? low : hi;
            }
            for (int k = 3 * K; k < KP; ++k)
                mine[k] = 0;
        }
        __syncthreads();
        long long count = rows - base < 256 ? rows - base : 256;
        int vectors = (int)(count * KP / 8);                     /* KP is a multiple of 8 */
        uint4* dst = (uint4*)(out + base * KP);
        const uint4* from = (const uint4*)staged;
        for (int v = threadIdx.x; v < vectors; v += 256)
            dst[v] = from[v];
        __syncthreads();
    }
}

/* The window gather: row = output pixel, columns (ky, kx, c) in each part. V = 4 takes four
   channels per thread (C a multiple of 4, x 16-byte aligned): one 16-byte load and three 8-byte
   stores, as perfbot_split_last4 (one value per thread took 29 % of VGG-16's batch-1 GPU time). */
template <int V>
__device__ void perfbot_im2col(const float* __restrict__ x, unsigned short* __restrict__ out,
        long long rows, int KP, int C, int H, int W, int OH, int OW, int KH, int KW,
        int SH, int SW, int PT, int PL, int DH, int DW, int lo) {
    int K = KH * KW * C;
    for (long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += (long long)gridDim.x * blockDim.y) {
        int ox = (int)(row % OW);
        long long rest = row / OW;
        int oy = (int)(rest % OH);
        long long n = rest / OH;
        unsigned short* dst = out + row * KP;
        for (int q = threadIdx.x; q < K / V; q += blockDim.x) {
            int k = V * q;
            int c = k % C, t = k / C;
            int kx = t % KW, ky = t / KW;
            int iy = oy * SH - PT + ky * DH, ix = ox * SW - PL + kx * DW;
            bool inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
            const float* p = x + ((n * H + iy) * W + ix) * C + c;
            if (V == 4)
                perfbot_split_store4(inside ? *(const float4*)p : make_float4(0.f, 0.f, 0.f, 0.f), dst + k, K, lo);
            else
                perfbot_split_store(inside ? *p : 0.0f, dst + k, K, lo);
        }
        for (int k = 3 * K + threadIdx.x; k < KP; k += blockDim.x)
            dst[k] = 0;
    }
}

#define PERFBOT_IM2COL(NAME, V) \
extern "C" __global__ void NAME(const float* x, unsigned short* out, long long rows, int KP, int C, int H, \
        int W, int OH, int OW, int KH, int KW, int SH, int SW, int PT, int PL, int DH, int DW, int lo) { \
    perfbot_im2col<V>(x, out, rows, KP, C, H, W, OH, OW, KH, KW, SH, SW, PT, PL, DH, DW, lo); }

PERFBOT_IM2COL(perfbot_im2col_split, 1)
PERFBOT_IM2COL(perfbot_im2col_split4, 4)
