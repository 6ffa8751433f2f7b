// Softmax row-kernel probe (bench/softmax_rows_probe.py builds and runs it):
// f32 rows held in registers by groups of G lanes (I 16-byte vectors per
// lane, rows of G * 4 * I values), in the launch and load forms below, to see
// which one moves the bytes fastest under compare_torch.py's timer.
// - plain:   a block of 4 warps per 4 * 32 / G rows, as many blocks as row
//            sets (the block scheduler balances the tail).
// - persist: a one-wave grid; lane group g takes rows g, g + U, g + 2U, ...
//            with U chosen so that every group gets the same number of rows
//            (the last round is full). PIPE: the next row's loads are issued
//            before the current row's reductions (two register buffers).
// - cp.async: the one-wave grid, each lane copying its own next S - 1 rows'
//            vectors into shared memory ahead of the row it reduces, so no
//            lane waits on another and no barrier is needed.
// LD = 1 loads with ld.global.nc.L1::no_allocate.L2::256B, LD = 0 plainly.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 128;  // 4 warps per block
constexpr int kWarps = kThreads / 32;
constexpr float kLog2e = 1.4426950408889634f;

template <int LD>
__device__ __forceinline__ float4 ld16(const float4* p) {
    if constexpr (LD == 0) {
        return *p;
    } else {
        float4 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "l"(p));
        return v;
    }
}

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

template <int G>
__device__ __forceinline__ float gmax(float v) {
#pragma unroll
    for (int o = G / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o, G));
    return v;
}

template <int G>
__device__ __forceinline__ float gsum(float v) {
#pragma unroll
    for (int o = G / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o, G);
    return v;
}

// (I, 4) values of one row per lane -> softmax values, exponents kept.
template <int G, int I>
__device__ __forceinline__ void softmax_regs(float4 (&v)[I]) {
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < I; ++i) m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
    m = gmax<G>(m);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < I; ++i) {
        v[i].x = ex2((v[i].x - m) * kLog2e);
        v[i].y = ex2((v[i].y - m) * kLog2e);
        v[i].z = ex2((v[i].z - m) * kLog2e);
        v[i].w = ex2((v[i].w - m) * kLog2e);
        s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
    }
    const float inv = 1.0f / gsum<G>(s);
#pragma unroll
    for (int i = 0; i < I; ++i) {
        v[i].x *= inv;
        v[i].y *= inv;
        v[i].z *= inv;
        v[i].w *= inv;
    }
}

template <int G, int I, int LD>
__device__ __forceinline__ void load_row(const float4* x, int64_t row, int64_t rows, int lane, float4 (&v)[I]) {
    const float4* xr = x + row * (G * I);
#pragma unroll
    for (int i = 0; i < I; ++i) v[i] = row < rows ? ld16<LD>(xr + i * G + lane) : float4{0.f, 0.f, 0.f, 0.f};
}

template <int G, int I>
__device__ __forceinline__ void finish_row(float4* y, int64_t row, int64_t rows, int lane, float4 (&v)[I]) {
    softmax_regs<G, I>(v);
    if (row >= rows) return;
    float4* yr = y + row * (G * I);
#pragma unroll
    for (int i = 0; i < I; ++i) yr[i * G + lane] = v[i];
}

template <int G, int I, int LD, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) k_plain(const float4* __restrict__ x, float4* __restrict__ y,
                                                          int64_t rows) {
    const int lane = threadIdx.x % G;
    const int64_t row = int64_t(blockIdx.x) * (kThreads / G) + threadIdx.x / G;
    float4 v[I];
    load_row<G, I, LD>(x, row, rows, lane, v);
    finish_row<G, I>(y, row, rows, lane, v);
}

// Group g takes rows g + j * U for j < k (U * k >= rows).
template <int G, int I, int LD, bool PIPE, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) k_persist(const float4* __restrict__ x, float4* __restrict__ y,
                                                            int64_t rows, int64_t U, int k) {
    const int lane = threadIdx.x % G;
    const int64_t g = int64_t(blockIdx.x) * (kThreads / G) + threadIdx.x / G;
    if constexpr (!PIPE) {
        for (int j = 0; j < k; ++j) {
            float4 v[I];
            load_row<G, I, LD>(x, g + j * U, rows, lane, v);
            finish_row<G, I>(y, g + j * U, rows, lane, v);
        }
    } else {
        float4 a[I], b[I];
        load_row<G, I, LD>(x, g, rows, lane, a);
        for (int j = 0; j < k; j += 2) {
            if (j + 1 < k) load_row<G, I, LD>(x, g + (j + 1) * U, rows, lane, b);
            finish_row<G, I>(y, g + j * U, rows, lane, a);
            if (j + 1 >= k) break;
            if (j + 2 < k) load_row<G, I, LD>(x, g + (j + 2) * U, rows, lane, a);
            finish_row<G, I>(y, g + (j + 1) * U, rows, lane, b);
        }
    }
}

__device__ __forceinline__ void cp16(void* s, const void* gp, bool pred) {
    const unsigned sa = unsigned(__cvta_generic_to_shared(s));
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(sa), "l"(gp), "r"(pred ? 16 : 0)
                 : "memory");
}

// Shared memory: (kWarps, S, I, 32) vectors; each lane reads back only what it copied.
template <int G, int I, int S>
__global__ void __launch_bounds__(kThreads) k_cp(const float4* __restrict__ x, float4* __restrict__ y, int64_t rows,
                                                 int64_t U, int k) {
    extern __shared__ float4 smem[];
    const int lane = threadIdx.x % G;
    const int64_t g = int64_t(blockIdx.x) * (kThreads / G) + threadIdx.x / G;
    float4* mine = smem + (threadIdx.x / 32) * S * I * 32 + threadIdx.x % 32;
    auto issue = [&](int j) {
        const int64_t row = g + j * U;
        const bool ok = j < k && row < rows;
        const float4* xr = x + (ok ? row : 0) * (G * I);
#pragma unroll
        for (int i = 0; i < I; ++i) cp16(mine + ((j % S) * I + i) * 32, xr + i * G + lane, ok);
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
#pragma unroll
    for (int j = 0; j < S - 1; ++j) issue(j);
    for (int j = 0; j < k; ++j) {
        issue(j + S - 1);
        asm volatile("cp.async.wait_group %0;" ::"n"(S - 1) : "memory");
        float4 v[I];
#pragma unroll
        for (int i = 0; i < I; ++i) v[i] = mine[((j % S) * I + i) * 32];
        finish_row<G, I>(y, g + j * U, rows, lane, v);
    }
}

int g_sms = 0;

template <class K>
int occupancy(K kernel, size_t smem) {
    if (smem) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem);
    return per_sm;
}

// One-wave balanced launch: k rows per group, U groups.
template <int G, class K>
void launch_wave(K kernel, size_t smem, const float4* x, float4* y, int64_t rows, cudaStream_t s) {
    constexpr int kGroupsPerBlock = kThreads / G;
    const int64_t cap = int64_t(occupancy(kernel, smem)) * g_sms * kGroupsPerBlock;
    const int k = int((rows + cap - 1) / cap);
    int64_t U = (rows + k - 1) / k;
    U = (U + kGroupsPerBlock - 1) / kGroupsPerBlock * kGroupsPerBlock;
    kernel<<<unsigned(U / kGroupsPerBlock), kThreads, smem, s>>>(x, y, rows, U, k);
}

template <int G, int I, int MINB_PLAIN, int MINB_PIPE>
int run_shape(int v, const float4* x, float4* y, int64_t rows, cudaStream_t s) {
    constexpr int kRowsPerBlock = kThreads / G;
    const unsigned plain_grid = unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    const size_t row_smem = size_t(kWarps) * I * 32 * sizeof(float4);
    switch (v) {
        case 0: k_plain<G, I, 0, MINB_PLAIN><<<plain_grid, kThreads, 0, s>>>(x, y, rows); break;
        case 1: k_plain<G, I, 1, MINB_PLAIN><<<plain_grid, kThreads, 0, s>>>(x, y, rows); break;
        case 2: launch_wave<G>(k_persist<G, I, 1, false, MINB_PLAIN>, 0, x, y, rows, s); break;
        case 3: launch_wave<G>(k_persist<G, I, 1, true, MINB_PIPE>, 0, x, y, rows, s); break;
        case 4: launch_wave<G>(k_persist<G, I, 1, true, MINB_PIPE / 2>, 0, x, y, rows, s); break;
        case 5: launch_wave<G>(k_cp<G, I, 2>, 2 * row_smem, x, y, rows, s); break;
        case 6: launch_wave<G>(k_cp<G, I, 3>, 3 * row_smem, x, y, rows, s); break;
        case 7: launch_wave<G>(k_cp<G, I, 4>, 4 * row_smem, x, y, rows, s); break;
        case 8: launch_wave<G>(k_persist<G, I, 0, true, MINB_PIPE>, 0, x, y, rows, s); break;
        case 9: launch_wave<G>(k_persist<G, I, 0, false, MINB_PLAIN>, 0, x, y, rows, s); break;
        default: return -1;
    }
    return 0;
}

}  // namespace

extern "C" const char* variant_name(int v) {
    static const char* names[] = {"plain",           "plain nc256",       "persist nc256",     "persist pipe nc256",
                                  "persist pipe nc256 half-occ", "cp.async S=2", "cp.async S=3",
                                  "cp.async S=4",    "persist pipe plain", "persist plain"};
    return v >= 0 && v < 10 ? names[v] : nullptr;
}

// Rows of n f32 values, n = 1024 (32 lanes x 8 vectors) or 128 (8 lanes x 4 vectors).
extern "C" int run_softmax(int variant, const void* x, void* y, int64_t rows, int64_t n, void* stream) {
    if (!g_sms) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev);
    }
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const float4* xv = static_cast<const float4*>(x);
    float4* yv = static_cast<float4*>(y);
    int rc = -1;
    if (n == 1024) rc = run_shape<32, 8, 8, 6>(variant, xv, yv, rows, s);
    if (n == 128) rc = run_shape<8, 4, 12, 8>(variant, xv, yv, rows, s);
    return rc ? rc : int(cudaGetLastError());
}
