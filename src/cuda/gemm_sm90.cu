// GEMM with bias and activation in its epilogue, for Hopper (sm_90a):
// D = act(alpha * A B + bias), A (batch, M, K) and B^T (batch, N, K) both
// K-contiguous (nn.Linear's x W^T), D (batch, M, N) row-major, f16 or bf16.
//
// Why: cuBLASLt has no epilogue for GELU erf or SiLU, so those ran as a
// second pass over D after the GEMM (a read and a write of M*N values, about
// 10 us of 50 at 4096x3072x768 f16 on an H100). Here the activation is
// applied to the f32 accumulators before the one store.
//
// Strategy: the shared Hopper main loop and epilogue (gemm_sm90_kernel.cuh)
// on 128x256x64 tiles, A and B^T loaded as (rows, 64) boxes of 3-D tensor
// maps (batch, rows, K) and D stored as (16, 64) boxes of (batch, M, N).
// Edges: TMA fills rows and columns past M, N and K with zeros on load and
// writes nothing past M or N on store (N must be a multiple of 8: at a row's
// end the store writes whole 16-byte units).
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <cstring>

#include "common/env.hpp"
#include "cuda/common/tensor_map.hpp"
#include "cuda/gemm.hpp"
#include "cuda/gemm_sm90_kernel.cuh"

namespace tops::cuda {
namespace {

using GemmSm90Tile = sm90gemm::Tile<256>;

struct GemmSm90Params {  // 64-byte aligned by its tensor maps
    CUtensorMap tmap_a;  // (batch or 1, M, K), K innermost
    CUtensorMap tmap_b;  // (batch or 1, N, K), K innermost
    CUtensorMap tmap_d;  // (batch, M, N), N innermost
    sm90gemm::Epilogue epi;  // bias (N) or nullptr, alpha, cols = N
    int k, batch;
    int tiles_m, tiles_n;
    int a_batched, b_batched;  // 0: the operand is shared by every batch entry
};

// The GEMM as the shared kernel's Op: tile t -> (batch, M block, N block).
struct GemmOp {
    using Params = GemmSm90Params;
    struct Coord {
        int b, m0, col0;
    };
#if TOPS_SM90A
    static __device__ __forceinline__ int tiles(const Params& p) { return p.tiles_m * p.tiles_n * p.batch; }
    static __device__ __forceinline__ int k_blocks(const Params& p) {
        return (p.k + GemmSm90Tile::kBlockK - 1) / GemmSm90Tile::kBlockK;
    }
    static __device__ __forceinline__ Coord coord(const Params& p, int tile) {
        const int per_batch = p.tiles_m * p.tiles_n;
        const int b = tile / per_batch;
        const int r = tile - b * per_batch;
        const int tm = r / p.tiles_n;
        return Coord{b, tm * GemmSm90Tile::kBlockM, (r - tm * p.tiles_n) * GemmSm90Tile::kBlockN};
    }
    static __device__ __forceinline__ void prefetch(const Params& p) {
        sm90::tma_prefetch_desc(&p.tmap_a);
        sm90::tma_prefetch_desc(&p.tmap_b);
        sm90::tma_prefetch_desc(&p.tmap_d);
    }
    static __device__ __forceinline__ void load(const Params& p, const Coord& c, int kb, uint32_t sa, uint32_t sb,
                                                uint32_t bar) {
        sm90::tma_load_3d(sa, &p.tmap_a, bar, kb * GemmSm90Tile::kBlockK, c.m0, p.a_batched ? c.b : 0);
        sm90::tma_load_3d(sb, &p.tmap_b, bar, kb * GemmSm90Tile::kBlockK, c.col0, p.b_batched ? c.b : 0);
    }
    // A warp's 16 rows starting at tile row `row`, columns [col, col + 64).
    static __device__ __forceinline__ void store(const Params& p, const Coord& c, int row, int col, uint32_t src) {
        sm90::tma_store_3d(&p.tmap_d, src, c.col0 + col, c.m0 + row, c.b);
    }
#endif
};

using GemmSm90Kernel = void (*)(GemmSm90Params);

// The one dispatch point: dtype x activation (the two cuBLASLt lacks).
GemmSm90Kernel kernel_for(tops_dtype_t dtype, Activation act) {
    const bool f16 = dtype == TOPS_DTYPE_F16;
    if (dtype != TOPS_DTYPE_F16 && dtype != TOPS_DTYPE_BF16) return nullptr;
    switch (act) {
        case Activation::gelu_erf:
            return f16 ? sm90gemm::kernel<__half, Activation::gelu_erf, GemmOp, GemmSm90Tile::kBlockN>
                       : sm90gemm::kernel<__nv_bfloat16, Activation::gelu_erf, GemmOp, GemmSm90Tile::kBlockN>;
        case Activation::silu:
            return f16 ? sm90gemm::kernel<__half, Activation::silu, GemmOp, GemmSm90Tile::kBlockN>
                       : sm90gemm::kernel<__nv_bfloat16, Activation::silu, GemmOp, GemmSm90Tile::kBlockN>;
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
    if (env_switched_off("TOPS_GEMM_SM90")) return "TOPS_GEMM_SM90=0";
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
    return tma_aligned({a, b, d});
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
    p.epi.bias = bias;
    p.epi.bias_stride = q.bias_stride;
    p.epi.alpha = q.alpha;
    p.epi.cols = int(q.n);
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
