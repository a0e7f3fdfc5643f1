__device__ __forceinline__ unsigned short perfbot_bf16_bits(float v) {
    unsigned int u = __float_as_uint(v);
    if ((u & 0x7f800000u) == 0x7f800000u)          /* inf stays inf, NaN stays (quiet) NaN */
        return (unsigned short)((u >> 16) | ((u & 0x007fffffu) ? 0x40u : 0u));
    unsigned int r = u + 0x7fffu + ((u >> 16) & 1u);
    if ((r & 0x7f800000u) == 0x7f800000u)          /* rounding past the largest finite: truncate */
        r = u;
    return (unsigned short)(r >> 16);
}

__device__ __forceinline__ void perfbot_split_store(float v, unsigned short* dst, int K, int lo) {
    unsigned short hi = perfbot_bf16_bits(v), low;
    if ((hi & 0x7f80u) == 0x7f80u)                 /* inf: lo 0; NaN: lo NaN */
        low = (unsigned short)((hi & 0x8000u) | ((hi & 0x7fu) ? 0x7fc0u : 0u));
    else
        low = perfbot_bf16_bits(v - __uint_as_float(((unsigned int)hi) << 16));
    dst[0] = lo == 0 ? low : hi;
    dst[K] = lo == 1 ? low : hi;
    dst[2 * K] = lo == 2 ? low : hi;
}

__device__ __forceinline__ void perfbot_split4(float v, unsigned short& hi, unsigned short& low) {
    hi = perfbot_bf16_bits(v);
    if ((hi & 0x7f80u) == 0x7f80u)
        low = (unsigned short)((hi & 0x8000u) | ((hi & 0x7fu) ? 0x7fc0u : 0u));
    else
        low = perfbot_bf16_bits(v - __uint_as_float(((unsigned int)hi) << 16));
}

__device__ __forceinline__ void perfbot_split_store4(float4 v, unsigned short* dst, int K, int lo) {
    ushort4 h, l;
    perfbot_split4(v.x, h.x, l.x);
    perfbot_split4(v.y, h.y, l.y);
    perfbot_split4(v.z, h.z, l.z);
    perfbot_split4(v.w, h.w, l.w);
    *(ushort4*)dst = lo == 0 ? l : h;
    *(ushort4*)(dst + K) = lo == 1 ? l : h;
    *(ushort4*)(dst + 2 * K) = lo == 2 ? l : h;
}
