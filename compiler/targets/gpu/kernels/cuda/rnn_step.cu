__device__ __forceinline__ float perfbot_sigmoid(float v) { return 1.f / (1.f + expf(-v)); }

/* acc[g][b] = sum_k h_prev[b, k] * R[g * H + unit, k] for G gates and NB batch rows, reduced
   over the warp. NB is a template argument so only the batch's accumulators exist and get
   reduced; the k loop is unrolled so a lane has several loads in flight (the step is bound by
   load latency, not arithmetic). */
template <int G, int NB>
__device__ __forceinline__ void perfbot_recurrent_dots(const float* __restrict__ R, const float* __restrict__ h_prev,
                                                        int H, int unit, int lane, float acc[G][NB]) {
    #pragma unroll
    for (int g = 0; g < G; ++g)
        #pragma unroll
        for (int b = 0; b < NB; ++b) acc[g][b] = 0.f;
    #pragma unroll 4
    for (int k = lane; k < H; k += 32) {
        float r[G];
        #pragma unroll
        for (int g = 0; g < G; ++g) r[g] = __ldg(R + (size_t)(g * H + unit) * H + k);
        #pragma unroll
        for (int b = 0; b < NB; ++b) {
            float hv = h_prev[(size_t)b * H + k];
            #pragma unroll
            for (int g = 0; g < G; ++g) acc[g][b] += r[g] * hv;
        }
    }
    #pragma unroll
    for (int g = 0; g < G; ++g)
        #pragma unroll
        for (int b = 0; b < NB; ++b)
            #pragma unroll
            for (int off = 16; off > 0; off >>= 1)
                acc[g][b] += __shfl_xor_sync(0xffffffffu, acc[g][b], off);
}

template <int NB>
__global__ void perfbot_lstm_step(const float* __restrict__ xw, const float* __restrict__ R,
        const float* __restrict__ h_prev, const float* __restrict__ c_prev,
        float* __restrict__ h_out, float* __restrict__ c_out, int H) {
    int unit = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (unit >= H) return;
    float acc[4][NB];
    perfbot_recurrent_dots<4, NB>(R, h_prev, H, unit, lane, acc);
    #pragma unroll
    for (int b = 0; b < NB; ++b) {
        if (lane == b) {
            const float* x = xw + (size_t)b * 4 * H;
            float gi = perfbot_sigmoid(x[unit] + acc[0][b]);
            float go = perfbot_sigmoid(x[H + unit] + acc[1][b]);
            float gf = perfbot_sigmoid(x[2 * H + unit] + acc[2][b]);
            float c = gf * c_prev[(size_t)b * H + unit] + gi * tanhf(x[3 * H + unit] + acc[3][b]);
            c_out[(size_t)b * H + unit] = c;
            h_out[(size_t)b * H + unit] = go * tanhf(c);
        }
    }
}

template <int NB>
__global__ void perfbot_gru_step(const float* __restrict__ xw, const float* __restrict__ R,
        const float* __restrict__ rb, int has_rb, const float* __restrict__ h_prev,
        float* __restrict__ h_out, int H) {
    int unit = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (unit >= H) return;
    float acc[3][NB];
    perfbot_recurrent_dots<3, NB>(R, h_prev, H, unit, lane, acc);
    float bz = has_rb ? rb[unit] : 0.f, br = has_rb ? rb[H + unit] : 0.f, bn = has_rb ? rb[2 * H + unit] : 0.f;
    #pragma unroll
    for (int b = 0; b < NB; ++b) {
        if (lane == b) {
            const float* x = xw + (size_t)b * 3 * H;
            float z = perfbot_sigmoid(x[unit] + acc[0][b] + bz);
            float r = perfbot_sigmoid(x[H + unit] + acc[1][b] + br);
            float n = tanhf(x[2 * H + unit] + r * (acc[2][b] + bn));
            h_out[(size_t)b * H + unit] = (1.f - z) * n + z * h_prev[(size_t)b * H + unit];
        }
    }
}

/* ----- Whole sequences in one launch (persistent): each warp keeps its unit's rows of R in
   registers for all steps and every block stays resident until the last step; a step needs every
   unit's h of the step before. Two ways to hand h over, as "exchange" policies of one body:

   cluster (H <= 32 * PERFBOT_RNN_CLUSTER): the grid is one thread-block cluster. The owner of a
     unit's h stores it into every block's shared memory (distributed shared memory), then the
     cluster's hardware barrier separates the steps; a step reads h from its own shared memory.
     Two slots by step parity: step s reads the slot step s - 1 wrote and writes the other; the
     slot step s read is overwritten at step s + 1, after the barrier that ends step s, which
     every read of step s precedes.
   grid (wider H, one block per SM): step s reads h of step s - 1 straight from Y (through L2:
     L1 is not coherent across SMs) after a grid-wide barrier on a counter that only grows.

   The next step's input projections are loaded while the barrier is pending, so their latency
   hides behind the wait (perfbot_step_end). Warps past H take part in the barriers only.
   KPL = ceil(H / 32), the R values a lane holds per gate. */
template <int G, int KPL>
__device__ __forceinline__ void perfbot_hold_rows(const float* __restrict__ R, int H, int unit, int lane,
                                                  bool active, float (&r)[G][KPL]) {
    #pragma unroll
    for (int g = 0; g < G; ++g)
        #pragma unroll
        for (int i = 0; i < KPL; ++i) {
            int k = lane + 32 * i;
            r[g][i] = active && k < H ? R[(size_t)(g * H + unit) * H + k] : 0.f;
        }
}

struct perfbot_grid_exchange {
    const float* h0;
    const float* y;
    long long y_step;
    unsigned int* counter;
    int reverse;
    __device__ const float* h_prev(int s, int t) const {
        return s == 0 ? h0 : y + (reverse ? t + 1 : t - 1) * y_step;
    }
    __device__ float load(const float* p) const { return __ldcg(p); }
    static constexpr bool y_first = true;                  // Y carries h: written before the barrier
    __device__ void publish(int, int, float) const {}
    __device__ void wait(int) const {}
    __device__ void arrive(int s) const {                  // the (s + 1)-th arrival of every block
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(counter, 1u);
            while (*(volatile unsigned int*)counter < (unsigned int)(s + 1) * gridDim.x) { }
            __threadfence();
        }
        __syncthreads();
    }
};

#if __CUDA_ARCH__ >= 900      /* clusters: sm_90 and later */
__device__ __forceinline__ void perfbot_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

struct perfbot_cluster_exchange {
    float* slots;        // this block's shared memory: two slots of NB * H
    int n;               // NB * H
    __device__ const float* h_prev(int s, int) const { return slots + ((s + 1) & 1) * n; }
    __device__ float load(const float* p) const { return *p; }
    __device__ void publish(int s, int i, float h) const {  // h (element i of the slot) to every block
        unsigned long long generic = (unsigned long long)(slots + (s & 1) * n + i), shared;
        asm("cvta.to.shared.u64 %0, %1;" : "=l"(shared) : "l"(generic));
        unsigned int local = (unsigned int)shared;
        #pragma unroll
        for (unsigned int rank = 0; rank < PERFBOT_RNN_CLUSTER; ++rank) {
            unsigned int remote;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
            asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(h) : "memory");
        }
    }
    /* Y is not read back here: its store goes after the arrival, outside what the barrier's
       release has to wait for, in the shadow of the wait. */
    static constexpr bool y_first = false;
    __device__ void arrive(int) const { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
    __device__ void wait(int) const { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
    /* h0 into the slot step 0 reads; the barrier also makes sure every block of the cluster has
       started before any stores into its shared memory. Stores of the last step are skipped
       (no step reads them), so no block can receive one after it exits. */
    __device__ void start(const float* h0) const {
        for (int i = threadIdx.x; i < n; i += blockDim.x) slots[n + i] = h0[i];
        perfbot_cluster_sync();
    }
};
#endif

/* G gate dot products of the unit's rows with h of the previous step, for every batch row; the
   sums end up in every lane. */
template <int G, int NB, int KPL, class X>
__device__ __forceinline__ void perfbot_held_dots(const X& x, const float (&r)[G][KPL], const float* h_prev, int H,
                                                  int lane, float acc[G][NB]) {
    #pragma unroll
    for (int g = 0; g < G; ++g)
        #pragma unroll
        for (int b = 0; b < NB; ++b) acc[g][b] = 0.f;
    #pragma unroll
    for (int i = 0; i < KPL; ++i) {
        int k = lane + 32 * i;
        #pragma unroll
        for (int b = 0; b < NB; ++b) {
            float hv = k < H ? x.load(h_prev + (size_t)b * H + k) : 0.f;
            #pragma unroll
            for (int g = 0; g < G; ++g) acc[g][b] += r[g][i] * hv;
        }
    }
    #pragma unroll
    for (int g = 0; g < G; ++g)
        #pragma unroll
        for (int b = 0; b < NB; ++b)
            #pragma unroll
            for (int off = 16; off > 0; off >>= 1)
                acc[g][b] += __shfl_xor_sync(0xffffffffu, acc[g][b], off);
}

/* The owner lane's G gate inputs of step t: xw (T, NB, G*H). */
template <int G>
__device__ __forceinline__ void perfbot_step_inputs(const float* __restrict__ xw, int t, int nb, int H, int unit,
                                                    bool owner, int lane, float (&xv)[G]) {
    #pragma unroll
    for (int g = 0; g < G; ++g)
        xv[g] = owner ? __ldg(xw + ((size_t)t * nb + lane) * G * H + g * H + unit) : 0.f;
}

/* After a step's cell: the owner lane's h into Y, the next step's inputs into xv, and the step's
   barrier (none after the last step), in the order the exchange wants: the grid exchange reads h
   back from Y, so Y first and the loads in flight across the barrier; the cluster exchange does
   not, so its arrival goes first (a release waits for the thread's earlier accesses) and the
   store and loads overlap the wait. */
template <int G, class X>
__device__ __forceinline__ void perfbot_step_end(const X& x, int s, int T, float* y_at, bool owner, float h,
                                                 const float* __restrict__ xw, int t_next, int nb, int H,
                                                 int unit, int lane, float (&xv)[G]) {
    bool more = s + 1 < T;
    if (!X::y_first && more) x.arrive(s);
    if (owner) *y_at = h;
    if (more) perfbot_step_inputs<G>(xw, t_next, nb, H, unit, owner, lane, xv);
    if (X::y_first && more) x.arrive(s);
    if (more) x.wait(s);
}

/* The cells, applied by the owner lane of batch row b to its unit's gate sums. */
struct perfbot_lstm_cell {        // gates i, o, f, c; xw with both biases
    static constexpr int G = 4;
    float c;                      // the owner's c, kept from step to step
    template <int NB>
    __device__ float apply(const float (&xv)[4], const float (&acc)[4][NB], int b, float) {
        float gi = perfbot_sigmoid(xv[0] + acc[0][b]);
        float go = perfbot_sigmoid(xv[1] + acc[1][b]);
        float gf = perfbot_sigmoid(xv[2] + acc[2][b]);
        c = gf * c + gi * tanhf(xv[3] + acc[3][b]);
        return go * tanhf(c);
    }
};

struct perfbot_gru_cell {         // linear-before-reset; gates z, r, h; xw with the input bias
    static constexpr int G = 3;
    float bz, br, bn;             // the unit's recurrent biases
    template <int NB>
    __device__ float apply(const float (&xv)[3], const float (&acc)[3][NB], int b, float h) {
        float z = perfbot_sigmoid(xv[0] + acc[0][b] + bz);
        float rr = perfbot_sigmoid(xv[1] + acc[1][b] + br);
        float n = tanhf(xv[2] + rr * (acc[2][b] + bn));
        return (1.f - z) * n + z * h;
    }
};

/* A warp's unit; lane b < NB owns batch row b of it. */
struct perfbot_place {
    int unit, lane;
    bool active, owner;
    __device__ perfbot_place(int H, int nb)
        : unit((int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5)), lane(threadIdx.x & 31),
          active(unit < H), owner(unit < H && lane < nb) {}
};

/* Every step of one direction: xw (T, NB, G*H) input projections; y: step t's h at
   y + t * y_step (NB, H); h: the owner's h before step 0. */
template <int NB, int KPL, class Cell, class X>
__device__ __forceinline__ void perfbot_sequence(const X& x, Cell& cell, const perfbot_place& p,
        const float* __restrict__ xw, const float* __restrict__ R, float h, float* y, long long y_step,
        int H, int T, int reverse) {
    constexpr int G = Cell::G;
    float r[G][KPL];
    perfbot_hold_rows<G, KPL>(R, H, p.unit, p.lane, p.active, r);
    float xv[G];
    perfbot_step_inputs<G>(xw, reverse ? T - 1 : 0, NB, H, p.unit, p.owner, p.lane, xv);
    for (int s = 0; s < T; ++s) {
        int t = reverse ? T - 1 - s : s;
        if (p.active) {
            float acc[G][NB];
            perfbot_held_dots<G, NB, KPL>(x, r, x.h_prev(s, t), H, p.lane, acc);
            #pragma unroll
            for (int b = 0; b < NB; ++b) {
                if (p.lane == b) {
                    h = cell.template apply<NB>(xv, acc, b, h);
                    if (s + 1 < T) x.publish(s, b * H + p.unit, h);
                }
            }
        }
        perfbot_step_end<G>(x, s, T, y + t * y_step + (size_t)p.lane * H + p.unit, p.owner, h, xw,
                            reverse ? t - 1 : t + 1, NB, H, p.unit, p.lane, xv);
    }
}

/* c0, c_out: (NB, H), the first and the last step's c. */
template <int NB, int KPL, class X>
__device__ __forceinline__ void perfbot_lstm_body(const X& x, const float* __restrict__ xw,
        const float* __restrict__ R, const float* __restrict__ c0, float* y, long long y_step,
        float* __restrict__ c_out, int H, int T, int reverse) {
    perfbot_place p(H, NB);
    perfbot_lstm_cell cell{p.owner ? c0[(size_t)p.lane * H + p.unit] : 0.f};
    perfbot_sequence<NB, KPL>(x, cell, p, xw, R, 0.f, y, y_step, H, T, reverse);
    if (p.owner) c_out[(size_t)p.lane * H + p.unit] = cell.c;
}

/* rb: (3H) recurrent bias (has_rb 0: none). */
template <int NB, int KPL, class X>
__device__ __forceinline__ void perfbot_gru_body(const X& x, const float* __restrict__ xw,
        const float* __restrict__ R, const float* __restrict__ rb, int has_rb, const float* __restrict__ h0,
        float* y, long long y_step, int H, int T, int reverse) {
    perfbot_place p(H, NB);
    bool biased = p.active && has_rb;
    perfbot_gru_cell cell{biased ? rb[p.unit] : 0.f, biased ? rb[H + p.unit] : 0.f, biased ? rb[2 * H + p.unit] : 0.f};
    float h = p.owner ? h0[(size_t)p.lane * H + p.unit] : 0.f;
    perfbot_sequence<NB, KPL>(x, cell, p, xw, R, h, y, y_step, H, T, reverse);
}

/* Entry points: counter is one zeroed word; the cluster kernels take 2 * NB * H floats of
   dynamic shared memory and a grid of exactly one cluster. */
template <int NB, int KPL>
__global__ void perfbot_lstm_seq(const float* __restrict__ xw, const float* __restrict__ R,
        const float* __restrict__ h0, const float* __restrict__ c0, float* y, long long y_step,
        float* __restrict__ c_out, unsigned int* counter, int H, int T, int reverse) {
    perfbot_grid_exchange x{h0, y, y_step, counter, reverse};
    perfbot_lstm_body<NB, KPL>(x, xw, R, c0, y, y_step, c_out, H, T, reverse);
}

template <int NB, int KPL>
__global__ void perfbot_gru_seq(const float* __restrict__ xw, const float* __restrict__ R,
        const float* __restrict__ rb, int has_rb, const float* __restrict__ h0, float* y,
        long long y_step, unsigned int* counter, int H, int T, int reverse) {
    perfbot_grid_exchange x{h0, y, y_step, counter, reverse};
    perfbot_gru_body<NB, KPL>(x, xw, R, rb, has_rb, h0, y, y_step, H, T, reverse);
}

#if __CUDA_ARCH__ >= 900
template <int NB, int KPL>
__global__ void __cluster_dims__(PERFBOT_RNN_CLUSTER, 1, 1) perfbot_lstm_seq_cluster(
        const float* __restrict__ xw, const float* __restrict__ R, const float* __restrict__ h0,
        const float* __restrict__ c0, float* y, long long y_step, float* __restrict__ c_out, int H, int T,
        int reverse) {
    extern __shared__ float perfbot_h_slots[];
    perfbot_cluster_exchange x{perfbot_h_slots, NB * H};
    x.start(h0);
    perfbot_lstm_body<NB, KPL>(x, xw, R, c0, y, y_step, c_out, H, T, reverse);
}

template <int NB, int KPL>
__global__ void __cluster_dims__(PERFBOT_RNN_CLUSTER, 1, 1) perfbot_gru_seq_cluster(
        const float* __restrict__ xw, const float* __restrict__ R, const float* __restrict__ rb, int has_rb,
        const float* __restrict__ h0, float* y, long long y_step, int H, int T, int reverse) {
    extern __shared__ float perfbot_h_slots[];
    perfbot_cluster_exchange x{perfbot_h_slots, NB * H};
    x.start(h0);
    perfbot_gru_body<NB, KPL>(x, xw, R, rb, has_rb, h0, y, y_step, H, T, reverse);
}
#endif
