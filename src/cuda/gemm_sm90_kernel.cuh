// The Hopper (sm_90a) GEMM main loop and epilogue that the fused GEMM
// (gemm_sm90.cu) and the NHWC implicit-GEMM convolution (conv_sm90.cu)
// share: D = act(alpha * A B + bias) over (BLOCK_M, BLOCK_N) output tiles.
//
// Strategy (Hopper's own GEMM path): a persistent grid of one CTA per SM
// walks output tiles. One producer thread issues TMA loads of
// 128-byte-swizzled (BLOCK_M, 64) A and (BLOCK_N, 64) B^T tiles into a ring
// of stages guarded by mbarriers ("full": bytes landed, "empty": consumers
// done). Two consumer warpgroups each run wgmma m64nBLOCK_Nk16 on their 64
// rows, one k16 slice at a time, keeping one stage's wgmmas in flight while
// they wait for the next. After its main loop each warp writes act(alpha *
// acc + bias) of its 16 rows, 64 columns at a time, into swizzled staging
// boxes that TMA stores to D, and goes on to its next tile; the producer has
// run ahead into it meanwhile. The two warpgroups never wait for each other
// outside the stage ring, so one's epilogue can overlap the other's main
// loop (dropping a per-tile barrier of both measured 1.2 us of 42 at
// 4096x3072x768 f16 on an H100).
//
// What A, B and D are is the Op's business (a policy class): where tile t
// lies (Op::coord), how many 64-deep K blocks it has (Op::k_blocks), which
// boxes feed K block kb (Op::load) and where a warp's 16 output rows go
// (Op::store). TMA fills whatever lies outside the tensors with zeros on
// load and writes nothing outside them on store.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "cuda/common/activation.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/sm90.cuh"
#include "cuda/vec_convert.cuh"

namespace tops::cuda::sm90gemm {

using sm90::kWarpgroupThreads;
using sm90::kWarpsPerWarpgroup;

// 128 x BLOCK_N x 64, 4 stages. 256 columns is the widest wgmma (the fewest
// shared-memory bytes per FLOP: A and B^T tiles of 48 KiB feed 4.2 MFLOP);
// narrower tiles serve problems with fewer output columns (convolutions of
// 64 or 128 channels). Two consumer warpgroups of 64 rows hold BLOCK_N / 2
// f32 accumulators per thread. The loads are latency-bound: at
// 4096x3072x768 f16 on an H100, 128x256 without the activation, 2 stages
// take 43.9 us, 3 stages 34.2 us, no loads at all 29.6 us; so the output is
// staged 64 columns at a time through two 8 KiB boxes per warpgroup, which
// leaves room for a fourth stage.
template <int kBlockN_>
struct Tile {
    static constexpr int kBlockM = 128;
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kBlockK = 64;
    static constexpr int kStages = 4;
    static constexpr int kConsumers = 2;
    static constexpr int kThreads = kWarpgroupThreads * (kConsumers + 1);
    // setmaxnreg budgets: the producer needs few registers, the consumers'
    // accumulators many (40 * 128 + 232 * 256 <= 65536).
    static constexpr int kProducerRegs = 40;
    static constexpr int kConsumerRegs = 232;
    static constexpr int kWgmmaM = 64, kWgmmaN = kBlockN, kWgmmaK = 16;
    static constexpr int kAcc = kWgmmaM * kWgmmaN / kWarpgroupThreads;  // f32 accumulators per thread
    static constexpr int kElemBytes = 2;
    static constexpr int kStageBytesA = kBlockM * kBlockK * kElemBytes;
    static constexpr int kStageBytesB = kBlockN * kBlockK * kElemBytes;
    static constexpr int kStageBytes = kStageBytesA + kStageBytesB;
    static constexpr int kSmemAlign = int(sm90::kSwizzleAtomBytes);
    // Output staging: per consumer warpgroup kOutBoxes boxes of (64, 64)
    // 128-byte-swizzled values, filled and written out by TMA in turn,
    // kStoreRounds times per tile; each warp stores its own 16 rows, so the
    // rounds need no warpgroup barrier.
    static constexpr int kOutBoxCols = int(sm90::kSwizzleRowBytes) / kElemBytes;
    static constexpr int kOutBoxBytes = kWgmmaM * kOutBoxCols * kElemBytes;
    static constexpr int kOutBoxes = 2;
    static constexpr int kWarpRows = 16;  // rows of a box per warp: one TMA store box
    static constexpr int kWarpRowBytes = kWarpRows * int(sm90::kSwizzleRowBytes);
    static constexpr int kStoreRounds = kBlockN / kOutBoxCols;
    static constexpr int kOutBytes = kOutBoxes * kOutBoxBytes;             // per consumer warpgroup
    static constexpr int kBiasBytes = kConsumers * kBlockN * kElemBytes;  // one tile's bias per warpgroup
    static constexpr int kBiasPerThread = (kBlockN + kWarpgroupThreads - 1) / kWarpgroupThreads;
    static constexpr int kSmemBytes = kStages * kStageBytes + kConsumers * kOutBytes + kBiasBytes +
                                      2 * kStages * int(sizeof(uint64_t)) + kSmemAlign;

    static_assert(kBlockM == kConsumers * kWgmmaM, "one wgmma row block per consumer warpgroup");
    static_assert(kBlockN == 64 || kBlockN == 128 || kBlockN == 256, "instantiated wgmma widths");
    static_assert(kAcc == kBlockN / 2, "a m64nN wgmma holds N / 2 accumulators per thread");
    static_assert(kBlockK * kElemBytes == int(sm90::kSwizzleRowBytes), "a K block is one swizzle row");
    static_assert(kBlockK % kWgmmaK == 0, "whole k16 slices per stage");
    static_assert(kStageBytesA % kSmemAlign == 0 && kStageBytesB % kSmemAlign == 0, "stages keep atom alignment");
    static_assert((kWgmmaM * kBlockK * kElemBytes) % kSmemAlign == 0, "a consumer's rows start on an atom");
    static_assert(kOutBoxBytes % kSmemAlign == 0, "staging boxes keep atom alignment");
    static_assert(kStoreRounds * kOutBoxCols == kBlockN, "whole boxes per tile");
    static_assert(kWarpRows * kWarpsPerWarpgroup == kWgmmaM && kWarpRowBytes % kSmemAlign == 0,
                  "a warp's rows are whole swizzle atoms");
    static_assert(kSmemBytes <= 227 * 1024, "shared memory per block");
    static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumers * kWarpgroupThreads <= 65536,
                  "register file");
};

// The epilogue's scalar inputs, a member `epi` of every Op's Params.
struct Epilogue {
    const void* bias;  // (columns) or nullptr
    int64_t bias_stride;
    float alpha;
    int cols;          // output columns (bias past them reads as 0)
};

#if TOPS_SM90A

// Consumer epilogue, store round `round`: act(alpha * acc + bias) of this
// thread's fragment of columns [64 round, 64 round + 64) of its warp's 16
// rows into the warp's part `box` of a staging box ((16, 64), 128-byte
// swizzled: 16-byte chunk j of row r sits at chunk j ^ (r % 8), so the 8
// rows of one store hit 8 distinct chunks). bias_s holds the tile's BLOCK_N
// bias values.
template <class T, Activation ACT, class Tl>
__device__ __forceinline__ void stage_tile(const Epilogue& epi, const float (&acc)[Tl::kAcc], uint32_t box,
                                           const T* bias_s, int lane, int round) {
    using Pair = typename PairTraits<T>::Pair;
    constexpr int kChunks = Tl::kOutBoxCols / 8;  // 8-column (16-byte) chunks per round: one swizzle row
    const int quad = lane % 4, row8 = lane / 4;   // row8 == row % 8 for every row this thread holds
#pragma unroll
    for (int cc = 0; cc < kChunks; ++cc) {
        const int c = round * kChunks + cc;  // chunk of the fragment
        const float2 b = PairTraits<T>::to_float2(*reinterpret_cast<const Pair*>(bias_s + 8 * c + 2 * quad));
        const uint32_t chunk = uint32_t((cc ^ row8) * 16 + 4 * quad);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row8 + 8 * h;  // of this warp's 16 rows
            float v0 = fmaf(epi.alpha, acc[4 * c + 2 * h], b.x);
            float v1 = fmaf(epi.alpha, acc[4 * c + 2 * h + 1], b.y);
            activate_pair<ACT, T>(v0, v1);
            const Pair v = PairTraits<T>::from_float2(v0, v1);
            uint32_t bits;
            memcpy(&bits, &v, sizeof(bits));
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(box + uint32_t(row) * sm90::kSwizzleRowBytes + chunk),
                         "r"(bits));
        }
    }
}

// Named barrier of one consumer warpgroup (id 0 is __syncthreads).
constexpr int kWarpgroupBarrier0 = 1;
__device__ __forceinline__ void warpgroup_sync(int cw) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(kWarpgroupBarrier0 + cw), "n"(kWarpgroupThreads) : "memory");
}

#endif  // TOPS_SM90A

template <class T, Activation ACT, class Op, int BLOCK_N>
__global__ void __launch_bounds__(Tile<BLOCK_N>::kThreads, 1) kernel(const __grid_constant__ typename Op::Params p) {
#if TOPS_SM90A
    using Tl = Tile<BLOCK_N>;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t base = (raw + Tl::kSmemAlign - 1) / Tl::kSmemAlign * Tl::kSmemAlign;
    const uint32_t sa = base;                                    // (kStages, BLOCK_M, BLOCK_K) swizzled
    const uint32_t sb = sa + Tl::kStages * Tl::kStageBytesA;     // (kStages, BLOCK_N, BLOCK_K) swizzled
    const uint32_t sout = sb + Tl::kStages * Tl::kStageBytesB;   // (kConsumers, kOutBoxes, 64, 64) swizzled
    const uint32_t sbias = sout + Tl::kConsumers * Tl::kOutBytes;  // (kConsumers, BLOCK_N)
    const uint32_t full = sbias + Tl::kBiasBytes;
    const uint32_t empty = full + Tl::kStages * sizeof(uint64_t);
    auto bar = [](uint32_t set, int stage) { return set + uint32_t(stage) * uint32_t(sizeof(uint64_t)); };

    if (threadIdx.x == 0) {
        for (int s = 0; s < Tl::kStages; ++s) {
            sm90::mbar_init(bar(full, s), 1);
            sm90::mbar_init(bar(empty, s), Tl::kConsumers * kWarpsPerWarpgroup);
        }
        sm90::mbar_fence_init();
    }
    __syncthreads();

    const int k_blocks = Op::k_blocks(p);
    const int tiles = Op::tiles(p);
    const int wg = threadIdx.x / kWarpgroupThreads;
    const int tid = threadIdx.x % kWarpgroupThreads;
    int stage = 0;
    uint32_t phase = 0;

    if (wg == 0) {  // producer
        sm90::warpgroup_reg_dealloc<Tl::kProducerRegs>();
        if (tid != 0) return;
        Op::prefetch(p);
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const typename Op::Coord tc = Op::coord(p, tile);
            for (int kb = 0; kb < k_blocks; ++kb) {
                sm90::mbar_wait(bar(empty, stage), phase ^ 1u);  // the first pass finds every stage free
                sm90::mbar_arrive_expect_tx(bar(full, stage), Tl::kStageBytes);
                Op::load(p, tc, kb, sa + stage * Tl::kStageBytesA, sb + stage * Tl::kStageBytesB, bar(full, stage));
                sm90::next_stage(stage, phase, Tl::kStages);
            }
        }
        return;
    }

    // consumers: warpgroup cw owns rows [64 cw, 64 cw + 64) of each tile
    sm90::warpgroup_reg_alloc<Tl::kConsumerRegs>();
    const int cw = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    const uint32_t a_rows = uint32_t(cw * Tl::kWgmmaM * Tl::kBlockK * Tl::kElemBytes);
    constexpr uint32_t kSliceBytes = Tl::kWgmmaK * Tl::kElemBytes;  // one k16 slice inside a swizzle row
    const T* bias = static_cast<const T*>(p.epi.bias);
    T* bias_s = reinterpret_cast<T*>(smem_raw + (sbias - raw));
    float acc[Tl::kAcc];  // (64, BLOCK_N) per warpgroup, wgmma fragment order
    T* tile_bias = bias_s + cw * Tl::kBlockN;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const typename Op::Coord tc = Op::coord(p, tile);
        // The tile's bias, columns tid + 128 j: loaded now, parked in shared
        // memory after the main loop, so the load latency hides there.
        T bias_v[Tl::kBiasPerThread];
#pragma unroll
        for (int j = 0; j < Tl::kBiasPerThread; ++j) {
            const int bcol = tc.col0 + tid + j * kWarpgroupThreads;
            bias_v[j] = bias && bcol < p.epi.cols ? bias[int64_t(bcol) * p.epi.bias_stride]
                                                  : ElemTraits<T>::from_float(0.0f);
        }
        int prev = -1;
        for (int kb = 0; kb < k_blocks; ++kb) {
            sm90::mbar_wait(bar(full, stage), phase);
            sm90::wgmma_fence_operands(acc);
            sm90::wgmma_fence();
            const uint32_t a0 = sa + stage * Tl::kStageBytesA + a_rows;
            const uint32_t b0 = sb + stage * Tl::kStageBytesB;
#pragma unroll
            for (int kk = 0; kk < Tl::kBlockK / Tl::kWgmmaK; ++kk) {
                sm90::wgmma_ss<T, Tl::kWgmmaN>(acc, sm90::smem_desc_k_sw128(a0 + kk * kSliceBytes),
                                               sm90::smem_desc_k_sw128(b0 + kk * kSliceBytes), (kb | kk) != 0);
            }
            sm90::wgmma_commit();
            // The previous stage's wgmmas are done once at most this one is in flight.
            sm90::wgmma_wait<1>();
            sm90::wgmma_fence_operands(acc);
            if (prev >= 0 && lane == 0) sm90::mbar_arrive(bar(empty, prev));
            prev = stage;
            sm90::next_stage(stage, phase, Tl::kStages);
        }
        sm90::wgmma_wait<0>();
        sm90::wgmma_fence_operands(acc);
        if (prev >= 0 && lane == 0) sm90::mbar_arrive(bar(empty, prev));
        // The bias: replaced once every warp is past the previous tile's
        // epilogue, read once every warp wrote its part.
        warpgroup_sync(cw);
#pragma unroll
        for (int j = 0; j < Tl::kBiasPerThread; ++j) {
            if (Tl::kBlockN % kWarpgroupThreads == 0 || tid + j * kWarpgroupThreads < Tl::kBlockN) {
                tile_bias[tid + j * kWarpgroupThreads] = bias_v[j];
            }
        }
        warpgroup_sync(cw);
        const uint32_t out = sout + uint32_t(cw * Tl::kOutBytes) + uint32_t(warp * Tl::kWarpRowBytes);
#pragma unroll
        for (int round = 0; round < Tl::kStoreRounds; ++round) {
            // This warp's rows of box round % 2 are free once its store of two
            // rounds ago read them (the last round's may still be reading).
            if (lane == 0) sm90::bulk_wait_read<Tl::kOutBoxes - 1>();
            __syncwarp();
            const uint32_t box = out + uint32_t((round % Tl::kOutBoxes) * Tl::kOutBoxBytes);
            stage_tile<T, ACT, Tl>(p.epi, acc, box, tile_bias, lane, round);
            sm90::fence_async_smem();
            __syncwarp();
            if (lane == 0) {
                Op::store(p, tc, cw * Tl::kWgmmaM + warp * Tl::kWarpRows, round * Tl::kOutBoxCols, box);
                sm90::bulk_commit();
            }
        }
    }
    if (lane == 0) sm90::bulk_wait<0>();  // shared memory must outlive the stores' reads
#endif
}

}  // namespace tops::cuda::sm90gemm
