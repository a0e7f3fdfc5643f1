// A convolution input (logical N, C, H, W; NCHW or channels-last, given by element strides) as
// channels-last pixels of CP channels: its C channels, then zeros. A thread a pixel, written with
// one aligned store. T, C, CP and IDX are #defines.
struct __align__(CP * sizeof(T)) Pack { T v[CP]; };

extern "C" __global__ void perfbot_pad_channels(const T* __restrict__ x, T* __restrict__ y, IDX pixels,
                                                IDX hw, IDX sn, IDX sc, IDX sp) {
    IDX p = (IDX)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pixels) return;
    IDX n = p / hw, q = p - n * hw;
    const T* xp = x + n * sn + q * sp;
    Pack o;
#pragma unroll
    for (int c = 0; c < CP; ++c) o.v[c] = c < C ? xp[c * sc] : (T)0.0f;
    *(Pack*)(y + p * CP) = o;
}
