// Row-gather transpose for Hopper (sm_90a): rows contiguous in both x and y
// (perms that keep the last dim, e.g. [B, S, H, D] -> [B, H, S, D]) moved by
// TMA alone, global -> shared -> global, with no data in registers.
//
// Why: the vector gather kernel (transpose.cu) spends its issue slots on
// index arithmetic per 16-byte unit and moves each row as an independent
// 128-byte access; on the [32, 512, 12, 64] f16 case it ran at 75-77% of
// the 512 MiB copy rate, behind a plain copy of the same bytes (78-79%).
//
// Strategy: both tensors are described to TMA in y's dim order (innermost
// first): y by its own strides, x by the permuted ones. A box of those dims
// is then one tile that x's map gathers and y's map scatters, so the smem
// layout needs no rearranging. The box keeps whole rows along dim 0 and
// grows alternately along y's next dim (longer contiguous y runs) and x's
// most contiguous dim (longer contiguous x runs) up to the tile target.
// One thread per CTA runs a ring of kStages tiles: the load of tile k is
// issued once the store of tile k - kStages has read its stage, and tile j
// is stored as soon as its load lands. Persistent grid over the tiles;
// partial tiles at the edges are clipped by TMA (loads zero-fill, stores
// skip).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "common/env.hpp"
#include "common/int_math.hpp"
#include "cuda/common/sm90.cuh"
#include "cuda/common/tensor_map.hpp"
#include "cuda/transpose_sm90.hpp"

namespace tops::cuda {
namespace {

// Tiles in flight per CTA: 8 stages of 12 KiB, 2 CTAs per SM, ran the
// [32, 512, 12, 64] f16 case at 81.5-82.2% of the copy rate (H100, write
// flush; 1.03x a plain copy of the same bytes); 4 stages (3 CTAs per SM)
// 75.4%, the vector gather kernel's figure; 12 stages (1 CTA per SM) 79.6%.
// L2 evict-first hints on the loads, the stores or both, and no L2
// promotion: no change.
constexpr int kStages = 8;
constexpr int kThreads = 32;              // one warp; lane 0 issues everything
constexpr int kMaxBoxDim = 256;           // TMA box limit per dim
constexpr int kStageAlign = 128;          // TMA shared destination alignment
constexpr int kMaxTileBytes = 16 * 1024;  // the largest stage
// Boxes grow until at least this: 12 KiB tiles for [.., 12, 64] f16 rows
// (8 rows of S by the 12 of H, 128 bytes each).
constexpr int kTileTargetBytes = 8 * 1024;
constexpr int kMaxCtasPerSm = 3;  // reached only by tiles up to 9 KiB (not measured)
constexpr int64_t kMinRowBytes = 64;          // shorter rows stay on the vector gather kernel
constexpr int64_t kMaxStrideBytes = int64_t(1) << 40;  // TMA global stride limit
static_assert(kMaxTileBytes % kStageAlign == 0, "stages stay aligned");
static_assert(kTileTargetBytes <= kMaxTileBytes, "target within a stage");

struct TransposeSm90Params {  // 64-byte aligned by its tensor maps
    CUtensorMap x_map;        // x in y's dim order, innermost first
    CUtensorMap y_map;
    int box[kTmaMaxRank];
    int tile_count[kTmaMaxRank];
    int tiles;
    uint32_t tile_bytes;   // box bytes (TMA counts the whole box, clipped or not)
    uint32_t stage_bytes;  // tile_bytes rounded up to kStageAlign
};

#if TOPS_SM90A
__device__ __forceinline__ void tile_origin(const TransposeSm90Params& p, int tile, int (&c)[kTmaMaxRank]) {
#pragma unroll
    for (int i = 0; i < kTmaMaxRank; ++i) {
        c[i] = (tile % p.tile_count[i]) * p.box[i];
        tile /= p.tile_count[i];
    }
}
#endif

__global__ void __launch_bounds__(kThreads) transpose_rows_tma_kernel(const __grid_constant__ TransposeSm90Params p) {
#if TOPS_SM90A
    extern __shared__ __align__(kStageAlign) unsigned char smem[];  // (kStages, stage_bytes)
    __shared__ __align__(8) uint64_t full[kStages];
    if (threadIdx.x != 0) return;
    const uint32_t base = smem_addr(smem);
    for (int s = 0; s < kStages; ++s) sm90::mbar_init(smem_addr(&full[s]), 1);
    sm90::mbar_fence_init();
    sm90::tma_prefetch_desc(&p.x_map);
    sm90::tma_prefetch_desc(&p.y_map);
    const int mine = p.tiles > int(blockIdx.x) ? (p.tiles - int(blockIdx.x) + int(gridDim.x) - 1) / int(gridDim.x) : 0;
    for (int k = 0; k < mine + kStages - 1; ++k) {
        const int j = k - (kStages - 1);  // the tile whose load was issued kStages - 1 steps ago
        if (j >= 0) {
            const int s = j % kStages;
            sm90::mbar_wait(smem_addr(&full[s]), uint32_t(j / kStages) & 1u);
            int c[kTmaMaxRank];
            tile_origin(p, int(blockIdx.x) + j * int(gridDim.x), c);
            sm90::tma_store_5d(&p.y_map, base + uint32_t(s) * p.stage_bytes, c);
            sm90::bulk_commit();
        }
        if (k < mine) {
            const int s = k % kStages;
            // The stage's last store (tile k - kStages) is the second newest
            // committed group: wait until it has read shared memory.
            if (k >= kStages) sm90::bulk_wait_read<1>();
            const uint32_t bar = smem_addr(&full[s]);
            sm90::mbar_arrive_expect_tx(bar, p.tile_bytes);
            int c[kTmaMaxRank];
            tile_origin(p, int(blockIdx.x) + k * int(gridDim.x), c);
            sm90::tma_load_5d(base + uint32_t(s) * p.stage_bytes, &p.x_map, bar, c);
        }
    }
    sm90::bulk_wait<0>();
#endif
}

constexpr int kMaxSmemBytes = kStages * kMaxTileBytes;

size_t smem_bytes(const TransposeTmaProblem& q) {
    return size_t(kStages) * size_t(round_up(q.tile_bytes, kStageAlign));
}

CUtensorMapDataType tma_type(int elem_size) {
    return elem_size == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
           : elem_size == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                            : CU_TENSOR_MAP_DATA_TYPE_UINT32;
}

Status encode(const TransposeTmaProblem& q, const void* ptr, const int64_t* strides, CUtensorMap* map,
              const char* what) {
    cuuint64_t dims[kTmaMaxRank], st[kTmaMaxRank - 1];
    cuuint32_t box[kTmaMaxRank];
    for (int i = 0; i < kTmaMaxRank; ++i) {
        dims[i] = cuuint64_t(q.dims[i]);
        box[i] = cuuint32_t(q.box[i]);
        if (i > 0) st[i - 1] = cuuint64_t(strides[i]);
    }
    return encode_tensor_map(map, tma_type(q.elem_size), ptr, kTmaMaxRank, dims, st, box, CU_TENSOR_MAP_SWIZZLE_NONE,
                             what);
}

Status encode_both(const TransposeTmaProblem& q, const void* x, void* y, TransposeSm90Params* p) {
    TOPS_RETURN_IF_ERROR(encode(q, x, q.x_strides, &p->x_map, "transpose sm90 x"));
    return encode(q, y, q.y_strides, &p->y_map, "transpose sm90 y");
}

// Grows box dim i (doubling, or to the whole dim once within 3x of it)
// while the tile stays within a stage; false when it cannot grow.
bool grow_box(TransposeTmaProblem* q, int i, int64_t* bytes) {
    const int64_t cur = q->box[i];
    if (cur >= q->dims[i] || cur >= kMaxBoxDim) return false;
    const int64_t next = std::min<int64_t>(q->dims[i] <= 3 * cur ? q->dims[i] : 2 * cur, kMaxBoxDim);
    if (*bytes / cur * next > kMaxTileBytes) return false;
    *bytes = *bytes / cur * next;
    q->box[i] = int(next);
    return true;
}

}  // namespace

const char* transpose_sm90_kernel_name() { return "transpose_rows_tma_sm90"; }

bool transpose_sm90_pointers_ok(const void* x, const void* y) { return tma_aligned({x, y}); }

std::string transpose_sm90_plan(const TransposeProblem& t, const DeviceInfo& dev, TransposeTmaProblem* out) {
    if (env_switched_off("TOPS_TRANSPOSE_SM90")) return "TOPS_TRANSPOSE_SM90=0";
    if (dev.cc_major != 9 || dev.cc_minor != 0) return "not an sm_90 device";
    if (!t.inner_contiguous() || t.rank < 2) return "not a permutation of contiguous rows";
    if (t.rank > kTmaMaxRank) return "more than 5 dims after merging";
    const int e = int(t.elem_size);
    if (e != 1 && e != 2 && e != 4) return "element size not 1, 2 or 4 bytes";
    TransposeTmaProblem q;
    q.elem_size = e;
    for (int i = 0; i < kTmaMaxRank; ++i) {
        if (i < t.rank) {
            const int k = t.last() - i;
            q.dims[i] = t.dims[k];
            q.x_strides[i] = t.xs[k] * e;
            q.y_strides[i] = t.ys[k] * e;
        } else {  // one-element dims: any valid stride
            q.dims[i] = 1;
            q.x_strides[i] = q.x_strides[i - 1];
            q.y_strides[i] = q.y_strides[i - 1];
        }
        if (q.dims[i] > INT_MAX) return "a dim above 2^31";
    }
    const int64_t row_bytes = q.dims[0] * e;
    if (row_bytes % int64_t(kTmaAddressAlign) != 0 || row_bytes < kMinRowBytes) {
        return "rows shorter than 64 bytes or not a multiple of 16 bytes";
    }
    int x_next = 1;  // x's most contiguous dim after the rows
    for (int i = 1; i < kTmaMaxRank; ++i) {
        for (const int64_t s : {q.x_strides[i], q.y_strides[i]}) {
            if (s <= 0 || s % int64_t(kTmaAddressAlign) != 0 || s >= kMaxStrideBytes) {
                return "a stride TMA cannot take (not a positive multiple of 16 bytes)";
            }
        }
        if (i < t.rank && q.x_strides[i] < q.x_strides[x_next]) x_next = i;
    }
    // Box: whole rows (up to 256 elements), then y's next dim and x's most
    // contiguous dim in turn, then the others, until the tile target.
    for (int i = 0; i < kTmaMaxRank; ++i) q.box[i] = 1;
    q.box[0] = int(std::min<int64_t>(q.dims[0], kMaxBoxDim));
    int64_t bytes = int64_t(q.box[0]) * e;
    while (bytes < kTileTargetBytes) {
        bool grown = grow_box(&q, 1, &bytes);
        if (bytes < kTileTargetBytes && x_next != 1) grown = grow_box(&q, x_next, &bytes) || grown;
        for (int i = 2; !grown && i < t.rank; ++i) grown = grow_box(&q, i, &bytes);
        if (!grown) break;
    }
    int64_t tiles = 1;
    for (int i = 0; i < kTmaMaxRank; ++i) {
        q.tile_count[i] = int(ceil_div(q.dims[i], q.box[i]));
        tiles *= q.tile_count[i];
    }
    if (tiles > INT_MAX) return "too many tiles";
    q.tiles = int(tiles);
    q.tile_bytes = int(bytes);
    const void* fn = reinterpret_cast<const void*>(&transpose_rows_tma_kernel);
    cudaFuncAttributes fa{};
    if (cudaFuncGetAttributes(&fa, fn) != cudaSuccess) {
        (void)cudaGetLastError();
        return "no sm_90a image";
    }
    if (dev.max_smem_per_block_optin < kMaxSmemBytes + int(fa.sharedSizeBytes)) return "too little shared memory";
    if (!tensor_map_encoder()) return "no cuTensorMapEncodeTiled in the driver";
    const void* stand_in = tma_stand_in_address();
    TransposeSm90Params probe{};
    if (!encode_both(q, stand_in, const_cast<void*>(stand_in), &probe).is_ok()) return "strides TMA cannot express";
    if (cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return "shared memory opt-in refused";
    }
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, kThreads, smem_bytes(q)) != cudaSuccess || per_sm < 1) {
        (void)cudaGetLastError();
        return "cannot be resident";
    }
    q.grid = int(std::min<int64_t>(tiles, int64_t(std::min(per_sm, kMaxCtasPerSm)) * dev.sm_count));
    *out = q;
    return std::string();
}

Status launch_transpose_sm90(const TransposeTmaProblem& q, const void* x, void* y, cudaStream_t stream) {
    TransposeSm90Params p{};
    TOPS_RETURN_IF_ERROR(encode_both(q, x, y, &p));
    for (int i = 0; i < kTmaMaxRank; ++i) {
        p.box[i] = q.box[i];
        p.tile_count[i] = q.tile_count[i];
    }
    p.tiles = q.tiles;
    p.tile_bytes = uint32_t(q.tile_bytes);
    p.stage_bytes = uint32_t(smem_bytes(q) / kStages);
    transpose_rows_tma_kernel<<<q.grid, kThreads, smem_bytes(q), stream>>>(p);
    return launch_status(transpose_sm90_kernel_name());
}

}  // namespace tops::cuda
