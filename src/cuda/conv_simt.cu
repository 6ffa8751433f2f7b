// Conv2d forward as an implicit GEMM on the FP32 FMA units (exact f32
// products and sums): the fallback for what the tensor-core kernel does not
// take (x / w / workspace pointers not 16-byte aligned, grouped convolutions
// whose channels per group are not whole 16-byte chunks, filters over 32
// taps), in any dtype.
//
// Strategy: the classic register-blocked SGEMM over the implicit matrices
// A (pixels x (r, s, c)) and B (channels x (r, s, c)). The reduction runs tap
// by tap (r, s) with BK = 8 channels per step, so a step's filter tap is one
// scalar pair and each thread's pixel needs one mask test per step; A is
// gathered with pixels across the threads (coalesced along W in NCHW), B
// with the 8 reduction elements across neighbouring threads. Tiles are
// double-buffered through shared memory in f32 (f16/bf16 are widened on
// load), each thread accumulates a TM x TN block in registers from float4
// shared reads, and the fused epilogue writes each element with its own
// strides (y's pixel order is the fast direction across threads, as in NCHW).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/conv_common.cuh"

namespace tops::cuda {
namespace {

constexpr int kSimtBK = 8;
constexpr int kSimtThreads = 256;
constexpr int kSimtBPad = 4;  // Bs row padding: the 8 reduction rows of a warp's stores hit 8 bank groups

template <int BM_, int BN_, int TM_, int TN_>
struct SimtTile {
    static constexpr int BM = BM_, BN = BN_, TM = TM_, TN = TN_, BK = kSimtBK;
    static constexpr int kThreadsM = BM / TM;
    static constexpr int kThreads = (BM / TM) * (BN / TN);
    static constexpr int kAStep = kThreads / BM;   // reduction rows per A pass
    static constexpr int A_PER = BK / kAStep;      // A elements per thread
    static constexpr int kBStep = kThreads / BK;   // filter rows per B pass
    static constexpr int B_PER = BN / kBStep;
    static constexpr int kRowSpan = BM * 4 / TM;   // distance between a thread's 4-row groups
    static constexpr int kColSpan = BN * 4 / TN;
    static_assert(kThreads == kSimtThreads, "one block size for every config");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "float4 fragments");
    static_assert(kThreads % BM == 0 && BK % kAStep == 0 && BN % kBStep == 0, "loads tile exactly");
};

// 128x128 (8x8 per thread): 64 FMAs per 4 shared loads, the FMA-bound shape.
// 64x64 (4x4 per thread): 4x the CTAs for small layers (7x7 / 14x14 maps).
using Simt128 = SimtTile<128, 128, 8, 8>;
using Simt64 = SimtTile<64, 64, 4, 4>;

template <class T, class Tile>
__global__ void __launch_bounds__(kSimtThreads) conv_simt_kernel(const __grid_constant__ ConvKernelParams p) {
    constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, TM = Tile::TM, TN = Tile::TN;
    __shared__ __align__(16) float as[2][BK][BM];              // (BK, BM)
    __shared__ __align__(16) float bs[2][BK][BN + kSimtBPad];  // (BK, BN)
    using Tr = ElemTraits<T>;

    const int tid = threadIdx.x;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN, g = blockIdx.z;
    const int M = p.n * p.p * p.q;
    const T* x = static_cast<const T*>(p.x) + int64_t(g) * p.c * p.xs[1];
    const T* w = static_cast<const T*>(p.w) + int64_t(g) * p.k * p.ws[0];

    // A loader: pixel column a_col, reduction rows a_row0 + i * kAStep.
    const int a_col = tid % BM, a_row0 = tid / BM;
    int64_t a_base = 0;
    int a_h0 = 0, a_w0 = 0;
    const bool a_pix_ok = m0 + a_col < M;
    if (a_pix_ok) {
        const ConvPixel px = conv_pixel(m0 + a_col, p.p, p.q);
        a_h0 = px.oh * p.stride_h - p.pad_h;
        a_w0 = px.ow * p.stride_w - p.pad_w;
        a_base = px.n * p.xs[0] + int64_t(a_h0) * p.xs[2] + int64_t(a_w0) * p.xs[3];
    }
    // B loader: reduction row b_row, filter rows b_col0 + j * kBStep.
    const int b_row = tid % BK, b_col0 = tid / BK;

    const int c_steps = (p.c + BK - 1) / BK;
    const int k_tiles = p.r * p.s * c_steps;
    int tap_r = 0, tap_s = 0, c0 = 0;
    float a_reg[Tile::A_PER], b_reg[Tile::B_PER];

    auto load_global = [&]() {
        const int hh = a_h0 + tap_r * p.dil_h, ww = a_w0 + tap_s * p.dil_w;
        const bool pix_ok = a_pix_ok && hh >= 0 && hh < p.h && ww >= 0 && ww < p.w_in;
        const int64_t a_off = a_base + int64_t(tap_r * p.dil_h) * p.xs[2] + int64_t(tap_s * p.dil_w) * p.xs[3];
#pragma unroll
        for (int i = 0; i < Tile::A_PER; ++i) {
            const int c = c0 + a_row0 + i * Tile::kAStep;
            a_reg[i] = pix_ok && c < p.c ? Tr::to_float(x[a_off + c * p.xs[1]]) : 0.0f;
        }
        const int cb = c0 + b_row;
        const int64_t b_off = cb * p.ws[1] + tap_r * p.ws[2] + tap_s * p.ws[3];
#pragma unroll
        for (int j = 0; j < Tile::B_PER; ++j) {
            const int kn = n0 + b_col0 + j * Tile::kBStep;
            b_reg[j] = cb < p.c && kn < p.k ? Tr::to_float(w[kn * p.ws[0] + b_off]) : 0.0f;
        }
        c0 += BK;
        if (c0 >= p.c) {
            c0 = 0;
            if (++tap_s == p.s) {
                tap_s = 0;
                ++tap_r;
            }
        }
    };
    auto store_shared = [&](int buf) {
#pragma unroll
        for (int i = 0; i < Tile::A_PER; ++i) as[buf][a_row0 + i * Tile::kAStep][a_col] = a_reg[i];
#pragma unroll
        for (int j = 0; j < Tile::B_PER; ++j) bs[buf][b_row][b_col0 + j * Tile::kBStep] = b_reg[j];
    };

    const int tm = tid % Tile::kThreadsM, tn = tid / Tile::kThreadsM;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    if (k_tiles > 0) {
        load_global();
        store_shared(0);
    }
    __syncthreads();
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int buf = kt & 1;
        const bool more = kt + 1 < k_tiles;
        if (more) load_global();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int gi = 0; gi < TM / 4; ++gi) {
                const float4 v = *reinterpret_cast<const float4*>(&as[buf][kk][gi * Tile::kRowSpan + tm * 4]);
                a[gi * 4 + 0] = v.x;
                a[gi * 4 + 1] = v.y;
                a[gi * 4 + 2] = v.z;
                a[gi * 4 + 3] = v.w;
            }
#pragma unroll
            for (int gj = 0; gj < TN / 4; ++gj) {
                const float4 v = *reinterpret_cast<const float4*>(&bs[buf][kk][gj * Tile::kColSpan + tn * 4]);
                b[gj * 4 + 0] = v.x;
                b[gj * 4 + 1] = v.y;
                b[gj * 4 + 2] = v.z;
                b[gj * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) store_shared(buf ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int m = m0 + (i / 4) * Tile::kRowSpan + tm * 4 + i % 4;
        if (m >= M) continue;
        const ConvPixel px = conv_pixel(m, p.p, p.q);
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int kn = n0 + (j / 4) * Tile::kColSpan + tn * 4 + j % 4;
            if (kn < p.k) conv_store_one<T>(p, px, int64_t(g) * p.k + kn, acc[i][j]);
        }
    }
}

template <class Tile>
dim3 simt_grid(const ConvKernelParams& p) {
    const int64_t m = int64_t(p.n) * p.p * p.q;
    return dim3(unsigned((m + Tile::BM - 1) / Tile::BM), unsigned((p.k + Tile::BN - 1) / Tile::BN),
                unsigned(p.groups));
}

template <class T>
Status launch_simt_typed(const ConvKernelParams& p, SimtConfig c, cudaStream_t stream) {
    switch (c) {
        case SimtConfig::k128x128:
            conv_simt_kernel<T, Simt128><<<simt_grid<Simt128>(p), kSimtThreads, 0, stream>>>(p);
            break;
        case SimtConfig::k64x64:
            conv_simt_kernel<T, Simt64><<<simt_grid<Simt64>(p), kSimtThreads, 0, stream>>>(p);
            break;
        default: return Status(TOPS_ERROR_INTERNAL, "conv simt: unexpected config");
    }
    return launch_status("conv_simt");
}

}  // namespace

const char* simt_config_name(SimtConfig c) {
    switch (c) {
        case SimtConfig::k128x128: return "128x128x8_t8x8";
        case SimtConfig::k64x64: return "64x64x8_t4x4";
        default: return "?";
    }
}

// The one dispatch point: dtype x config, six instantiations.
Status launch_conv_simt(const ConvKernelParams& p, SimtConfig c, tops_dtype_t dtype, cudaStream_t stream) {
    switch (dtype) {
        case TOPS_DTYPE_F32: return launch_simt_typed<float>(p, c, stream);
        case TOPS_DTYPE_F16: return launch_simt_typed<__half>(p, c, stream);
        case TOPS_DTYPE_BF16: return launch_simt_typed<__nv_bfloat16>(p, c, stream);
        default: return Status(TOPS_ERROR_INTERNAL, "conv simt: unexpected dtype");
    }
}

}  // namespace tops::cuda
