// Softmax / log-softmax on CUDA: the kernel instantiation list and the
// planner, the one dispatch point that turns a problem (row length, dtype,
// alignment, mask and lengths, device) into a kernel and its launch shape.
// The kernels and their strategies are described in softmax_kernels.cuh.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/env.hpp"
#include "cuda/softmax_kernels.cuh"

namespace tops::cuda {
namespace {

using namespace softmax_impl;

// ---------------------------------------------------------------- instantiation list
enum class Strategy { kWarp, kDense, kBlock, kStrided };

struct KernelEntry {
    Strategy strategy;
    tops_dtype_t dtype;
    int vec;
    int group;  // warp / dense rows: lanes per row; block rows: 0 = 256-thread budget, 1 = 1024-thread budget
    int iters;  // warp / dense rows only
    int rows;   // warp / dense rows only: rows per lane group
    bool unmasked;  // no mask, no lengths
    const void* fn;
    const char* name;
};

#define TOPS_SOFTMAX_WARP_U(T, DT, NAME, V, I, G, R, U, SUFFIX)                                             \
    {Strategy::kWarp, DT, V, G, I, R, U,                                                                     \
     reinterpret_cast<const void*>(&softmax_warp_rows_kernel<T, V, I, G, R, U>),                             \
     "softmax_" NAME "_warp_g" #G "_i" #I "_r" #R "_v" #V SUFFIX "_cuda"}
#define TOPS_SOFTMAX_WARP(T, DT, NAME, V, I, G, R) TOPS_SOFTMAX_WARP_U(T, DT, NAME, V, I, G, R, false, "")
// Vectorized warp rows come in both forms.
#define TOPS_SOFTMAX_WARP2(T, DT, NAME, V, I, G, R) \
    TOPS_SOFTMAX_WARP(T, DT, NAME, V, I, G, R), TOPS_SOFTMAX_WARP_U(T, DT, NAME, V, I, G, R, true, "_unmasked")
#define TOPS_SOFTMAX_DENSE(T, DT, NAME, V, I, G)                                                   \
    {Strategy::kDense, DT, V, G, I, 1, true, reinterpret_cast<const void*>(&softmax_dense_rows_kernel<T, V, I, G>), \
     "softmax_" NAME "_dense_g" #G "_i" #I "_v" #V "_cuda"}
#define TOPS_SOFTMAX_BLOCK_U(T, DT, NAME, V, U, SUFFIX)                                                       \
    {Strategy::kBlock, DT, V, 0, 0, 0, U,                                                                      \
     reinterpret_cast<const void*>(&softmax_block_rows_kernel<T, V, kBlockSmallThreads, U>),                   \
     "softmax_" NAME "_block_smem_t256_v" #V SUFFIX "_cuda"},                                                  \
    {Strategy::kBlock, DT, V, 1, 0, 0, U,                                                                      \
     reinterpret_cast<const void*>(&softmax_block_rows_kernel<T, V, kBlockMaxThreads, U>),                     \
     "softmax_" NAME "_block_smem_t1024_v" #V SUFFIX "_cuda"}
// VM: elements per 16-byte vector. Warp rows cover up to 32 * VM * 8 elements
// vectorized and 32 * 8 unvectorized; longer unvectorized rows take the block
// kernel. Two rows per lane group where a lane holds at most 2 vectors of a row.
// Vectorized kernels also come without mask and lengths (the common case);
// unvectorized ones (misaligned or strided rows) only in the general form.
#define TOPS_SOFTMAX_DTYPE(T, DT, NAME, VM)                                                                      \
    TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 1, 4, 2), TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 1, 8, 2),                   \
    TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 1, 16, 2), TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 1, 32, 2),                 \
    TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 2, 32, 2), TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 4, 32, 1),                 \
    TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 1, 32, 2),                                                                 \
    TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 2, 32, 2), TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 4, 32, 1),                     \
    TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 8, 32, 1), TOPS_SOFTMAX_BLOCK_U(T, DT, NAME, VM, false, ""),                \
    TOPS_SOFTMAX_BLOCK_U(T, DT, NAME, VM, true, "_unmasked"), TOPS_SOFTMAX_BLOCK_U(T, DT, NAME, 1, false, ""),    \
    TOPS_SOFTMAX_DENSE(T, DT, NAME, VM, 4, 32),                                                                  \
    {Strategy::kStrided, DT, 1, 0, 0, 0, false, reinterpret_cast<const void*>(&softmax_strided_rows_kernel<T>), \
     "softmax_" NAME "_strided_cuda"}
const KernelEntry kKernels[] = {
    TOPS_SOFTMAX_DTYPE(float, TOPS_DTYPE_F32, "f32", 4),
    TOPS_SOFTMAX_WARP2(float, TOPS_DTYPE_F32, "f32", 4, 8, 32, 1),  // 32 f32 values per lane
    TOPS_SOFTMAX_WARP2(float, TOPS_DTYPE_F32, "f32", 4, 4, 8, 1),   // short f32 rows, see kShortRowLanes
    TOPS_SOFTMAX_DENSE(float, TOPS_DTYPE_F32, "f32", 4, 8, 32),
    TOPS_SOFTMAX_DENSE(float, TOPS_DTYPE_F32, "f32", 4, 4, 8),
    TOPS_SOFTMAX_DTYPE(__half, TOPS_DTYPE_F16, "f16", 8),
    TOPS_SOFTMAX_DTYPE(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16", 8),
};

#undef TOPS_SOFTMAX_DTYPE
#undef TOPS_SOFTMAX_BLOCK_U
#undef TOPS_SOFTMAX_DENSE
#undef TOPS_SOFTMAX_WARP2
#undef TOPS_SOFTMAX_WARP
#undef TOPS_SOFTMAX_WARP_U

// The unmasked form where one is instantiated, else the general one.
const KernelEntry* find_kernel(Strategy s, tops_dtype_t dt, int vec, int group, int iters, bool unmasked,
                               int rows = -1) {
    const KernelEntry* general = nullptr;
    for (const KernelEntry& e : kKernels) {
        if (e.strategy == s && e.dtype == dt && e.vec == vec && e.group == group && e.iters == iters &&
            (rows < 0 || e.rows == rows)) {
            if (e.unmasked == unmasked) return &e;
            if (!e.unmasked && !general) general = &e;
        }
    }
    return general;
}

// ---------------------------------------------------------------- planning
struct Launch {
    const KernelEntry* kernel = nullptr;
    int grid = 0;
    int threads = 0;
    size_t smem = 0;
    int64_t cache_vecs = 0;
    int64_t slice_vecs = 0;
    int cluster = 1;
};

int pow2_at_least(int64_t v) {
    int p = 1;
    while (p < v) p *= 2;
    return p;
}

bool unmasked_rows(const SoftmaxParams& sp) { return !sp.mask.present() && !sp.lengths.present(); }

// Largest portable cluster (blocks per row) for rows longer than one block's
// shared memory, and the share of the device's block slots its clusters must
// fill at once (GPC boundaries can leave slots that no cluster fits).
constexpr int kMaxCluster = 8;
constexpr double kMinClusterFill = 0.9;

// Block-rows launch for `cluster` blocks per row: slice, cache and threads.
Launch block_launch(const SoftmaxParams& sp, const DeviceInfo& dev, int vec, int cluster) {
    const int64_t n = sp.x.dims[sp.axis];
    const size_t vec_bytes = size_t(vec) * dtype_size(sp.x.dtype);
    const int64_t nvec = n / vec;
    Launch l;
    l.cluster = cluster;
    l.slice_vecs = (nvec + cluster - 1) / cluster;
    l.threads = int(std::clamp<int64_t>(pow2_at_least((l.slice_vecs + kBlockVecsPerThread - 1) / kBlockVecsPerThread),
                                        kBlockMinThreads, kBlockMaxThreads));
    // group field: 0 = the 256-thread register budget, 1 = the 1024-thread one
    l.kernel = find_kernel(Strategy::kBlock, sp.x.dtype, vec, l.threads <= kBlockSmallThreads ? 0 : 1, 0,
                           unmasked_rows(sp));
    const size_t smem_budget = l.kernel ? dynamic_smem_budget(dev, l.kernel->fn) : 0;
    l.cache_vecs = std::min<int64_t>(l.slice_vecs, int64_t(smem_budget / vec_bytes));
    l.smem = size_t(l.cache_vecs) * vec_bytes;
    return l;
}

Status prepare_smem(const Launch& l, const DeviceInfo& dev) {
    if (l.smem == 0) return Status::ok();
    return allow_dynamic_smem(dev, l.kernel->fn, "softmax: cudaFuncSetAttribute");
}

// Fraction of the device's block slots that clusters of l.cluster blocks can fill at once.
Status cluster_fill(const Launch& l, const DeviceInfo& dev, double* fill) {
    TOPS_RETURN_IF_ERROR(prepare_smem(l, dev));
    int per_sm = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l.kernel->fn, l.threads, l.smem),
        "softmax: cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(unsigned(l.cluster * dev.sm_count));
    cfg.blockDim = dim3(unsigned(l.threads));
    cfg.dynamicSmemBytes = l.smem;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = unsigned(l.cluster);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(cudaOccupancyMaxActiveClusters(&clusters, l.kernel->fn, &cfg),
                                     "softmax: cudaOccupancyMaxActiveClusters"));
    *fill = per_sm > 0 ? double(clusters) * l.cluster / (double(per_sm) * dev.sm_count) : 0.0;
    return Status::ok();
}

// Picks the kernel and launch shape for vectors of `vec` elements: the one
// dispatch point that turns the runtime shape into template parameters.
// `dense`: softmax (not log) with a positive scale over rows at one stride,
// the case softmax_dense_rows_kernel takes (with vectors and no mask or lengths).
Status choose_launch(const SoftmaxParams& sp, const DeviceInfo& dev, bool strided, bool dense, int64_t rows, int vec,
                     Launch* out) {
    const int64_t n = sp.x.dims[sp.axis];
    Launch l;
    if (strided) {
        l.kernel = find_kernel(Strategy::kStrided, sp.x.dtype, 1, 0, 0, false);
        l.threads = kStridedThreads;
    } else if (n <= int64_t(kWarpSize) * vec * std::min(kWarpRowsMaxIters, std::max(1, kWarpRowsMaxValues / vec))) {
        const int64_t per_lane = (n + vec - 1) / vec;  // vectors a full warp would split
        int group = kWarpSize;
        int iters = 1;
        if (vec > 1 && per_lane > kShortRowVecs && per_lane <= kWarpSize &&
            vec * kShortRowIters <= kShortRowMaxValues) {
            group = kShortRowLanes;
            iters = kShortRowIters;
        } else if (per_lane <= kWarpSize) {
            group = std::max(vec == 1 ? kWarpSize : 4, pow2_at_least(per_lane));
        } else {
            iters = pow2_at_least((per_lane + kWarpSize - 1) / kWarpSize);
        }
        l.kernel = find_kernel(Strategy::kWarp, sp.x.dtype, vec, group, iters, unmasked_rows(sp));
        // Dense rows replace the unmasked warp-rows kernels of one row per lane group.
        if (dense && l.kernel && l.kernel->unmasked && l.kernel->rows == 1) {
            if (const KernelEntry* d = find_kernel(Strategy::kDense, sp.x.dtype, vec, group, iters, true)) l.kernel = d;
        }
        l.threads = kWarpRowsThreads;
    } else {
        // Cache as much of the row as the block's opt-in shared memory holds.
        // Rows longer than that are split over a cluster of blocks (sm_90):
        // the largest cluster whose blocks can all be resident at once, so the
        // slices are small and several blocks share an SM (1024x131072: f32
        // 88% of copy bandwidth with 8 x 64 KiB slices, 82% with 4 x 128 KiB;
        // f16 87% with 8 x 32 KiB, 75% with 2 x 128 KiB). Rows that fit stay
        // in one block (4096x32768 f32: 98% in one block, 95% over 2). Rows
        // longer than every cluster's shared memory re-read their uncached tail.
        l = block_launch(sp, dev, vec, 1);
        if (l.kernel && l.cache_vecs < l.slice_vecs && runs_sm90_code(dev, l.kernel->fn)) {
            double best_fill = 0.0;
            for (int c = kMaxCluster; c >= 2; c /= 2) {
                const Launch cl = block_launch(sp, dev, vec, c);
                if (!cl.kernel) continue;
                double fill = 0.0;
                TOPS_RETURN_IF_ERROR(cluster_fill(cl, dev, &fill));
                if (fill > best_fill) {
                    best_fill = fill;
                    l = cl;
                }
                if (fill >= kMinClusterFill) break;
            }
        }
    }
    if (!l.kernel) return Status(TOPS_ERROR_INTERNAL, "softmax: no CUDA kernel instantiated for this case");
    TOPS_RETURN_IF_ERROR(prepare_smem(l, dev));
    int per_sm = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l.kernel->fn, l.threads, l.smem),
        "softmax: cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    if (per_sm < 1) return Status(TOPS_ERROR_INTERNAL, fmt("softmax: ", l.kernel->name, " cannot be resident"));
    int64_t rows_per_block = 1;
    if (l.kernel->strategy == Strategy::kWarp || l.kernel->strategy == Strategy::kDense) {
        rows_per_block = kWarpRowsThreads / l.kernel->group * l.kernel->rows;
    }
    if (l.kernel->strategy == Strategy::kStrided) rows_per_block = kStridedThreads;
    // One block (cluster) per row set, not a persistent grid: the block
    // scheduler balances the tail, where a persistent grid of 3-4 row sets per
    // block leaves whole row sets of imbalance. The kernels still loop, for
    // row counts beyond the grid limit.
    const int64_t needed = (rows + rows_per_block - 1) / rows_per_block;
    l.grid = int(std::max<int64_t>(1, std::min<int64_t>(needed, kMaxGrid / l.cluster)) * l.cluster);
    *out = l;
    return Status::ok();
}

// Outer (non-axis) dims ordered by decreasing x stride, size-1 dims dropped,
// dims merged where x, y, mask and lengths all continue each other.
void build_indexer(const SoftmaxParams& sp, RowIndexer* ix, int64_t* rows) {
    struct Dim {
        int64_t d, xs, ys, ms, ls;
    };
    Dim dims[kMaxRank];
    int nd = 0;
    for (int i = 0; i < sp.x.rank; ++i) {
        if (i == sp.axis || sp.x.dims[i] == 1) continue;
        dims[nd++] = {sp.x.dims[i], sp.x.strides[i], sp.y.strides[i],
                      sp.mask.present() ? sp.mask.strides[i] : 0, sp.lengths.present() ? sp.lengths.strides[i] : 0};
    }
    std::stable_sort(dims, dims + nd, [](const Dim& a, const Dim& b) { return a.xs > b.xs; });
    Dim merged[kMaxRank];
    int nm = 0;
    for (int i = 0; i < nd; ++i) {
        if (nm > 0) {
            Dim& o = merged[nm - 1];
            const Dim& c = dims[i];
            if (o.xs == c.xs * c.d && o.ys == c.ys * c.d && o.ms == c.ms * c.d && o.ls == c.ls * c.d) {
                o = {o.d * c.d, c.xs, c.ys, c.ms, c.ls};
                continue;
            }
        }
        merged[nm++] = dims[i];
    }
    *rows = 1;
    ix->ndim = nm;
    for (int i = 0; i < nm; ++i) {
        ix->div[i] = FastDivmod(uint64_t(merged[i].d));
        ix->xs[i] = merged[i].xs;
        ix->ys[i] = merged[i].ys;
        ix->ms[i] = merged[i].ms;
        ix->ls[i] = merged[i].ls;
        *rows *= merged[i].d;
    }
}

bool all_multiple(const RowIndexer& ix, const int64_t* s, int64_t v) {
    for (int i = 0; i < ix.ndim; ++i) {
        if (s[i] % v != 0) return false;
    }
    return true;
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

class SoftmaxPlanCuda final : public OpPlan {
public:
    SoftmaxPlanCuda(const SoftmaxRowParams& base, const Launch& vec_launch, const Launch& scalar_launch, int vm,
                    bool mask_vec_strides, int device, std::string why)
        : base_(base), vec_(vec_launch), scalar_(scalar_launch), vm_(vm), mask_vec_strides_(mask_vec_strides),
          device_(device), why_(std::move(why)) {}

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (base_.rows == 0 || base_.n == 0) return Status::ok();
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        SoftmaxRowParams p = base_;
        p.x = args.in(TOPS_ARG_X);
        p.y = args.out(TOPS_ARG_Y);
        p.mask = static_cast<const uint8_t*>(args.in(TOPS_ARG_MASK));
        p.lengths = static_cast<const int32_t*>(args.in(TOPS_ARG_LENGTHS));
        const size_t vec_bytes = size_t(vm_) * esize_of(vec_);
        const bool use_vec = vec_.kernel && aligned(p.x, vec_bytes) && aligned(p.y, vec_bytes);
        const Launch& l = use_vec ? vec_ : scalar_;
        p.cache_vecs = l.cache_vecs;
        p.slice_vecs = l.slice_vecs;
        p.cluster = l.cluster;
        p.mask_vec = use_vec && p.mask && mask_vec_strides_ && aligned(p.mask, size_t(vm_));
        void* kargs[] = {&p};
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = dim3(unsigned(l.grid));
        cfg.blockDim = dim3(unsigned(l.threads));
        cfg.dynamicSmemBytes = l.smem;
        cfg.stream = static_cast<cudaStream_t>(ctx.stream);
        cudaLaunchAttribute attr{};
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = unsigned(l.cluster);
        attr.val.clusterDim.y = 1;
        attr.val.clusterDim.z = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = l.cluster > 1 ? 1 : 0;
        cudaError_t err = cudaLaunchKernelExC(&cfg, l.kernel->fn, kargs);
        if (err != cudaSuccess) return cuda_status(err, l.kernel->name, TOPS_ERROR_DEVICE_LAUNCH);
        return launch_status(l.kernel->name);
    }

    const char* kernel_name() const override { return (vec_.kernel ? vec_ : scalar_).kernel->name; }
    std::string reason() const override { return why_; }

private:
    static size_t esize_of(const Launch& l) {
        return l.kernel ? dtype_size(l.kernel->dtype) : 1;
    }

    SoftmaxRowParams base_;
    Launch vec_;     // kernel == nullptr when strides rule out 16-byte vectors
    Launch scalar_;  // always valid
    int vm_;
    bool mask_vec_strides_;
    int device_;
    std::string why_;
};

}  // namespace

Status plan_softmax(const SoftmaxParams& sp, const DeviceInfo& dev, PlanPtr* out) {
    SoftmaxRowParams base;
    build_indexer(sp, &base.ix, &base.rows);
    const int64_t n = sp.x.dims[sp.axis];
    base.n = n;
    base.x_inner = sp.x.strides[sp.axis];
    base.y_inner = sp.y.strides[sp.axis];
    base.mask_inner = sp.mask.present() ? sp.mask.strides[sp.axis] : 0;
    // A zero scale (or one whose product with log2(e) underflows) makes every
    // kept value 0: pre = 0 (x * 0, NaN for infinite x as in x * scale).
    base.scale_log2e = std::fabs(sp.scale) * kLog2e;
    base.pre = sp.scale > 0.0f ? 1.0f : -1.0f;
    if (!(base.scale_log2e > 0.0f)) {
        base.scale_log2e = 1.0f;
        base.pre = 0.0f;
    }
    base.log = sp.log;
    if (n == 1) {
        base.x_inner = 1;
        base.y_inner = 1;
    }
    // The axis is the fastest dim of x unless an outer dim moves faster: then
    // one thread per row keeps neighbouring threads on neighbouring addresses.
    bool strided = false;
    if (base.x_inner != 1 && base.ix.ndim > 0 && base.ix.xs[base.ix.ndim - 1] < base.x_inner) strided = true;
    const int vm = int(16 / dtype_size(sp.x.dtype));
    const bool vec_strides = !strided && base.x_inner == 1 && base.y_inner == 1 && n % vm == 0 &&
                             all_multiple(base.ix, base.ix.xs, vm) && all_multiple(base.ix, base.ix.ys, vm);
    const bool mask_vec_strides = sp.mask.present() && base.mask_inner == 1 && all_multiple(base.ix, base.ix.ms, vm);
    DeviceScope scope(dev.ordinal);
    TOPS_RETURN_IF_ERROR(scope.status());
    Launch vec_launch, scalar_launch;
    // TOPS_SOFTMAX_DENSE=0 keeps the general warp-rows kernels (for comparisons).
    const bool dense = !sp.log && base.pre == 1.0f && base.ix.ndim <= 1 && !env_switched_off("TOPS_SOFTMAX_DENSE");
    if (vec_strides) TOPS_RETURN_IF_ERROR(choose_launch(sp, dev, false, dense, base.rows, vm, &vec_launch));
    TOPS_RETURN_IF_ERROR(choose_launch(sp, dev, strided, false, base.rows, 1, &scalar_launch));
    std::string why = fmt("rows=", base.rows, " n=", n, " outer_dims=", base.ix.ndim,
                          strided ? " axis is not the fastest dim: one thread per row" : "",
                          vec_strides ? fmt(" 16-byte vectors when pointers are aligned (else ",
                                            scalar_launch.kernel->name, ")")
                                      : " no 16-byte vectors (strides or length)",
                          " grid=", (vec_strides ? vec_launch : scalar_launch).grid,
                          " cluster=", (vec_strides ? vec_launch : scalar_launch).cluster,
                          " threads=", (vec_strides ? vec_launch : scalar_launch).threads,
                          " smem=", (vec_strides ? vec_launch : scalar_launch).smem);
    out->reset(new SoftmaxPlanCuda(base, vec_launch, scalar_launch, vm, mask_vec_strides, dev.ordinal,
                                   std::move(why)));
    return Status::ok();
}

}  // namespace tops::cuda
