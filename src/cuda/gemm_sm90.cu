// GEMM with bias and activation in its epilogue, for Hopper (sm_90a):
// D = act(alpha * A B + bias), A (batch, M, K) and B^T (batch, N, K) both
// K-contiguous (nn.Linear's x W^T), D (batch, M, N) row-major, f16 or bf16.
//
// Why: cuBLASLt has no epilogue for GELU erf or SiLU, so those ran as a
// second pass over D after the GEMM (a read and a write of M*N values, about
// 10 us of 50 at 4096x3072x768 f16 on an H100). Here the activation is
// applied to the f32 accumulators before the one store.
//
// Strategy (Hopper's own GEMM path, so the product itself keeps pace with
// cuBLASLt): a persistent grid of one CTA per SM walks output tiles
// (BLOCK_M, BLOCK_N). One producer thread issues TMA loads of
// 128-byte-swizzled (BLOCK_M, 64) A and (BLOCK_N, 64) B^T tiles into a ring
// of stages guarded by mbarriers ("full": bytes landed, "empty": consumers
// done). Two consumer warpgroups each run wgmma m64n256k16 on their 64 rows,
// one k16 slice at a time, keeping one stage's wgmmas in flight while they
// wait for the next. After its main loop each warp writes act(alpha * acc +
// bias) of its 16 rows, 64 columns at a time, into swizzled staging boxes
// that TMA stores to D, and goes on to its next tile; the producer has run
// ahead into it meanwhile. The two warpgroups never wait for each other
// outside the stage ring, so one's epilogue can overlap the other's main loop
// (dropping a per-tile barrier of both measured 1.2 us of 42).
// Edges: TMA fills rows and columns past M, N and K with zeros on load and
// writes nothing past M or N on store (N must be a multiple of 8: at a row's
// end the store writes whole 16-byte units).
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cuda/common/activation.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/sm90.cuh"
#include "cuda/common/tensor_map.hpp"
#include "cuda/gemm.hpp"
#include "cuda/vec_convert.cuh"

namespace tops::cuda {
namespace {

constexpr int kWarpgroupThreads = 128;

// 128x256x64, 4 stages. 256 columns is the widest wgmma (the fewest shared-
// memory bytes per FLOP: A and B^T tiles of 48 KiB feed 4.2 MFLOP); two
// consumer warpgroups of 64 rows hold 128 f32 accumulators per thread. The
// loads are latency-bound: at 4096x3072x768 f16 on an H100, without the
// activation, 2 stages take 43.9 us, 3 stages 34.2 us, no loads at all
// 29.6 us; so the output is staged 64 columns at a time through two 8 KiB
// boxes per warpgroup, which leaves room for a fourth stage.
struct GemmSm90Tile {
    static constexpr int kBlockM = 128;
    static constexpr int kBlockN = 256;
    static constexpr int kBlockK = 64;
    static constexpr int kStages = 4;
    static constexpr int kConsumers = 2;
    static constexpr int kThreads = kWarpgroupThreads * (kConsumers + 1);
    // setmaxnreg budgets: the producer needs few registers, the consumers'
    // accumulators many (40 * 128 + 232 * 256 <= 65536).
    static constexpr int kProducerRegs = 40;
    static constexpr int kConsumerRegs = 232;
    static constexpr int kWgmmaM = 64, kWgmmaN = 256, kWgmmaK = 16;
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
    static constexpr int kOutBytes = kOutBoxes * kOutBoxBytes;                 // per consumer warpgroup
    static constexpr int kBiasBytes = kConsumers * kBlockN * kElemBytes;      // one tile's bias per warpgroup
    static constexpr int kSmemBytes = kStages * kStageBytes + kConsumers * kOutBytes + kBiasBytes +
                                      2 * kStages * int(sizeof(uint64_t)) + kSmemAlign;

    static_assert(kBlockM == kConsumers * kWgmmaM, "one wgmma row block per consumer warpgroup");
    static_assert(kBlockN == kWgmmaN, "one wgmma covers the tile's columns");
    static_assert(kBlockN % kWarpgroupThreads == 0, "whole bias columns per consumer thread");
    static_assert(kAcc == 128, "a m64n256 wgmma holds 128 accumulators per thread");
    static_assert(kBlockK * kElemBytes == int(sm90::kSwizzleRowBytes), "a K block is one swizzle row");
    static_assert(kBlockK % kWgmmaK == 0, "whole k16 slices per stage");
    static_assert(kStageBytesA % kSmemAlign == 0 && kStageBytesB % kSmemAlign == 0, "stages keep atom alignment");
    static_assert((kWgmmaM * kBlockK * kElemBytes) % kSmemAlign == 0, "a consumer's rows start on an atom");
    static_assert(kOutBoxBytes % kSmemAlign == 0, "staging boxes keep atom alignment");
    static_assert(kStoreRounds * kOutBoxCols == kBlockN, "whole boxes per tile");
    static_assert(kWarpRows * (kWarpgroupThreads / 32) == kWgmmaM && kWarpRowBytes % kSmemAlign == 0,
                  "a warp's rows are whole swizzle atoms");
    static_assert(kSmemBytes <= 227 * 1024, "shared memory per block");
    static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumers * kWarpgroupThreads <= 65536,
                  "register file");
};

struct GemmSm90Params {  // 64-byte aligned by its tensor maps
    CUtensorMap tmap_a;  // (batch or 1, M, K), K innermost
    CUtensorMap tmap_b;  // (batch or 1, N, K), K innermost
    CUtensorMap tmap_d;  // (batch, M, N), N innermost
    const void* bias;    // (N) or nullptr
    int64_t bias_stride;
    float alpha;
    int m, n, k, batch;
    int tiles_m, tiles_n;
    int a_batched, b_batched;  // 0: the operand is shared by every batch entry
};

#if TOPS_SM90A
constexpr int kWarpsPerWarpgroup = kWarpgroupThreads / 32;

struct TileCoord {
    int b, m0, n0;
};

__device__ __forceinline__ TileCoord tile_coord(const GemmSm90Params& p, int tile) {
    const int per_batch = p.tiles_m * p.tiles_n;
    const int b = tile / per_batch;
    const int r = tile - b * per_batch;
    const int tm = r / p.tiles_n;
    return TileCoord{b, tm * GemmSm90Tile::kBlockM, (r - tm * p.tiles_n) * GemmSm90Tile::kBlockN};
}

__device__ __forceinline__ void next_stage(int& stage, uint32_t& phase) {
    if (++stage == GemmSm90Tile::kStages) {
        stage = 0;
        phase ^= 1u;
    }
}

// Consumer epilogue, store round `round`: act(alpha * acc + bias) of this
// thread's fragment of columns [64 round, 64 round + 64) of its warp's 16
// rows into the warp's part `box` of a staging box ((16, 64), 128-byte
// swizzled: 16-byte chunk j of row r sits at chunk j ^ (r % 8), so the 8
// rows of one store hit 8 distinct chunks). bias_s holds the tile's BLOCK_N
// bias values.
template <class T, Activation ACT>
__device__ __forceinline__ void stage_tile(const GemmSm90Params& p, const float (&acc)[GemmSm90Tile::kAcc], uint32_t box,
                                           const T* bias_s, int lane, int round) {
    using Tile = GemmSm90Tile;
    using Pair = typename PairTraits<T>::Pair;
    constexpr int kChunks = Tile::kOutBoxCols / 8;  // 8-column (16-byte) chunks per round: one swizzle row
    const int quad = lane % 4, row8 = lane / 4;  // row8 == row % 8 for every row this thread holds
#pragma unroll
    for (int cc = 0; cc < kChunks; ++cc) {
        const int c = round * kChunks + cc;  // chunk of the fragment
        const float2 b = PairTraits<T>::to_float2(*reinterpret_cast<const Pair*>(bias_s + 8 * c + 2 * quad));
        const uint32_t chunk = uint32_t((cc ^ row8) * 16 + 4 * quad);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row8 + 8 * h;  // of this warp's 16 rows
            float v0 = fmaf(p.alpha, acc[4 * c + 2 * h], b.x);
            float v1 = fmaf(p.alpha, acc[4 * c + 2 * h + 1], b.y);
            activate_pair<ACT, T>(v0, v1);
            const Pair v = PairTraits<T>::from_float2(v0, v1);
            uint32_t bits;
            memcpy(&bits, &v, sizeof(bits));
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(box + uint32_t(row) * sm90::kSwizzleRowBytes + chunk),
                         "r"(bits));
        }
    }
}

// Named barrier of one consumer warpgroup (id 0 is __syncthreads). The two
// consumer warpgroups never wait for each other outside the stage ring, so
// one's epilogue can overlap the other's main loop (1.2 us of 42 at
// 4096x3072x768 f16 against a barrier of both per tile).
constexpr int kWarpgroupBarrier0 = 1;
__device__ __forceinline__ void warpgroup_sync(int cw) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(kWarpgroupBarrier0 + cw), "n"(kWarpgroupThreads) : "memory");
}

#endif  // TOPS_SM90A

template <class T, Activation ACT>
__global__ void __launch_bounds__(GemmSm90Tile::kThreads, 1)
    gemm_sm90_tma_wgmma_128x256x64_kernel(const __grid_constant__ GemmSm90Params p) {
#if TOPS_SM90A
    using Tile = GemmSm90Tile;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t base = (raw + Tile::kSmemAlign - 1) / Tile::kSmemAlign * Tile::kSmemAlign;
    const uint32_t sa = base;                                     // (kStages, BLOCK_M, BLOCK_K) swizzled
    const uint32_t sb = sa + Tile::kStages * Tile::kStageBytesA;  // (kStages, BLOCK_N, BLOCK_K) swizzled
    const uint32_t sout = sb + Tile::kStages * Tile::kStageBytesB;   // (kConsumers, kOutBoxes, 64, 64) swizzled
    const uint32_t sbias = sout + Tile::kConsumers * Tile::kOutBytes;  // (kConsumers, BLOCK_N)
    const uint32_t full = sbias + Tile::kBiasBytes;
    const uint32_t empty = full + Tile::kStages * sizeof(uint64_t);
    auto bar = [](uint32_t set, int stage) { return set + uint32_t(stage) * uint32_t(sizeof(uint64_t)); };

    if (threadIdx.x == 0) {
        for (int s = 0; s < Tile::kStages; ++s) {
            sm90::mbar_init(bar(full, s), 1);
            sm90::mbar_init(bar(empty, s), Tile::kConsumers * kWarpsPerWarpgroup);
        }
        sm90::mbar_fence_init();
    }
    __syncthreads();

    const int k_blocks = (p.k + Tile::kBlockK - 1) / Tile::kBlockK;
    const int tiles = p.tiles_m * p.tiles_n * p.batch;
    const int wg = threadIdx.x / kWarpgroupThreads;
    const int tid = threadIdx.x % kWarpgroupThreads;
    int stage = 0;
    uint32_t phase = 0;

    if (wg == 0) {  // producer
        sm90::warpgroup_reg_dealloc<Tile::kProducerRegs>();
        if (tid != 0) return;
        sm90::tma_prefetch_desc(&p.tmap_a);
        sm90::tma_prefetch_desc(&p.tmap_b);
        sm90::tma_prefetch_desc(&p.tmap_d);
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const TileCoord tc = tile_coord(p, tile);
            for (int kb = 0; kb < k_blocks; ++kb) {
                sm90::mbar_wait(bar(empty, stage), phase ^ 1u);  // the first pass finds every stage free
                sm90::mbar_arrive_expect_tx(bar(full, stage), Tile::kStageBytes);
                sm90::tma_load_3d(sa + stage * Tile::kStageBytesA, &p.tmap_a, bar(full, stage), kb * Tile::kBlockK,
                                  tc.m0, p.a_batched ? tc.b : 0);
                sm90::tma_load_3d(sb + stage * Tile::kStageBytesB, &p.tmap_b, bar(full, stage), kb * Tile::kBlockK,
                                  tc.n0, p.b_batched ? tc.b : 0);
                next_stage(stage, phase);
            }
        }
        return;
    }

    // consumers: warpgroup cw owns rows [64 cw, 64 cw + 64) of each tile
    sm90::warpgroup_reg_alloc<Tile::kConsumerRegs>();
    const int cw = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    const uint32_t a_rows = uint32_t(cw * Tile::kWgmmaM * Tile::kBlockK * Tile::kElemBytes);
    constexpr uint32_t kSliceBytes = Tile::kWgmmaK * Tile::kElemBytes;  // one k16 slice inside a swizzle row
    const T* bias = static_cast<const T*>(p.bias);
    T* bias_s = reinterpret_cast<T*>(smem_raw + (sbias - raw));
    float acc[Tile::kAcc];  // (64, BLOCK_N) per warpgroup, wgmma fragment order
    T* tile_bias = bias_s + cw * Tile::kBlockN;
    constexpr int kBiasPerThread = Tile::kBlockN / kWarpgroupThreads;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const TileCoord tc = tile_coord(p, tile);
        // The tile's bias, columns tid + 128 j: loaded now, parked in shared
        // memory after the main loop, so the load latency hides there.
        T bias_v[kBiasPerThread];
#pragma unroll
        for (int j = 0; j < kBiasPerThread; ++j) {
            const int bcol = tc.n0 + tid + j * kWarpgroupThreads;
            bias_v[j] = bias && bcol < p.n ? bias[int64_t(bcol) * p.bias_stride] : ElemTraits<T>::from_float(0.0f);
        }
        int prev = -1;
        for (int kb = 0; kb < k_blocks; ++kb) {
            sm90::mbar_wait(bar(full, stage), phase);
            sm90::wgmma_fence_operands(acc);
            sm90::wgmma_fence();
            const uint32_t a0 = sa + stage * Tile::kStageBytesA + a_rows;
            const uint32_t b0 = sb + stage * Tile::kStageBytesB;
#pragma unroll
            for (int kk = 0; kk < Tile::kBlockK / Tile::kWgmmaK; ++kk) {
                sm90::wgmma_ss<T, Tile::kWgmmaN>(acc, sm90::smem_desc_k_sw128(a0 + kk * kSliceBytes),
                                          sm90::smem_desc_k_sw128(b0 + kk * kSliceBytes), (kb | kk) != 0);
            }
            sm90::wgmma_commit();
            // The previous stage's wgmmas are done once at most this one is in flight.
            sm90::wgmma_wait<1>();
            sm90::wgmma_fence_operands(acc);
            if (prev >= 0 && lane == 0) sm90::mbar_arrive(bar(empty, prev));
            prev = stage;
            next_stage(stage, phase);
        }
        sm90::wgmma_wait<0>();
        sm90::wgmma_fence_operands(acc);
        if (prev >= 0 && lane == 0) sm90::mbar_arrive(bar(empty, prev));
        // The bias: replaced once every warp is past the previous tile's
        // epilogue, read once every warp wrote its part.
        warpgroup_sync(cw);
#pragma unroll
        for (int j = 0; j < kBiasPerThread; ++j) tile_bias[tid + j * kWarpgroupThreads] = bias_v[j];
        warpgroup_sync(cw);
        const uint32_t out = sout + uint32_t(cw * Tile::kOutBytes) + uint32_t(warp * Tile::kWarpRowBytes);
#pragma unroll
        for (int round = 0; round < Tile::kStoreRounds; ++round) {
            // This warp's rows of box round % 2 are free once its store of two
            // rounds ago read them (the last round's may still be reading).
            if (lane == 0) sm90::bulk_wait_read<Tile::kOutBoxes - 1>();
            __syncwarp();
            const uint32_t box = out + uint32_t((round % Tile::kOutBoxes) * Tile::kOutBoxBytes);
            stage_tile<T, ACT>(p, acc, box, tile_bias, lane, round);
            sm90::fence_async_smem();
            __syncwarp();
            if (lane == 0) {
                sm90::tma_store_3d(&p.tmap_d, box, tc.n0 + round * Tile::kOutBoxCols,
                                   tc.m0 + cw * Tile::kWgmmaM + warp * Tile::kWarpRows, tc.b);
                sm90::bulk_commit();
            }
        }
    }
    if (lane == 0) sm90::bulk_wait<0>();  // shared memory must outlive the stores' reads
#endif
}

using GemmSm90Kernel = void (*)(GemmSm90Params);

// The one dispatch point: dtype x activation (the two cuBLASLt lacks).
GemmSm90Kernel kernel_for(tops_dtype_t dtype, Activation act) {
    const bool f16 = dtype == TOPS_DTYPE_F16;
    if (dtype != TOPS_DTYPE_F16 && dtype != TOPS_DTYPE_BF16) return nullptr;
    switch (act) {
        case Activation::gelu_erf:
            return f16 ? gemm_sm90_tma_wgmma_128x256x64_kernel<__half, Activation::gelu_erf>
                       : gemm_sm90_tma_wgmma_128x256x64_kernel<__nv_bfloat16, Activation::gelu_erf>;
        case Activation::silu:
            return f16 ? gemm_sm90_tma_wgmma_128x256x64_kernel<__half, Activation::silu>
                       : gemm_sm90_tma_wgmma_128x256x64_kernel<__nv_bfloat16, Activation::silu>;
        default: return nullptr;
    }
}

// (batch or 1, rows, cols) matrix with unit column stride -> tensor map of
// (box_rows, 64) boxes, 128-byte swizzled.
Status encode_matrix(CUtensorMap* map, tops_dtype_t dtype, const void* ptr, int64_t rows, int64_t cols, int64_t ld,
                     int64_t batch_stride, int64_t batch, int box_rows) {
    const uint64_t es = GemmSm90Tile::kElemBytes;
    const bool batched = batch_stride != 0 && batch > 1;
    const cuuint64_t dims[3] = {cuuint64_t(cols), cuuint64_t(rows), cuuint64_t(batched ? batch : 1)};
    const cuuint64_t strides[2] = {cuuint64_t(ld) * es, cuuint64_t(batched ? batch_stride : ld * rows) * es};
    static_assert(GemmSm90Tile::kBlockK == GemmSm90Tile::kOutBoxCols, "one box width for operands and output");
    const cuuint32_t box[3] = {cuuint32_t(GemmSm90Tile::kBlockK), cuuint32_t(box_rows), 1};
    return encode_tensor_map_sw128(map, dtype, ptr, 3, dims, strides, box, "gemm sm90");
}

}  // namespace

const char* gemm_sm90_kernel_name() { return "gemm_sm90_tma_wgmma_128x256x64"; }

std::string gemm_sm90_plan(const GemmParams& p, const DeviceInfo& dev, GemmSm90Problem* out) {
    if (p.act != Activation::gelu_erf && p.act != Activation::silu) return "activation has a cuBLASLt epilogue";
    if (p.c.present()) return "C is added";
    if (p.a.dtype != p.b.dtype || p.a.dtype != p.d.dtype) return "mixed dtypes";
    // (batch, rows, cols) strides; a stride over a dim of one element is free.
    const int64_t* sa = p.a.strides;  // A (batch, M, K)
    const int64_t* sb = p.b.strides;  // B (batch, K, N)
    const int64_t* sd = p.d.strides;  // D (batch, M, N)
    if ((sa[2] != 1 && p.k > 1) || (sb[1] != 1 && p.k > 1) || (sd[2] != 1 && p.n > 1)) {
        return "A, B^T or D not contiguous along K / N";
    }
    GemmSm90Problem q;
    q.dtype = p.a.dtype;
    q.act = p.act;
    q.m = p.m;
    q.n = p.n;
    q.k = p.k;
    q.batch = p.batch;
    constexpr int64_t kRowAlign = 16 / GemmSm90Tile::kElemBytes;
    auto row_of = [](int64_t n) { return (n + kRowAlign - 1) / kRowAlign * kRowAlign; };
    q.lda = p.m > 1 ? sa[1] : row_of(p.k);
    q.ldb = p.n > 1 ? sb[2] : row_of(p.k);
    q.ldd = p.m > 1 ? sd[1] : row_of(p.n);
    q.a_batch_stride = p.batch > 1 ? sa[0] : 0;
    q.b_batch_stride = p.batch > 1 ? sb[0] : 0;
    q.d_batch_stride = sd[0];
    q.bias_stride = p.bias.present() ? p.bias.strides[0] : 0;
    q.alpha = p.alpha;
    *out = q;
    return gemm_sm90_unusable(q, dev);
}

std::string gemm_sm90_unusable(const GemmSm90Problem& q, const DeviceInfo& dev) {
    const char* env = std::getenv("TOPS_GEMM_SM90");
    if (env && env[0] == '0') return "TOPS_GEMM_SM90=0";
    if (dev.cc_major != 9 || dev.cc_minor != 0) return "not an sm_90 device";
    const GemmSm90Kernel kernel = kernel_for(q.dtype, q.act);
    if (!kernel) return "dtype or activation not covered";
    cudaFuncAttributes fa{};
    if (cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(kernel)) != cudaSuccess) {
        (void)cudaGetLastError();
        return "no sm_90a image";
    }
    if (dev.max_smem_per_block_optin < GemmSm90Tile::kSmemBytes) return "too little shared memory";
    if (!tensor_map_encoder()) return "no cuTensorMapEncodeTiled in the driver";
    constexpr int64_t kAlignElems = 16 / GemmSm90Tile::kElemBytes;  // TMA: 16-byte strides
    if (q.lda % kAlignElems || q.ldb % kAlignElems || q.a_batch_stride % kAlignElems ||
        q.b_batch_stride % kAlignElems) {
        return "A or B strides not multiples of 16 bytes";
    }
    if (q.lda < q.k || q.ldb < q.k) return "A or B rows overlap";
    // The TMA store writes whole 16-byte units at a row's end.
    if (q.n % kAlignElems) return "N not a multiple of 16 bytes";
    if (q.ldd % kAlignElems || (q.batch > 1 && q.d_batch_stride % kAlignElems)) return "D strides not multiples of 16 bytes";
    if (q.ldd < q.n) return "D rows overlap";
    const int64_t tiles_m = (q.m + GemmSm90Tile::kBlockM - 1) / GemmSm90Tile::kBlockM;
    const int64_t tiles_n = (q.n + GemmSm90Tile::kBlockN - 1) / GemmSm90Tile::kBlockN;
    if (q.m > INT_MAX || q.n > INT_MAX || q.k > INT_MAX || q.batch > INT_MAX || tiles_m * tiles_n * q.batch > INT_MAX) {
        return "extents past 32-bit tile coordinates";
    }
    if (cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             GemmSm90Tile::kSmemBytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return "shared memory opt-in refused";
    }
    return std::string();
}

bool gemm_sm90_pointers_ok(const void* a, const void* b, const void* d) {
    return reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(d) % 16 == 0;
}

Status launch_gemm_sm90(const GemmSm90Problem& q, const void* a, const void* b, void* d, const void* bias,
                        int sm_count, cudaStream_t stream) {
    GemmSm90Params p{};
    TOPS_RETURN_IF_ERROR(encode_matrix(&p.tmap_a, q.dtype, a, q.m, q.k, q.lda, q.a_batch_stride, q.batch,
                                       GemmSm90Tile::kBlockM));
    TOPS_RETURN_IF_ERROR(encode_matrix(&p.tmap_b, q.dtype, b, q.n, q.k, q.ldb, q.b_batch_stride, q.batch,
                                       GemmSm90Tile::kBlockN));
    TOPS_RETURN_IF_ERROR(encode_matrix(&p.tmap_d, q.dtype, d, q.m, q.n, q.ldd, q.d_batch_stride, q.batch,
                                       GemmSm90Tile::kWarpRows));
    p.bias = bias;
    p.bias_stride = q.bias_stride;
    p.alpha = q.alpha;
    p.m = int(q.m);
    p.n = int(q.n);
    p.k = int(q.k);
    p.batch = int(q.batch);
    p.tiles_m = int((q.m + GemmSm90Tile::kBlockM - 1) / GemmSm90Tile::kBlockM);
    p.tiles_n = int((q.n + GemmSm90Tile::kBlockN - 1) / GemmSm90Tile::kBlockN);
    p.a_batched = q.a_batch_stride != 0 && q.batch > 1;
    p.b_batched = q.b_batch_stride != 0 && q.batch > 1;
    const int64_t tiles = int64_t(p.tiles_m) * p.tiles_n * p.batch;
    const int grid = int(tiles < sm_count ? tiles : sm_count);
    kernel_for(q.dtype, q.act)<<<grid, GemmSm90Tile::kThreads, GemmSm90Tile::kSmemBytes, stream>>>(p);
    return launch_status(gemm_sm90_kernel_name());
}

}  // namespace tops::cuda
