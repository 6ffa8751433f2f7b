// Elementwise streaming probe (bench/eltwise_stream_probe.py builds and runs it):
// y = relu(x + bias) over rows, bias a row vector, in the forms below, to see
// how many bytes per SM must be in flight to move a dense elementwise op at
// the speed of a copy, and whether registers or shared memory should hold them.
// Every form walks 16-byte vectors with a grid stride that is a multiple of
// the bias period, so a thread's bias vector is loaded once (as the library's
// hoisted kernels do).
// - regs U, MINB, PIPE: U vectors per thread and step in registers, at least
//   MINB blocks of 256 per SM; PIPE: the next step's loads are issued before
//   this step's math (two register buffers).
// - cp.async S: a ring of S steps per thread in shared memory, filled by
//   cp.async; each thread reads only the vectors it copied itself, so no
//   barrier is needed, only cp.async.wait_group. Occupancy is then set by the
//   ring's shared memory, not by registers.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <numeric>

namespace {

constexpr int kThreads = 256;

struct Args {
    const uint4* x;  // (nvec) 16-byte vectors
    const uint4* b;  // (period) vectors of the row bias
    uint4* y;        // (nvec)
    int64_t nvec;
    int64_t period;
};

template <class T>
__device__ __forceinline__ uint4 bias_relu(uint4 x, uint4 b) {
    if constexpr (sizeof(T) == 4) {
        const float* xf = reinterpret_cast<const float*>(&x);
        const float* bf = reinterpret_cast<const float*>(&b);
        uint4 r;
        float* rf = reinterpret_cast<float*>(&r);
#pragma unroll
        for (int j = 0; j < 4; ++j) rf[j] = fmaxf(xf[j] + bf[j], 0.0f);
        return r;
    } else {
        const __half2* xh = reinterpret_cast<const __half2*>(&x);
        const __half2* bh = reinterpret_cast<const __half2*>(&b);
        uint4 r;
        __half2* rh = reinterpret_cast<__half2*>(&r);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float2 xv = __half22float2(xh[j]), bv = __half22float2(bh[j]);
            rh[j] = __floats2half2_rn(fmaxf(xv.x + bv.x, 0.0f), fmaxf(xv.y + bv.y, 0.0f));
        }
        return r;
    }
}

template <int U>
__device__ __forceinline__ void load_step(const Args& a, int64_t v0, int64_t gstride, uint4 (&r)[U]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int64_t v = v0 + u * gstride;
        if (v < a.nvec) r[u] = a.x[v];
    }
}

template <class T, int U, int MINB, bool PIPE>
__global__ void __launch_bounds__(kThreads, MINB) k_regs(const __grid_constant__ Args a) {
    const int64_t gstride = int64_t(gridDim.x) * kThreads;
    const int64_t gtid = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (gtid >= a.nvec) return;
    const uint4 bias = a.b[gtid % a.period];
    const int64_t step = U * gstride;
    uint4 cur[U] = {}, nxt[U] = {};  // (U) vectors
    if (PIPE) load_step<U>(a, gtid, gstride, cur);
    for (int64_t v0 = gtid; v0 < a.nvec; v0 += step) {
        if (!PIPE) load_step<U>(a, v0, gstride, cur);
        if (PIPE && v0 + step < a.nvec) load_step<U>(a, v0 + step, gstride, nxt);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t v = v0 + u * gstride;
            if (v < a.nvec) a.y[v] = bias_relu<T>(cur[u], bias);
        }
        if (PIPE) {
#pragma unroll
            for (int u = 0; u < U; ++u) cur[u] = nxt[u];
        }
    }
}

template <bool HINT>
__device__ __forceinline__ void cp16(uint4* dst, const uint4* src, bool pred) {
    const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if constexpr (HINT) {
        asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(sa), "l"(src), "r"(pred ? 16 : 0)
                     : "memory");
    } else {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"(src), "r"(pred ? 16 : 0)
                     : "memory");
    }
}

template <class T, int S, bool HINT>
__global__ void __launch_bounds__(kThreads) k_cp(const __grid_constant__ Args a) {
    static_assert((S & (S - 1)) == 0, "ring slots by mask");
    extern __shared__ uint4 ring[];  // (S, kThreads)
    const int64_t gstride = int64_t(gridDim.x) * kThreads;
    const int64_t gtid = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (gtid >= a.nvec) return;
    const uint4 bias = a.b[gtid % a.period];
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
        const int64_t v = gtid + s * gstride;
        cp16<HINT>(&ring[s * kThreads + threadIdx.x], a.x + (v < a.nvec ? v : gtid), v < a.nvec);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    int i = 0;
    for (int64_t v = gtid; v < a.nvec; v += gstride, ++i) {
        const int64_t vn = v + (S - 1) * gstride;
        cp16<HINT>(&ring[((i + S - 1) & (S - 1)) * kThreads + threadIdx.x], a.x + (vn < a.nvec ? vn : gtid),
                   vn < a.nvec);
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group %0;" ::"n"(S - 1) : "memory");
        a.y[v] = bias_relu<T>(ring[(i & (S - 1)) * kThreads + threadIdx.x], bias);
    }
}

struct Variant {
    const char* name;
    const void* f16;
    const void* f32;
    int ring;  // cp.async steps per thread (0: registers)
};

#define REGS(U, MINB, PIPE, NAME)                                                                            \
    {NAME, reinterpret_cast<const void*>(&k_regs<__half, U, MINB, PIPE>),                                    \
     reinterpret_cast<const void*>(&k_regs<float, U, MINB, PIPE>), 0}
#define CP(S, HINT, NAME)                                                                                    \
    {NAME, reinterpret_cast<const void*>(&k_cp<__half, S, HINT>), reinterpret_cast<const void*>(&k_cp<float, S, HINT>), \
     S}

const Variant kVariants[] = {
    REGS(4, 4, true, "regs4 pipe (library form)"),
    REGS(1, 8, false, "regs1 full occupancy"),
    REGS(1, 8, true, "regs1 pipe full occupancy"),
    REGS(2, 6, true, "regs2 pipe 6 blocks"),
    CP(4, false, "cp.async S=4"),
    CP(8, false, "cp.async S=8"),
    CP(16, false, "cp.async S=16"),
    CP(8, true, "cp.async S=8 L2::256B"),
};
constexpr int kNumVariants = sizeof(kVariants) / sizeof(kVariants[0]);

}  // namespace

extern "C" int num_variants() { return kNumVariants; }

extern "C" const char* variant_name(int v) { return v >= 0 && v < kNumVariants ? kVariants[v].name : nullptr; }

// dtype_bytes 2 (f16) or 4 (f32); n a multiple of the vector; returns the grid used, or -1.
extern "C" int run_bias_relu(int v, int dtype_bytes, const void* x, const void* b, void* y, int64_t rows, int64_t n,
                             void* stream) {
    if (v < 0 || v >= kNumVariants) return -1;
    const Variant& var = kVariants[v];
    const void* fn = dtype_bytes == 2 ? var.f16 : var.f32;
    const int64_t vec = 16 / dtype_bytes;
    Args a{static_cast<const uint4*>(x), static_cast<const uint4*>(b), static_cast<uint4*>(y), rows * n / vec, n / vec};
    const size_t smem = size_t(var.ring) * kThreads * sizeof(uint4);
    if (smem > 48 * 1024 && cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) != 0)
        return -1;
    if (var.ring) cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
    int dev = 0, sms = 0, per_sm = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, kThreads, smem);
    // The grid's threads a multiple of the bias period (in vectors): each thread's bias is fixed.
    const int64_t g = a.period / std::gcd(a.period, int64_t(kThreads));
    const int64_t needed = (a.nvec + kThreads - 1) / kThreads;
    int64_t grid = std::min<int64_t>(int64_t(per_sm) * sms, needed);
    grid = grid >= g ? grid / g * g : g;
    void* args[] = {&a};
    if (cudaLaunchKernel(fn, dim3(unsigned(grid)), dim3(kThreads), args, smem, static_cast<cudaStream_t>(stream)) != 0)
        return -1;
    return int(grid);
}
