// Template of the flat pointwise kernel: kernels/pointwise_flat.py fills in its upper-case
// placeholders before compiling it.
#include <cuda_fp16.h>
typedef __half float16;
template <typename T> struct __align__(VEC * sizeof(T)) Pack { T v[VEC]; };
extern "C" __global__ void NAME(PARAMS, OUT_T* __restrict__ out_, unsigned int n MODS) {
    const unsigned int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (i0 >= n) return;
    if (i0 + VEC <= n) {
VECTOR_LOADS
        Pack<OUT_T> packed;
#pragma unroll
        for (int u = 0; u < VEC; ++u) {
            const unsigned int i = i0 + u;
LANE_LOADS
            OUT_T out;
OPERATION
            packed.v[u] = out;
        }
        *(Pack<OUT_T>*)(out_ + i0) = packed;
        return;
    }
    for (unsigned int i = i0; i < n; ++i) {
LOADS
        OUT_T out;
OPERATION
        out_[i] = out;
    }
}
