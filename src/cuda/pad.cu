// unpad / pad on CUDA: token rows moved between the padded [B, S, F] and the
// packed [total, F] layouts, graph-safe (no host synchronization: the packed
// offsets never leave the device).
//
// unpad launches two kernels on the stream:
//  1. pad_scan_lengths_kernel: one block scans the clamped lengths into
//     cu_seqlens (cub::BlockScan over chunks of kScanThreads, carrying the
//     running sum in 64 bits; clamping each prefix to total is the same as
//     clamping the running sum at every step, since both are monotone).
//  2. pad_rows_kernel<VB, kUnpad = true>: copies the valid rows. On sm_90 it
//     is a programmatic dependent of the scan (common/device.cuh): its blocks
//     are resident while the one-block scan runs and wait for its cu_seqlens,
//     instead of the launch starting only when the scan has drained.
// pad launches pad_rows_kernel<VB, false> only: every padded row is written,
// from its packed row or as zeros.
// The row kernel walks the flattened (padded row, unit) space, where a unit
// is VB bytes (16 down to 1: the widest that the row length, the row strides
// and the pointers allow), so consecutive threads touch consecutive bytes of
// a row and any row length gives whole-warp coalesced traffic. Each thread
// issues kUnroll independent loads before its stores. A row's packed offset
// comes from two cu_seqlens reads (L1-resident: B + 1 integers). Work is
// sized by the padded shape, known when the op is created; rows of padding
// cost unpad one offset read and nothing else. A feature stride other than
// 1 uses VB = the element size with the strides carried in elements.
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/common/device.cuh"
#include "cuda/ops.hpp"

namespace tops::cuda {
namespace {

constexpr int kScanThreads = 256;
constexpr int kRowThreads = 256;
constexpr int kUnroll = 4;
constexpr int kVectorBytes[] = {16, 8, 4, 2, 1};
constexpr int kNumVectorBytes = 5;
static_assert(kRowThreads % kWarpSize == 0, "row kernel blocks are whole warps");

struct PadScanParams {
    const int32_t* lengths = nullptr;
    int32_t* cu_seqlens = nullptr;
    int64_t batch = 0;
    int64_t seqlen = 0;
    int64_t total = 0;
    int64_t lengths_stride = 0;  // elements
    int64_t cu_stride = 0;       // elements
};

__global__ void __launch_bounds__(kScanThreads) pad_scan_lengths_kernel(const __grid_constant__ PadScanParams p) {
    using Scan = cub::BlockScan<long long, kScanThreads>;
    __shared__ typename Scan::TempStorage temp;
    allow_dependent_launch();  // the row kernel may start; it waits before reading cu_seqlens
    if (threadIdx.x == 0) p.cu_seqlens[0] = 0;
    long long carry = 0;
    for (int64_t base = 0; base < p.batch; base += kScanThreads) {
        const int64_t b = base + threadIdx.x;
        long long len = 0;
        if (b < p.batch) len = min(max((long long)p.lengths[b * p.lengths_stride], 0ll), (long long)p.seqlen);
        long long inclusive = 0, chunk = 0;
        Scan(temp).InclusiveSum(len, inclusive, chunk);
        if (b < p.batch) p.cu_seqlens[(b + 1) * p.cu_stride] = int32_t(min(carry + inclusive, (long long)p.total));
        carry += chunk;
        __syncthreads();  // temp is reused by the next chunk
    }
}

// Strides in units of VB bytes.
struct PadRowsParams {
    const void* src = nullptr;
    void* dst = nullptr;
    const int32_t* cu_seqlens = nullptr;
    int64_t cu_stride = 0;
    int64_t units = 0;            // batch * seqlen * row_units
    FastDivmod row_units;         // units per row
    FastDivmod seqlen;
    int64_t seqlen_value = 0;
    int64_t total = 0;
    int64_t padded_b = 0, padded_s = 0, padded_f = 0;  // padded strides (batch, seq, unit)
    int64_t packed_t = 0, packed_f = 0;                // packed strides (token, unit)
};

template <int VB, bool kUnpad>
__global__ void __launch_bounds__(kRowThreads) pad_rows_kernel(const __grid_constant__ PadRowsParams p) {
    using U = typename ByteUnit<VB>::type;
    const U* src = static_cast<const U*>(p.src);
    U* dst = static_cast<U*>(p.dst);
    const int64_t chunk = int64_t(kRowThreads) * kUnroll;
    if constexpr (kUnpad) wait_for_primary();  // cu_seqlens comes from the scan kernel
    for (int64_t base = int64_t(blockIdx.x) * chunk + threadIdx.x; base < p.units; base += int64_t(gridDim.x) * chunk) {
        U v[kUnroll];
        int64_t out[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            out[u] = -1;
            const int64_t i = base + int64_t(u) * kRowThreads;
            if (i >= p.units) continue;
            uint64_t row, col, b, s;
            p.row_units.divmod(uint64_t(i), &row, &col);
            p.seqlen.divmod(row, &b, &s);
            const int64_t start = min(max(int64_t(__ldg(p.cu_seqlens + b * p.cu_stride)), int64_t(0)), p.total);
            const int64_t end = __ldg(p.cu_seqlens + (b + 1) * p.cu_stride);
            const int64_t n = min(max(end - start, int64_t(0)), p.seqlen_value);
            const bool valid = int64_t(s) < n && start + int64_t(s) < p.total;
            const int64_t padded_off = int64_t(b) * p.padded_b + int64_t(s) * p.padded_s + int64_t(col) * p.padded_f;
            const int64_t packed_off = (start + int64_t(s)) * p.packed_t + int64_t(col) * p.packed_f;
            if constexpr (kUnpad) {
                if (valid) {
                    v[u] = src[padded_off];
                    out[u] = packed_off;
                }
            } else {
                v[u] = U{};
                if (valid) v[u] = src[packed_off];
                out[u] = padded_off;
            }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (out[u] >= 0) dst[out[u]] = v[u];
        }
    }
}

using RowKernel = void (*)(PadRowsParams);

template <bool kUnpad>
RowKernel row_kernel(int vb) {
    switch (vb) {
        case 16: return pad_rows_kernel<16, kUnpad>;
        case 8: return pad_rows_kernel<8, kUnpad>;
        case 4: return pad_rows_kernel<4, kUnpad>;
        case 2: return pad_rows_kernel<2, kUnpad>;
        default: return pad_rows_kernel<1, kUnpad>;
    }
}

const char* row_kernel_name(bool unpad, int vb) {
    static const char* const kUnpadNames[] = {"unpad_rows_16B_cuda", "unpad_rows_8B_cuda", "unpad_rows_4B_cuda",
                                              "unpad_rows_2B_cuda", "unpad_rows_1B_cuda"};
    static const char* const kPadNames[] = {"pad_rows_16B_cuda", "pad_rows_8B_cuda", "pad_rows_4B_cuda",
                                            "pad_rows_2B_cuda", "pad_rows_1B_cuda"};
    for (int w = 0; w < kNumVectorBytes; ++w) {
        if (kVectorBytes[w] == vb) return unpad ? kUnpadNames[w] : kPadNames[w];
    }
    return unpad ? "unpad_rows_cuda" : "pad_rows_cuda";
}

bool aligned(const void* ptr, int64_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % uint64_t(bytes) == 0; }

class PadPlanCuda final : public OpPlan {
public:
    PadPlanCuda(const PadParams& p, const DeviceInfo& dev) : p_(p), device_(dev.ordinal) {
        esize_ = int64_t(dtype_size(p.padded.dtype));
        const int64_t row_bytes = p.features * esize_;
        contiguous_ = p.features <= 1 || (p.padded.strides[2] == 1 && p.packed.strides[1] == 1);
        // Widths every row allows; the pointers' alignment picks among them at execute.
        const int64_t byte_strides[] = {p.padded.strides[0] * esize_, p.padded.strides[1] * esize_,
                                        p.packed.strides[0] * esize_};
        for (int w = 0; w < kNumVectorBytes; ++w) {
            const int vb = kVectorBytes[w];
            bool ok = contiguous_ ? row_bytes % vb == 0 : vb == esize_;
            for (int64_t s : byte_strides) ok = ok && s % vb == 0;
            allowed_[w] = ok && vb % esize_ == 0;
        }
        const int64_t rows = p.batch * p.seqlen;
        empty_rows_ = rows == 0 || p.features == 0;
        // Blocks to fill the device a few times over; the kernel loops past that.
        constexpr int64_t kBlocksPerSm = 8;
        max_grid_ = std::max<int64_t>(1, int64_t(dev.sm_count) * kBlocksPerSm);
        pdl_ = p.unpad && runs_sm90_code(dev, reinterpret_cast<const void*>(pad_scan_lengths_kernel)) &&
               runs_sm90_code(dev, reinterpret_cast<const void*>(row_kernel<true>(kVectorBytes[0])));
        why_ = fmt("rows=", rows, " row_bytes=", row_bytes, contiguous_ ? " contiguous features" : " strided features",
                   p.unpad ? ", lengths scanned on the device by one block" : "",
                   pdl_ ? ", rows launched as its programmatic dependent" : "");
    }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
        const void* src = args.in(TOPS_ARG_X);
        void* dst = args.out(TOPS_ARG_Y);
        const int32_t* cu = static_cast<const int32_t*>(args.in(TOPS_ARG_CU_SEQLENS));
        if (!aligned(src, esize_) || !aligned(dst, esize_)) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT,
                          fmt(p_.unpad ? "unpad" : "pad", ": x or y is not aligned to its ", esize_, "-byte element size"));
        }
        if (p_.unpad) {
            PadScanParams sp;
            sp.lengths = static_cast<const int32_t*>(args.in(TOPS_ARG_LENGTHS));
            sp.cu_seqlens = static_cast<int32_t*>(args.out(TOPS_ARG_CU_SEQLENS));
            sp.batch = p_.batch;
            sp.seqlen = p_.seqlen;
            sp.total = p_.total;
            sp.lengths_stride = p_.lengths.strides[0];
            sp.cu_stride = p_.cu_seqlens.strides[0];
            void* sargs[] = {&sp};
            const cudaError_t err = cudaLaunchKernel(reinterpret_cast<const void*>(pad_scan_lengths_kernel), dim3(1),
                                                     dim3(kScanThreads), sargs, 0, stream);
            if (err != cudaSuccess) return cuda_status(err, "pad_scan_lengths_kernel", TOPS_ERROR_DEVICE_LAUNCH);
            TOPS_RETURN_IF_ERROR(launch_status("pad_scan_lengths_kernel"));
        }
        if (empty_rows_) return Status::ok();
        const int vb = pick_width(src, dst);
        const int64_t unit_elems = contiguous_ ? vb / esize_ : 1;  // elements per unit
        PadRowsParams rp;
        rp.src = src;
        rp.dst = dst;
        rp.cu_seqlens = cu;
        rp.cu_stride = p_.cu_seqlens.strides[0];
        const int64_t row_units = contiguous_ ? p_.features * esize_ / vb : p_.features;
        rp.units = p_.batch * p_.seqlen * row_units;
        rp.row_units = FastDivmod(uint64_t(row_units));
        rp.seqlen = FastDivmod(uint64_t(p_.seqlen));
        rp.seqlen_value = p_.seqlen;
        rp.total = p_.total;
        rp.padded_b = p_.padded.strides[0] / unit_elems;
        rp.padded_s = p_.padded.strides[1] / unit_elems;
        rp.padded_f = contiguous_ ? 1 : p_.padded.strides[2];
        rp.packed_t = p_.packed.strides[0] / unit_elems;
        rp.packed_f = contiguous_ ? 1 : p_.packed.strides[1];
        const int64_t per_block = int64_t(kRowThreads) * kUnroll;
        const int grid = int(std::min<int64_t>(max_grid_, (rp.units + per_block - 1) / per_block));
        const RowKernel k = p_.unpad ? row_kernel<true>(vb) : row_kernel<false>(vb);
        void* rargs[] = {&rp};
        const char* name = row_kernel_name(p_.unpad, vb);
        const cudaError_t err = launch_maybe_pdl(reinterpret_cast<const void*>(k), dim3(unsigned(grid)),
                                                 dim3(kRowThreads), rargs, stream, pdl_);
        if (err != cudaSuccess) return cuda_status(err, name, TOPS_ERROR_DEVICE_LAUNCH);
        return launch_status(name);
    }

    const char* kernel_name() const override { return row_kernel_name(p_.unpad, first_width()); }
    std::string reason() const override { return why_; }

private:
    int first_width() const {
        for (int w = 0; w < kNumVectorBytes; ++w) {
            if (allowed_[w]) return kVectorBytes[w];
        }
        return int(esize_);
    }

    // The widest allowed width both pointers are aligned to.
    int pick_width(const void* src, const void* dst) const {
        for (int w = 0; w < kNumVectorBytes; ++w) {
            if (allowed_[w] && aligned(src, kVectorBytes[w]) && aligned(dst, kVectorBytes[w])) return kVectorBytes[w];
        }
        return int(esize_);
    }

    PadParams p_;
    int device_;
    int64_t esize_ = 1;
    bool contiguous_ = true;
    bool empty_rows_ = false;
    bool allowed_[kNumVectorBytes] = {};
    int64_t max_grid_ = 1;
    bool pdl_ = false;  // unpad: the row kernel is a programmatic dependent of the scan
    std::string why_;
};

}  // namespace

Status plan_pad(const PadParams& p, const DeviceInfo& dev, PlanPtr* out) {
    *out = std::make_unique<PadPlanCuda>(p, dev);
    return Status::ok();
}

}  // namespace tops::cuda
