// Conv2d forward as an implicit GEMM on tensor cores (NHWC activations, KRSC
// filters; f16/bf16, and f32 as 3xTF32, all with f32 accumulation).
//
// Strategy: per group, y (M = N*P*Q pixels x K channels) = A (M x R*S*C) *
// B^T (K x R*S*C), where row m of A is the receptive field of pixel m, never
// materialized (no im2col buffer). The reduction runs over (r, s, channel
// block of BK): for a fixed filter tap (r, s) the BK channels of a pixel are
// contiguous in NHWC, so each A row of the tile is 16-byte chunks copied with
// cp.async straight from x, and B rows likewise from the KRSC filter.
// Padding, image edges and tile edges never branch around a copy: each thread
// precomputes, per A row it loads, bitmasks of the valid filter rows r and
// columns s once per tile, and an invalid chunk is a zero-filling cp.async.
// STAGES tiles are in flight (multi-stage cp.async pipeline); fragments come
// from XOR-swizzled shared memory through ldmatrix (conflict-free for both
// the 16-byte cp.async stores and the 8-row ldmatrix reads), and each warp
// issues mma.sync m16n8k16 over its (WM, WN) tile. The epilogue stages the
// f32 accumulators through shared memory so that bias, residual, activation
// and the f16/bf16 conversion run on 8 consecutive channels with 16-byte
// loads and stores (or, for y with unit pixel stride such as NCHW, on
// consecutive pixels across the threads).
//
// f32 runs the same kernel byte for byte: a 16-byte chunk is 4 channels
// instead of 8, and the fragments ldmatrix gives for a 32-byte k-step are the
// TF32 fragments of an m16n8k8 tile (mma.cuh). Each operand is split into
// TF32 big + small parts and a step issues three MMAs (small * big,
// big * small, big * big; small * small, ~2^-22 relative, is dropped), which
// keeps f32 accuracy (1-4e-7 relative on the ResNet layers, against 4e-7 to
// 1e-6 for the f32 FMA kernel) at tensor-core speed. The filter is split once
// per call by its repack (a second B plane in shared memory); x's fragments
// are split in registers. Measured alternative: splitting x in a repack as
// well (two A tiles, no split instructions in the loop) ran no faster
// (0.49-0.73x against 0.49-0.81x cuDNN f32 at the time) and costs a pass over
// x. With TOPS_CONV_ALLOW_TF32 (the TF32 template parameter) a step issues
// one MMA on x rounded to TF32 and w's big part.
//
// Requirements (checked by the plan): channels per group a multiple of a
// 16-byte chunk, unit channel strides of x and w, every other x/w stride a
// multiple of a chunk, 16-byte aligned x and w, R and S <= 32, N*P*Q < 2^31.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "cuda/common/mma.cuh"
#include "cuda/conv_common.cuh"

namespace tops::cuda {
namespace {

constexpr int kStepBytes = 32;      // one k-step: k16 of f16 / bf16, k8 of TF32
constexpr int kEpiPad = 8;          // f32 padding per staged row: conflict-free float2 stores

// Tile traits: (BM pixels, BN channels, KB bytes of reduction per smem row)
// per CTA, (WM, WN) per warp. A row holds KB / sizeof(T) reduction elements:
// BK = 32 for f16 / bf16 is 16 for f32 at the same KB = 64.
template <int BM_, int BN_, int KB_, int WM_, int WN_, int STAGES_, int MIN_BLOCKS_>
struct IgemmTile {
    static constexpr int BM = BM_, BN = BN_, KB = KB_, WM = WM_, WN = WN_, STAGES = STAGES_;
    static constexpr int kMinBlocks = MIN_BLOCKS_;  // CTAs per SM the register budget must allow
    static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
    static constexpr int kThreads = kWarpsM * kWarpsN * 32;
    static constexpr int MT = WM / 16, NT = WN / 8;  // mma tiles per warp
    static constexpr int CPR = KB / kChunkBytes;     // 16-byte chunks per smem row
    static constexpr int KK = KB / kStepBytes;       // k-steps per tile
    static constexpr int kRowStep = kThreads / CPR;  // rows one pass of the CTA loads
    static constexpr int A_CHUNKS = BM / kRowStep, B_CHUNKS = BN / kRowStep;
    static constexpr int kSmemA = BM * KB, kSmemB = BN * KB;
    static constexpr int kEpiLd = BN + kEpiPad;
    static constexpr int kSmemCs = BM * kEpiLd * 4;  // staged accumulators (BM, kEpiLd) f32
    static constexpr int kSmemEpi = kSmemCs + BM * 2 * 8;  // then y / residual offsets per row (BM, 2) int64

    static_assert(BM % WM == 0 && BN % WN == 0, "warps tile the CTA");
    static_assert(WM % 16 == 0 && WN % 16 == 0, "B fragments are loaded two n8 tiles at a time");
    static_assert(KB % kStepBytes == 0 && (CPR == 4 || CPR == 8), "swizzle covers 64- and 128-byte rows");
    static_assert(kThreads % CPR == 0 && BM % kRowStep == 0 && BN % kRowStep == 0, "loads tile exactly");
    static_assert(STAGES >= 2, "pipeline needs two stages");
    static_assert(KK % 2 == 0, "double-buffered fragments: a tile has an even number of k-steps");
};

// Measured on H100 (docs/performance.md, conv section), TFLOP/s on the six
// ResNet layers (56x56 K64, 28x28 K128, 14x14 K256, 7x7 K512, 7x7 stem, 1x1):
//   64x64x32 s6:  143 164 176 141 38 74   (the default: 4 CTAs of 4 warps per
//                                         SM, 16 warps to cover the gathers)
//   64x64x64 s4:  124 159 187 145 31 65
//   128x64x32:    128 140 166 149 34 60   (7x7 K512: 104 CTAs, one per SM)
//   128x128x32:    73 147 192 117 19 40   (14x14 K256: 98 CTAs)
// conv.cpp picks 128x128 / 128x64 where 64x64 tiles fill less than a wave.
// Nsight Compute on layer 2 (64x64x32, before the gather arithmetic was
// hoisted out of the loop): issue slots 56% busy, the integer ALU the
// busiest pipe (38%), 1.05 eligible warps per scheduler.
//  128x128x32, 8 warps of 64x32: 1 CTA per SM (capped at 2, its 170
//  registers spilled 300 bytes).
//  128x64x32, 4 warps of 64x32.
//  64x64x64 / 64x64x32, 4 warps of 32x32.
using Tile128x128 = IgemmTile<128, 128, 64, 64, 32, 4, 1>;
using Tile128x64 = IgemmTile<128, 64, 64, 64, 32, 4, 2>;
using Tile64x64 = IgemmTile<64, 64, 128, 32, 32, 4, 4>;
using Tile64x64K32 = IgemmTile<64, 64, 64, 32, 32, 6, 4>;

// One 32-byte k-step of a warp's (MT x NT) mma tiles on fragments af / bf
// (f32: bf[0] and bf[1] are the filter's TF32 big and small parts).
// (f32 with TF32: one TF32 product per term instead of three.)
template <class T, bool TF32, int BPL, int MT, int NT>
__device__ __forceinline__ void igemm_mma_step(float (&acc)[MT][NT][4], const uint32_t (&af)[MT][4],
                                               const uint32_t (&bf)[BPL][NT][2]) {
    if constexpr (sizeof(T) == 2) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_m16n8k16<T>(acc[mt][nt], af[mt], bf[0][nt]);
    } else {
        static_assert(sizeof(T) == 4 && BPL == 2, "f32 runs 3xTF32 with a pre-split filter");
        if constexpr (TF32) {  // TF32 allowed: one product, as cuDNN / cuBLAS TF32 modes
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                uint32_t a[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) a[e] = tf32_round(af[mt][e]);
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) mma_m16n8k8_tf32(acc[mt][nt], a, bf[0][nt]);
            }
            return;
        }
        // Splitting x's fragments is the loop's main cost (the ALU pipe was
        // the busiest, at 69%, when both operands were split with the full
        // tf32_split): a step whose A values are all below 2^127 in
        // magnitude (or NaN) in every lane takes the short form, any other
        // the one that handles infinities and values near the f32 maximum.
        float peak = 0.0f;  // fmaxf skips NaN, which the short form handles
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int e = 0; e < 4; ++e) peak = fmaxf(peak, fabsf(__uint_as_float(af[mt][e])));
        auto run = [&](auto split) {
            // Each step's three products go to a fresh accumulator that is
            // then added to acc with one f32 add: the tensor cores' own
            // accumulation truncates, and chaining every step into acc made
            // the error grow with the reduction length (2.9e-5 relative at
            // C 512 x 3x3, 7x the f32 tolerance; rounding once per step keeps
            // it at 1-4e-7).
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                uint32_t a_big[4], a_small[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) split(af[mt][e], a_big[e], a_small[e]);
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                    mma_m16n8k8_tf32(t, a_small, bf[0][nt]);
                    mma_m16n8k8_tf32(t, a_big, bf[1][nt]);
                    mma_m16n8k8_tf32(t, a_big, bf[0][nt]);
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[mt][nt][e] += t[e];
                }
            }
        };
        // One choice for the warp: mma.sync needs every lane on the same path.
        if (__all_sync(kFullMask, peak < kTf32OrdinaryLimit)) {
            run([](uint32_t v, uint32_t& big, uint32_t& small) { tf32_split_ordinary(v, big, small); });
        } else {
            run([](uint32_t v, uint32_t& big, uint32_t& small) { tf32_split(v, big, small); });
        }
    }
}

// 16-byte chunk index of (row, chunk) in a tile of CPR chunks per row: chunks
// are permuted inside each 128-byte line by the line index.
template <int CPR>
__device__ __forceinline__ int igemm_swizzle(int row, int chunk) {
    const int lin = row * CPR + chunk;
    const int line = lin >> 3;
    return (line << 3) | ((lin & 7) ^ (line & 7));
}

// Per element type: B planes (f32: the filter's TF32 big and small parts,
// written by the repack kernel), shared memory, and the CTAs per SM the
// register budget must allow (f32's split operands and per-step accumulators
// spill at the 128 registers of 4 CTAs of 128 threads, so f32 asks for 3).
template <class T, class Tile>
struct IgemmElem {
    static constexpr bool kF32 = sizeof(T) == 4;
    static constexpr int kBPlanes = kF32 ? 2 : 1;
    static constexpr int kStageBytes = Tile::kSmemA + kBPlanes * Tile::kSmemB;
    static constexpr int kSmem =
        Tile::STAGES * kStageBytes > Tile::kSmemEpi ? Tile::STAGES * kStageBytes : Tile::kSmemEpi;
    static constexpr int kMinBlocks = kF32 && Tile::kMinBlocks > 2 ? Tile::kMinBlocks - 1 : Tile::kMinBlocks;
};

template <class T, class Tile, bool TF32>
__global__ void __launch_bounds__(Tile::kThreads, (IgemmElem<T, Tile>::kMinBlocks)) conv_igemm_nhwc_kernel(const __grid_constant__ ConvKernelParams p) {
    constexpr int BM = Tile::BM, BN = Tile::BN, CPR = Tile::CPR, CE = kChunkElems<T>;
    constexpr int MT = Tile::MT, NT = Tile::NT, STAGES = Tile::STAGES;
    constexpr int BPL = IgemmElem<T, Tile>::kBPlanes, kStageBytes = IgemmElem<T, Tile>::kStageBytes;
    extern __shared__ uint4 igemm_smem[];
    char* smem = reinterpret_cast<char*>(igemm_smem);
    const uint32_t smem_base = smem_addr(smem);

    const int tid = threadIdx.x, lane = tid % kWarpSize, warp = tid / kWarpSize;
    const int wm = warp / Tile::kWarpsN, wn = warp % Tile::kWarpsN;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int g = blockIdx.z / p.splits, split = blockIdx.z % p.splits;
    const int M = p.n * p.p * p.q;
    const T* x = static_cast<const T*>(p.x) + int64_t(g) * p.c;
    const T* w = static_cast<const T*>(p.w) + int64_t(g) * p.k * p.ws[0];

    // Loader state: this thread copies chunk `chunk` of rows row0 + i * kRowStep.
    const int chunk = tid % CPR, row0 = tid / CPR;
    const T* a_ptr[Tile::A_CHUNKS];  // (n, h0, w0, channel 0) of each pixel row; dereferenced only when valid
    uint32_t a_mask_r[Tile::A_CHUNKS], a_mask_s[Tile::A_CHUNKS];
#pragma unroll
    for (int i = 0; i < Tile::A_CHUNKS; ++i) {
        const int m = m0 + row0 + i * Tile::kRowStep;
        a_ptr[i] = x;
        a_mask_r[i] = 0;
        a_mask_s[i] = 0;
        if (m < M) {
            const ConvPixel px = conv_pixel(m, p.p, p.q);
            const int h0 = px.oh * p.stride_h - p.pad_h, w0 = px.ow * p.stride_w - p.pad_w;
            a_ptr[i] = x + (px.n * p.xs[0] + int64_t(h0) * p.xs[2] + int64_t(w0) * p.xs[3]);
            a_mask_r[i] = conv_tap_mask(h0, p.r, p.dil_h, p.h);
            a_mask_s[i] = conv_tap_mask(w0, p.s, p.dil_w, p.w_in);
        }
    }
    const T* b_ptr[Tile::B_CHUNKS];
    bool b_valid[Tile::B_CHUNKS];
#pragma unroll
    for (int j = 0; j < Tile::B_CHUNKS; ++j) {
        const int kn = n0 + row0 + j * Tile::kRowStep;
        b_valid[j] = kn < p.k;
        b_ptr[j] = w + (b_valid[j] ? int64_t(kn) * p.ws[0] : 0);
    }

    // The reduction walks (r, s, channel chunk of CE) with chunks fastest: tile kt
    // holds flat chunk indices [kt * CPR, kt * CPR + CPR), so channel counts
    // below a row's CPR * CE pack several filter taps into one tile. This thread's column is
    // flat index kt * CPR + chunk, decomposed into (tap_r, tap_s, cc); the tap's
    // offsets and mask bits change only when the walk crosses a tap.
    const int cc_count = p.c / CE;
    const int k_tiles_all = (p.r * p.s * cc_count + CPR - 1) / CPR;
    const int k_per_split = (k_tiles_all + p.splits - 1) / p.splits;
    const int kt_begin = min(k_tiles_all, split * k_per_split);
    const int k_tiles = min(k_tiles_all, kt_begin + k_per_split) - kt_begin;
    int tap_r = p.r, tap_s = 0, cc = 0;
    if (cc_count > 0) {
        const int flat = kt_begin * CPR + chunk;
        const int tap = flat / cc_count;
        cc = flat - tap * cc_count;
        tap_r = min(p.r, tap / p.s);
        tap_s = tap_r < p.r ? tap - tap_r * p.s : 0;
    }
    int64_t a_tap = 0, b_tap = 0;   // element offsets of the tap in x and w
    uint32_t r_bit = 0, s_bit = 0;  // mask bits of the tap (0: past the last tap)
    auto set_tap = [&]() {
        const bool ok = tap_r < p.r;
        a_tap = int64_t(tap_r * p.dil_h) * p.xs[2] + int64_t(tap_s * p.dil_w) * p.xs[3];
        b_tap = tap_r * p.ws[2] + tap_s * p.ws[3];
        r_bit = ok ? 1u << tap_r : 0u;
        s_bit = 1u << tap_s;
    };
    auto advance = [&](int by) {
        cc += by;
        if (cc < cc_count) return;
        while (cc >= cc_count && tap_r < p.r) {
            cc -= cc_count;
            if (++tap_s == p.s) {
                tap_s = 0;
                ++tap_r;
            }
        }
        set_tap();
    };
    set_tap();

    // A stage: the A tile, then BPL planes of the B tile.
    auto load_tile = [&](int stage) {
        const uint32_t sa = smem_base + stage * kStageBytes;
        const uint32_t sb = sa + Tile::kSmemA;
        const int c = cc * CE;
        const int64_t a_off = a_tap + c, b_off = b_tap + c;
#pragma unroll
        for (int i = 0; i < Tile::A_CHUNKS; ++i) {
            const bool ok = (a_mask_r[i] & r_bit) && (a_mask_s[i] & s_bit);
            const T* src = ok ? a_ptr[i] + a_off : x;
            cp_async_16_zfill_ca(sa + igemm_swizzle<CPR>(row0 + i * Tile::kRowStep, chunk) * kChunkBytes, src, ok);
        }
#pragma unroll
        for (int j = 0; j < Tile::B_CHUNKS; ++j) {
            const bool ok = r_bit != 0 && b_valid[j];
            const T* src = ok ? b_ptr[j] + b_off : w;
            const uint32_t dst = sb + igemm_swizzle<CPR>(row0 + j * Tile::kRowStep, chunk) * kChunkBytes;
#pragma unroll
            for (int pl = 0; pl < BPL; ++pl) cp_async_16_zfill(dst + pl * Tile::kSmemB, src + pl * p.w_plane, ok);
        }
        advance(CPR);
    };

#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        if (st < k_tiles) load_tile(st);
        cp_async_commit();
    }

    float acc[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;

    // Fragments are double-buffered: the ldmatrix of k-step kk + 1 is issued
    // before the MMAs of kk, so the MMAs never wait on shared-memory latency.
    // The last k-step of a tile first waits for the next tile (barrier), then
    // prefetches that tile's first fragments.
    constexpr int KK = Tile::KK;
    uint32_t af[2][MT][4];
    uint32_t bf[2][BPL][NT][2];
    auto load_frags = [&](int buf, int stage, int kk) {
        const uint32_t sa = smem_base + stage * kStageBytes;
        const uint32_t sb = sa + Tile::kSmemA;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            const int row = wm * Tile::WM + mt * 16 + lane % 16;
            ldmatrix_x4(af[buf][mt], sa + igemm_swizzle<CPR>(row, kk * 2 + lane / 16) * kChunkBytes);
        }
#pragma unroll
        for (int pl = 0; pl < BPL; ++pl) {
#pragma unroll
            for (int np = 0; np < NT / 2; ++np) {
                const int row = wn * Tile::WN + np * 16 + lane % 8 + (lane / 16) * 8;
                uint32_t t[4];
                ldmatrix_x4(t, sb + pl * Tile::kSmemB + igemm_swizzle<CPR>(row, kk * 2 + (lane / 8) % 2) * kChunkBytes);
                bf[buf][pl][2 * np][0] = t[0];
                bf[buf][pl][2 * np][1] = t[1];
                bf[buf][pl][2 * np + 1][0] = t[2];
                bf[buf][pl][2 * np + 1][1] = t[3];
            }
        }
    };

    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile 0 landed
    if (k_tiles > 0) load_frags(0, 0, 0);
    int stage = 0, write_stage = STAGES - 1;  // kt % STAGES, (kt + STAGES - 1) % STAGES
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int next_stage = stage + 1 == STAGES ? 0 : stage + 1;
#pragma unroll
        for (int kk = 0; kk < KK; ++kk) {
            if (kk == KK - 1) {
                // Tile kt + 1 landed for all; every warp has read its last
                // fragments of stage (kt - 1) % STAGES before this barrier.
                cp_async_wait<STAGES - 2>();
                __syncthreads();
            }
            if (kk < KK - 1) {
                load_frags((kk + 1) & 1, stage, kk + 1);
            } else if (kt + 1 < k_tiles) {
                load_frags((kk + 1) & 1, next_stage, 0);
            }
            if (kk == 0) {
                if (kt + STAGES - 1 < k_tiles) load_tile(write_stage);
                cp_async_commit();
            }
            igemm_mma_step<T, TF32, BPL>(acc, af[kk & 1], bf[kk & 1]);
        }
        write_stage = stage;
        stage = next_stage;
    }
    cp_async_wait<0>();
    __syncthreads();  // every warp is done with the pipeline buffers

    // Accumulators -> shared (BM, BN + kEpiPad) f32. For y with unit pixel
    // stride (NCHW) the epilogue reads columns (32 rows of one channel per
    // warp), which the 72-float row pitch maps to 4 banks: there the staged
    // columns are XOR-swizzled by row in pairs (so the float2 stores stay
    // conflict-free), and a column read is 2-way instead of 8-way conflicted.
    const bool pixel_major = p.splits == 1 && !p.vec_out && p.ys[3] == 1 && p.ys[1] != 1;
    auto swz = [&](int row) { return pixel_major ? ((row >> 2) & 3) * 2 : 0; };
    float* cs = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            const int row = wm * Tile::WM + mt * 16 + lane / 4;
            const int col = wn * Tile::WN + nt * 8 + (lane % 4) * 2;
            *reinterpret_cast<float2*>(cs + row * Tile::kEpiLd + (col ^ swz(row))) =
                make_float2(acc[mt][nt][0], acc[mt][nt][1]);
            *reinterpret_cast<float2*>(cs + (row + 8) * Tile::kEpiLd + (col ^ swz(row + 8))) =
                make_float2(acc[mt][nt][2], acc[mt][nt][3]);
        }
    }
    // Each row's pixel offsets in y and the residual, one thread per row, so
    // the loops below never decompose a pixel index per channel chunk.
    static_assert(Tile::kThreads >= BM, "a thread per row for its offsets");
    int64_t* row_off = reinterpret_cast<int64_t*>(smem + Tile::kSmemCs);  // (BM, 2)
    if (tid < BM && m0 + tid < M) {
        const ConvPixel px = conv_pixel(m0 + tid, p.p, p.q);
        row_off[2 * tid] = conv_pixel_offset(px, p.ys);
        row_off[2 * tid + 1] = conv_pixel_offset(px, p.res);
    }
    __syncthreads();

    // The activation is chosen once for the loops (per element it was a jump
    // table in the innermost loop: 16% of the stall samples on the stem).
    with_activation(p.act, [&](auto act_c) {
        constexpr Activation A = decltype(act_c)::value;
        if (pixel_major) {
            // Pixels contiguous in y: a thread keeps one pixel and walks its
            // channels, consecutive threads on consecutive pixels, so each
            // store is coalesced.
            static_assert(Tile::kThreads % BM == 0, "a thread keeps one pixel");
            constexpr int kColStep = Tile::kThreads / BM;
            const int row = tid % BM;
            if (m0 + row >= M) return;
            const int64_t y_off = row_off[2 * row], res_off = row_off[2 * row + 1], ko0 = int64_t(g) * p.k + n0;
            const float* crow = cs + row * Tile::kEpiLd;
            const int sw = swz(row), cols = min(BN, p.k - n0);
            for (int col = tid / BM; col < cols; col += kColStep) {
                conv_store_at<T, A>(p, y_off, res_off, ko0 + col, crow[col ^ sw]);
            }
            return;
        }
        constexpr int kColChunks = BN / kConvEpiChannels;
        for (int idx = tid; idx < BM * kColChunks; idx += Tile::kThreads) {
            const int row = idx / kColChunks, col = (idx % kColChunks) * kConvEpiChannels;
            const int m = m0 + row, kn = n0 + col;
            if (m >= M || kn >= p.k) continue;
            const float4 lo = *reinterpret_cast<const float4*>(cs + row * Tile::kEpiLd + col);
            const float4 hi = *reinterpret_cast<const float4*>(cs + row * Tile::kEpiLd + col + 4);
            const float v[kConvEpiChannels] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            const int64_t ko = int64_t(g) * p.k + kn;
            if (p.splits > 1) {
                float* dst = p.partial + (int64_t(split) * M + m) * (int64_t(p.k) * p.groups) + ko;
#pragma unroll
                for (int e = 0; e < kConvEpiChannels; ++e) {
                    if (kn + e < p.k) dst[e] = v[e];
                }
            } else if (p.vec_out) {
                conv_store_vec8<T, A>(p, row_off[2 * row], row_off[2 * row + 1], ko, v);
            } else {
#pragma unroll
                for (int e = 0; e < kConvEpiChannels; ++e) {
                    if (kn + e < p.k) conv_store_at<T, A>(p, row_off[2 * row], row_off[2 * row + 1], ko + e, v[e]);
                }
            }
        }
    });
}

// Split-K finish: one thread per output element (channels fastest) sums the
// splits' f32 partials and runs the fused epilogue.
template <class T>
__global__ void __launch_bounds__(256) conv_splitk_epilogue_kernel(const __grid_constant__ ConvKernelParams p) {
    const int64_t kt = int64_t(p.k) * p.groups;
    const int64_t mk = int64_t(p.n) * p.p * p.q * kt;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < mk; e += step) {
        float acc = 0.0f;
        for (int sp = 0; sp < p.splits; ++sp) acc += p.partial[sp * mk + e];
        const int64_t ko = e % kt;
        conv_store_one<T>(p, conv_pixel(int(e / kt), p.p, p.q), ko, acc);
    }
}

template <class Tile>
dim3 igemm_grid(const ConvKernelParams& p) {
    const int64_t m = int64_t(p.n) * p.p * p.q;
    return dim3(unsigned((m + Tile::BM - 1) / Tile::BM), unsigned((p.k + Tile::BN - 1) / Tile::BN),
                unsigned(p.groups * p.splits));
}

// The one dispatch point: (dtype, config, TF32 for f32) -> fn(Tile{}, T{},
// kernel). Sixteen instantiations: 4 configs x (f16, bf16, f32, f32 TF32).
template <class Fn>
Status igemm_dispatch(IgemmConfig c, tops_dtype_t dtype, bool tf32, Fn&& fn) {
    auto with_tile = [&](auto tile) -> Status {
        using Tile = decltype(tile);
        return with_elem(dtype, "conv igemm", [&](auto elem) {
            using T = decltype(elem);
            if constexpr (sizeof(T) == 4) {
                if (tf32) return fn(tile, elem, conv_igemm_nhwc_kernel<T, Tile, true>);
            }
            return fn(tile, elem, conv_igemm_nhwc_kernel<T, Tile, false>);
        });
    };
    switch (c) {
        case IgemmConfig::k128x128: return with_tile(Tile128x128{});
        case IgemmConfig::k64x64k32: return with_tile(Tile64x64K32{});
        case IgemmConfig::k128x64: return with_tile(Tile128x64{});
        case IgemmConfig::k64x64: return with_tile(Tile64x64{});
        default: return Status(TOPS_ERROR_INTERNAL, "conv igemm: unexpected config");
    }
}

}  // namespace

std::string igemm_config_name(IgemmConfig c, tops_dtype_t dtype) {
    std::string name = "?";
    igemm_dispatch(c, dtype, false, [&](auto tile, auto elem, auto) {
        using Tile = decltype(tile);
        using T = decltype(elem);
        name = fmt(Tile::BM, "x", Tile::BN, "x", Tile::KB / int(sizeof(T)), "_s", Tile::STAGES, "_w", Tile::WM, "x",
                   Tile::WN);
        return Status::ok();
    });
    return name;
}

Status igemm_prepare(IgemmConfig c, tops_dtype_t dtype, bool tf32) {
    return igemm_dispatch(c, dtype, tf32, [&](auto tile, auto elem, auto kernel) {
        using Tile = decltype(tile);
        using T = decltype(elem);
        return cuda_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                IgemmElem<T, Tile>::kSmem),
                           "conv igemm: cudaFuncSetAttribute");
    });
}

Status launch_conv_igemm(const ConvKernelParams& p, IgemmConfig c, tops_dtype_t dtype, cudaStream_t stream) {
    return igemm_dispatch(c, dtype, p.tf32, [&](auto tile, auto elem, auto kernel) {
        using Tile = decltype(tile);
        using T = decltype(elem);
        kernel<<<igemm_grid<Tile>(p), Tile::kThreads, IgemmElem<T, Tile>::kSmem, stream>>>(p);
        TOPS_RETURN_IF_ERROR(launch_status("conv_igemm_nhwc"));
        if (p.splits == 1) return Status::ok();
        constexpr int kThreads = 256;
        constexpr int64_t kMaxBlocks = int64_t(1) << 20;
        const int64_t total = int64_t(p.n) * p.p * p.q * p.k * p.groups;
        const int grid = int(std::min(kMaxBlocks, (total + kThreads - 1) / kThreads));
        return with_elem(dtype, "conv split-K epilogue", [&](auto elem) {
            using T = decltype(elem);
            conv_splitk_epilogue_kernel<T><<<grid, kThreads, 0, stream>>>(p);
            return launch_status("conv_splitk_epilogue");
        });
    });
}

}  // namespace tops::cuda
