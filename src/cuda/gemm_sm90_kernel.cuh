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
//
// Split-K over a cluster (an Op with kSplits = 2, for problems with fewer
// tiles than half the SMs): the kernel runs as clusters of two CTAs that walk
// the same tiles, each reducing half the K blocks. Each CTA then finishes
// half the tile's rows: consumer warpgroup `rank` waits for the pair's
// partial sums of its 64 rows, adds them and runs the epilogue, while the
// other warpgroup writes its rows' partial sums into the pair's shared
// memory (distributed shared memory; an mbarrier per CTA for "landed" and
// one for "read"). No f32 partials in global memory, no second kernel, and
// the two CTAs share the hand-over and the epilogue.
//
// A from a halo (an Op with kHaloBytes, the 3x3 convolution): consecutive
// K blocks whose A tiles are shifted windows of one larger box (the filter
// taps of one channel block) load that box once into a halo slot (its own
// ring of two, "halo_full" / "halo_empty"), and the stages carry B alone.
// The consumers gather each K block's A rows from the halo with ldmatrix
// (any row order, so the shift costs nothing) and run wgmma with A in
// registers. Op::halo_walk / halo_step follow a K block's place among its
// halo's (Op::Walk, stepped without divisions), Op::halo_first / halo_last
// mark a halo's first and last K block, walk.shift is the K block's shift in
// halo rows and Op::halo_row places a tile row in the halo.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/common/activation.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/mma.cuh"
#include "cuda/common/sm90.cuh"
#include "cuda/vec_convert.cuh"

namespace tops::cuda::sm90gemm {

using sm90::kWarpgroupThreads;
using sm90::kWarpsPerWarpgroup;

// 128 x BLOCK_N x 64, 4 stages at 256 columns, 5 below. 256 columns is the
// widest wgmma (the fewest shared-memory bytes per FLOP: A and B^T tiles of
// 48 KiB feed 4.2 MFLOP);
// narrower tiles serve problems with fewer output columns (convolutions of
// 64 or 128 channels). Two consumer warpgroups of 64 rows hold BLOCK_N / 2
// f32 accumulators per thread. The loads are latency-bound: at
// 4096x3072x768 f16 on an H100, 128x256 without the activation, 2 stages
// take 43.9 us, 3 stages 34.2 us, no loads at all 29.6 us; so the output is
// staged 64 columns at a time through two 8 KiB boxes per warpgroup, which
// leaves room for a fourth stage. The 64- and 128-column tiles (the
// convolutions) have room for a fifth (the split-K pair's 128-column tile
// then takes 225.6 of 227 KiB): on the H100, N 32, the C64 56x56 layer went
// from 0.0303-0.0304 to 0.0293-0.0295 ms, C128 28x28 from 0.0239-0.0241 to
// 0.0237-0.0238; C256 14x14 and the split C512 7x7 did not move.
template <int kBlockN_>
struct Tile {
    static constexpr int kBlockM = 128;
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kBlockK = 64;
    static constexpr int kStages = kBlockN_ == 256 ? 4 : 5;
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

// CTAs per tile: Op::kSplits where the Op declares it, else 1.
template <class Op, class = void>
struct OpSplits {
    static constexpr int value = 1;
};
template <class Op>
struct OpSplits<Op, std::void_t<decltype(Op::kSplits)>> {
    static constexpr int value = Op::kSplits;
};

// Bytes of one halo slot where the Op's A tiles are windows of a halo
// (Op::kHaloBytes; see the kernel), else 0.
template <class Op, class = void>
struct OpHaloBytes {
    static constexpr int value = 0;
};
template <class Op>
struct OpHaloBytes<Op, std::void_t<decltype(Op::kHaloBytes)>> {
    static constexpr int value = Op::kHaloBytes;
};

// The halo form's K block walk (Op::Walk), else an empty stand-in.
template <class Op, class = void>
struct OpWalk {
    struct type {};
};
template <class Op>
struct OpWalk<Op, std::void_t<typename Op::Walk>> {
    using type = typename Op::Walk;
};

// Dynamic shared memory of kernel<.., BLOCK_N> for SPLITS CTAs per tile and
// halo slots of HALO bytes (0: A tiles in the stages). The split form adds
// one warpgroup's partial sums from the pair, (kAcc / 4, 128 threads)
// float4, and two mbarriers. The halo form keeps no A tiles in the stages:
// two halo slots (one filling while the other is read) take their place,
// and the stages hold B alone.
template <int BLOCK_N, int SPLITS, int HALO = 0>
struct KernelSmem {
    using Tl = Tile<BLOCK_N>;
    // Six 16 KiB B stages next to two 26 KiB halos and the split's partial
    // sums fill the 227 KiB (seven would not fit).
    static constexpr int kHaloStages = 6;
    static constexpr int kHaloSlots = HALO > 0 ? 2 : 0;
    static constexpr int kStages = HALO > 0 ? kHaloStages : Tl::kStages;
    static constexpr int kStageBytesA = HALO > 0 ? 0 : Tl::kStageBytesA;
    static constexpr int kStageBytes = kStageBytesA + Tl::kStageBytesB;
    static constexpr int kPartialBytes = SPLITS > 1 ? Tl::kWgmmaM * BLOCK_N * 4 : 0;
    static constexpr int kSplitExtra = 16 + 2 * int(sizeof(uint64_t));  // alignment of the buffer, 2 barriers
    static constexpr int kRingBytes = kStages * kStageBytes + kHaloSlots * HALO + Tl::kConsumers * Tl::kOutBytes +
                                      Tl::kBiasBytes + 2 * (kStages + kHaloSlots) * int(sizeof(uint64_t)) +
                                      Tl::kSmemAlign;
    static constexpr int kBytes = kRingBytes + (SPLITS > 1 ? kPartialBytes + kSplitExtra : 0);
    static_assert(HALO > 0 || kRingBytes == Tl::kSmemBytes, "without a halo, the tile's own layout");
    static_assert(HALO % Tl::kSmemAlign == 0, "halo slots keep atom alignment");
    static_assert(SPLITS == 1 || (SPLITS == 2 && Tl::kConsumers == 2),
                  "a tile on one CTA, or on a pair that each finish one warpgroup's rows");
    static_assert(kBytes <= 227 * 1024, "shared memory per block");
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
    constexpr int kSplits = OpSplits<Op>::value;
    constexpr int kHaloBytes = OpHaloBytes<Op>::value;
    constexpr bool kHalo = kHaloBytes > 0;
    using Sm = KernelSmem<BLOCK_N, kSplits, kHaloBytes>;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t base = (raw + Tl::kSmemAlign - 1) / Tl::kSmemAlign * Tl::kSmemAlign;
    const uint32_t sa = base;                                    // (kStages, BLOCK_M, BLOCK_K) swizzled
    const uint32_t sb = sa + Sm::kStages * Sm::kStageBytesA;     // (kStages, BLOCK_N, BLOCK_K) swizzled
    const uint32_t shalo = sb + Sm::kStages * Tl::kStageBytesB;  // (kHaloSlots, halo rows, BLOCK_K) swizzled
    const uint32_t sout = shalo + Sm::kHaloSlots * kHaloBytes;   // (kConsumers, kOutBoxes, 64, 64) swizzled
    const uint32_t sbias = sout + Tl::kConsumers * Tl::kOutBytes;  // (kConsumers, BLOCK_N)
    const uint32_t full = sbias + Tl::kBiasBytes;
    const uint32_t empty = full + Sm::kStages * sizeof(uint64_t);
    const uint32_t halo_full = empty + Sm::kStages * sizeof(uint64_t);
    const uint32_t halo_empty = halo_full + Sm::kHaloSlots * sizeof(uint64_t);
    auto bar = [](uint32_t set, int stage) { return set + uint32_t(stage) * uint32_t(sizeof(uint64_t)); };
    // Split-K: the pair's partial sums of this CTA's rows, (kAcc / 4, 128)
    // float4; part_full counts their bytes (the pair's asynchronous stores,
    // expected by this CTA's thread 0 of the receiving warpgroup), part_read
    // the pair's receiving warpgroup's threads (this CTA's buffer in the
    // pair is free again).
    const uint32_t spart = (bar(halo_empty, Sm::kHaloSlots) + 15u) / 16u * 16u;
    const uint32_t part_full = spart + uint32_t(Sm::kPartialBytes);
    const uint32_t part_read = part_full + uint32_t(sizeof(uint64_t));
    constexpr uint32_t kPartArrivals = kWarpgroupThreads;

    if (threadIdx.x == 0) {
        for (int s = 0; s < Sm::kStages; ++s) {
            sm90::mbar_init(bar(full, s), 1);
            sm90::mbar_init(bar(empty, s), Tl::kConsumers * kWarpsPerWarpgroup);
        }
        for (int s = 0; s < Sm::kHaloSlots; ++s) {
            sm90::mbar_init(bar(halo_full, s), 1);
            sm90::mbar_init(bar(halo_empty, s), Tl::kConsumers * kWarpsPerWarpgroup);
        }
        if constexpr (kSplits > 1) {
            sm90::mbar_init(part_full, 1);
            sm90::mbar_init(part_read, kPartArrivals);
        }
        sm90::mbar_fence_init();
    }
    if constexpr (kSplits > 1) {
        sm90::cluster_sync();  // the pair's barriers are initialised before either arrives remotely
    } else {
        __syncthreads();
    }

    // A cluster of kSplits CTAs per tile (blockIdx.x / kSplits); this CTA
    // reduces K blocks [kb0, kb0 + k_blocks).
    const int rank = kSplits > 1 ? int(sm90::cluster_rank()) : 0;
    const int first_tile = blockIdx.x / kSplits, tile_step = gridDim.x / kSplits;
    const int k_blocks = Op::k_blocks(p) / kSplits;
    const int kb0 = rank * k_blocks;
    const int tiles = Op::tiles(p);
    const int wg = threadIdx.x / kWarpgroupThreads;
    const int tid = threadIdx.x % kWarpgroupThreads;
    int stage = 0;
    uint32_t phase = 0;
    int hslot = 0;  // halo ring (kHalo)
    uint32_t hphase = 0;

    if (wg == 0) {  // producer
        sm90::warpgroup_reg_dealloc<Tl::kProducerRegs>();
        if (tid == 0) {
            Op::prefetch(p);
            for (int tile = first_tile; tile < tiles; tile += tile_step) {
                const typename Op::Coord tc = Op::coord(p, tile);
                typename OpWalk<Op>::type walk{};  // halo form: the K block's place among its halo's
                if constexpr (kHalo) walk = Op::halo_walk(p, kb0);
                for (int kb = 0; kb < k_blocks; ++kb) {
                    if constexpr (kHalo) {
                        if (Op::halo_first(p, walk)) {
                            sm90::mbar_wait(bar(halo_empty, hslot), hphase ^ 1u);
                            sm90::mbar_arrive_expect_tx(bar(halo_full, hslot), Op::halo_bytes(p));
                            Op::load_halo(p, tc, kb0 + kb, shalo + uint32_t(hslot * kHaloBytes), bar(halo_full, hslot));
                            sm90::next_stage(hslot, hphase, Sm::kHaloSlots);
                        }
                        Op::halo_step(p, walk);
                    }
                    sm90::mbar_wait(bar(empty, stage), phase ^ 1u);  // the first pass finds every stage free
                    sm90::mbar_arrive_expect_tx(bar(full, stage), Sm::kStageBytes);
                    Op::load(p, tc, kb0 + kb, sa + stage * Sm::kStageBytesA, sb + stage * Tl::kStageBytesB,
                             bar(full, stage));
                    sm90::next_stage(stage, phase, Sm::kStages);
                }
            }
        }
        // A split CTA's shared memory is written by its pair: no thread of
        // the cluster leaves before all are done (as at the consumers' end).
        if constexpr (kSplits > 1) sm90::cluster_sync();
        return;
    }

    // consumers: warpgroup cw owns rows [64 cw, 64 cw + 64) of each tile
    sm90::warpgroup_reg_alloc<Tl::kConsumerRegs>();
    const int cw = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    const uint32_t a_rows = uint32_t(cw * Tl::kWgmmaM * Tl::kBlockK * Tl::kElemBytes);
    constexpr uint32_t kSliceBytes = Tl::kWgmmaK * Tl::kElemBytes;  // one k16 slice inside a swizzle row
    constexpr int kSlices = Tl::kBlockK / Tl::kWgmmaK;
    // Halo form: this lane's row of the tile for ldmatrix (lanes 8i..8i+7
    // address matrix i: rows 0-7 / 8-15 of the warp's 16, k chunk 0 / 1),
    // that row's place in the halo, and two sets of A fragments (one K
    // block's wgmmas may still read a set while the next set loads; unused
    // otherwise).
    int hrow0 = 0;
    if constexpr (kHalo) hrow0 = Op::halo_row(p, cw * Tl::kWgmmaM + warp * Tl::kWarpRows + lane % 16);
    const int kchunk = lane / 16;
    uint32_t a_frag[2][kSlices][4] = {};
    const T* bias = static_cast<const T*>(p.epi.bias);
    T* bias_s = reinterpret_cast<T*>(smem_raw + (sbias - raw));
    float acc[Tl::kAcc];  // (64, BLOCK_N) per warpgroup, wgmma fragment order
    T* tile_bias = bias_s + cw * Tl::kBlockN;
    // Split-K: warpgroup `rank` finishes its rows, the other hands its rows'
    // partial sums to the pair. This thread's float4 j of a partial sits at
    // part_slot + j * kPartStride (here and, mapped, in the pair).
    const bool finishes = kSplits == 1 || cw == rank;
    uint32_t part_phase = 0;
    const uint32_t part_slot = spart + uint32_t(tid) * 16u;
    constexpr uint32_t kPartStride = kWarpgroupThreads * 16u;
    const uint32_t pair = uint32_t(rank) ^ 1u;
    const uint32_t pair_slot = kSplits > 1 ? sm90::cluster_map(part_slot, pair) : 0u;
    const uint32_t pair_full = kSplits > 1 ? sm90::cluster_map(part_full, pair) : 0u;
    const uint32_t pair_read = kSplits > 1 ? sm90::cluster_map(part_read, pair) : 0u;
    for (int tile = first_tile; tile < tiles; tile += tile_step) {
        const typename Op::Coord tc = Op::coord(p, tile);
        // The tile's bias, columns tid + 128 j: loaded now, parked in shared
        // memory after the main loop, so the load latency hides there.
        T bias_v[Tl::kBiasPerThread];
#pragma unroll
        for (int j = 0; j < Tl::kBiasPerThread; ++j) {
            const int bcol = tc.col0 + tid + j * kWarpgroupThreads;
            bias_v[j] = finishes && bias && bcol < p.epi.cols ? bias[int64_t(bcol) * p.epi.bias_stride]
                                                              : ElemTraits<T>::from_float(0.0f);
        }
        int prev = -1;
        typename OpWalk<Op>::type walk{};
        if constexpr (kHalo) walk = Op::halo_walk(p, kb0);
        // One K block: (halo form) its A fragments from the halo, then its
        // wgmmas on the stage, then the previous stage freed once at most this
        // block's wgmmas are in flight. Halo form: A rows for this lane's
        // ldmatrix at row hrow0 + the tap's shift of the halo in slot hslot,
        // 16-byte chunk 2 kk + kchunk of k16 slice kk, at chunk ^ (row % 8)
        // (128-byte swizzle); `retired` is the set the previous block's
        // wgmmas read.
        auto kstep = [&](int kb, uint32_t(&a)[kSlices][4], uint32_t(&retired)[kSlices][4]) {
            if constexpr (kHalo) {
                if (Op::halo_first(p, walk)) sm90::mbar_wait(bar(halo_full, hslot), hphase);
                const int hrow = hrow0 + walk.shift;
                const uint32_t row_addr =
                    shalo + uint32_t(hslot * kHaloBytes) + uint32_t(hrow) * sm90::kSwizzleRowBytes;
#pragma unroll
                for (int kk = 0; kk < kSlices; ++kk) {
                    ldmatrix_x4(a[kk], row_addr + ((uint32_t(2 * kk + kchunk) ^ (uint32_t(hrow) % 8u)) << 4));
                }
                if (Op::halo_last(p, walk)) {  // this warp is done reading the halo
                    __syncwarp();
                    if (lane == 0) sm90::mbar_arrive(bar(halo_empty, hslot));
                    sm90::next_stage(hslot, hphase, Sm::kHaloSlots);
                }
                Op::halo_step(p, walk);
            }
            sm90::mbar_wait(bar(full, stage), phase);
            sm90::wgmma_fence_operands(acc);
            sm90::wgmma_fence();
            const uint32_t a0 = sa + stage * Sm::kStageBytesA + a_rows;
            const uint32_t b0 = sb + stage * Tl::kStageBytesB;
#pragma unroll
            for (int kk = 0; kk < kSlices; ++kk) {
                const uint64_t desc_b = sm90::smem_desc_k_sw128(b0 + kk * kSliceBytes);
                if constexpr (kHalo) {
                    sm90::wgmma_rs<T, Tl::kWgmmaN>(acc, a[kk], desc_b, (kb | kk) != 0);
                } else {
                    sm90::wgmma_ss<T, Tl::kWgmmaN>(acc, sm90::smem_desc_k_sw128(a0 + kk * kSliceBytes), desc_b,
                                                   (kb | kk) != 0);
                }
            }
            sm90::wgmma_commit();
            // The previous stage's wgmmas are done once at most this one is in flight.
            sm90::wgmma_wait<1>();
            sm90::wgmma_fence_operands(acc);
            if constexpr (kHalo) sm90::wgmma_fence_operands(retired);  // free from here
            if (prev >= 0 && lane == 0) sm90::mbar_arrive(bar(empty, prev));
            prev = stage;
            sm90::next_stage(stage, phase, Sm::kStages);
        };
        int kb = 0;
        if constexpr (kHalo) {  // the fragment sets alternate, so two K blocks per pass
            for (; kb + 1 < k_blocks; kb += 2) {
                kstep(kb, a_frag[0], a_frag[1]);
                kstep(kb + 1, a_frag[1], a_frag[0]);
            }
        }
        for (; kb < k_blocks; ++kb) kstep(kb, a_frag[0], a_frag[1]);
        sm90::wgmma_wait<0>();
        sm90::wgmma_fence_operands(acc);
        if constexpr (kHalo) {
            sm90::wgmma_fence_operands(a_frag[0]);
            sm90::wgmma_fence_operands(a_frag[1]);
        }
        if (prev >= 0 && lane == 0) sm90::mbar_arrive(bar(empty, prev));
        if constexpr (kSplits > 1) {
            if (!finishes) {  // hand the pair these rows' partial sums once it has read the last ones
                sm90::mbar_wait_cluster(part_read, part_phase ^ 1u);
#pragma unroll
                for (int j = 0; j < Tl::kAcc / 4; ++j) {
                    sm90::cluster_store_async_v4(
                        pair_slot + uint32_t(j) * kPartStride,
                        make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]), pair_full);
                }
                part_phase ^= 1u;
                continue;
            }
            if (tid == 0) sm90::mbar_arrive_expect_tx(part_full, uint32_t(Sm::kPartialBytes));
            sm90::mbar_wait(part_full, part_phase);
#pragma unroll
            for (int j = 0; j < Tl::kAcc / 4; ++j) {
                const float4 v = sm90::shared_load_v4(part_slot + uint32_t(j) * kPartStride);
                acc[4 * j] += v.x;
                acc[4 * j + 1] += v.y;
                acc[4 * j + 2] += v.z;
                acc[4 * j + 3] += v.w;
            }
            // (after the cluster's last tile nothing is handed over again)
            if (tile + tile_step < tiles) sm90::mbar_arrive_remote(pair_read);
            part_phase ^= 1u;
        }
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
    // Each CTA of a pair writes the other's shared memory and arrives on its
    // barriers: both stay until the whole cluster is past its last access.
    if constexpr (kSplits > 1) sm90::cluster_sync();
#endif
}

}  // namespace tops::cuda::sm90gemm
