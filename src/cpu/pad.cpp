// CPU unpad / pad: plain row copies, no SIMD kernel of our own. A token row
// is F contiguous elements on both sides in every real use (hidden states),
// so each row is one memcpy (libc's is already vectorized for every ISA);
// rows with another feature stride fall back to an element loop. unpad scans
// the lengths into cu_seqlens once (B additions, serial), then every thread
// copies a contiguous range of padded rows, reading its offsets back from
// cu_seqlens (execute allocates nothing).
#include <algorithm>
#include <cstring>

#include "common/status.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"

namespace tops::cpu {
namespace {

// Below this many bytes a row range is not worth another thread.
constexpr int64_t kGrainBytes = 64 * 1024;

int32_t load_i32(const void* base, const TensorLayout& t, int64_t i) {
    return static_cast<const int32_t*>(base)[i * t.strides[0]];
}

class PadPlanCpu final : public OpPlan {
public:
    explicit PadPlanCpu(const PadParams& p) : p_(p) {
        esize_ = int64_t(dtype_size(p.padded.dtype));
        contiguous_ = p.features <= 1 || (p.padded.strides[2] == 1 && p.packed.strides[1] == 1);
        name_ = p.unpad ? (contiguous_ ? "unpad_rows_memcpy_cpu" : "unpad_rows_strided_cpu")
                        : (contiguous_ ? "pad_rows_memcpy_cpu" : "pad_rows_strided_cpu");
    }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (p_.unpad) scan_lengths(args.in(TOPS_ARG_LENGTHS), args.out(TOPS_ARG_CU_SEQLENS));
        const void* cu = args.in(TOPS_ARG_CU_SEQLENS);
        const char* src = static_cast<const char*>(args.in(TOPS_ARG_X));
        char* dst = static_cast<char*>(args.out(TOPS_ARG_Y));
        const int64_t rows = p_.batch * p_.seqlen;
        const int64_t row_bytes = p_.features * esize_;
        if (row_bytes == 0) return Status::ok();
        const int threads = pick_threads(ctx.num_threads, rows * row_bytes, kGrainBytes);
        parallel_for(threads, rows, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                const int64_t b = r / p_.seqlen, s = r % p_.seqlen;
                const int64_t start = std::clamp<int64_t>(load_i32(cu, p_.cu_seqlens, b), 0, p_.total);
                const int64_t n = std::clamp<int64_t>(int64_t(load_i32(cu, p_.cu_seqlens, b + 1)) - start, 0, p_.seqlen);
                const bool valid = s < n && start + s < p_.total;
                const int64_t pad_off = (b * p_.padded.strides[0] + s * p_.padded.strides[1]) * esize_;
                const int64_t pack_off = (start + s) * p_.packed.strides[0] * esize_;
                if (p_.unpad) {
                    if (valid) copy_row(src + pad_off, p_.padded.strides[2], dst + pack_off, p_.packed.strides[1]);
                } else if (valid) {
                    copy_row(src + pack_off, p_.packed.strides[1], dst + pad_off, p_.padded.strides[2]);
                } else {
                    zero_row(dst + pad_off, p_.padded.strides[2]);
                }
            }
        });
        return Status::ok();
    }

    const char* kernel_name() const override { return name_; }
    std::string reason() const override {
        return contiguous_ ? "unit feature stride on both sides: one memcpy per token row"
                           : "a feature stride other than 1: element loop per token row";
    }

private:
    // cu[0] = 0, cu[b + 1] = min(cu[b] + clamp(lengths[b], 0, S), total).
    void scan_lengths(const void* lengths, void* cu_out) const {
        int32_t* cu = static_cast<int32_t*>(cu_out);
        const int64_t cs = p_.cu_seqlens.strides[0];
        int64_t acc = 0;
        cu[0] = 0;
        for (int64_t b = 0; b < p_.batch; ++b) {
            const int64_t len = std::clamp<int64_t>(load_i32(lengths, p_.lengths, b), 0, p_.seqlen);
            acc = std::min(acc + len, p_.total);
            cu[(b + 1) * cs] = int32_t(acc);
        }
    }

    void copy_row(const char* src, int64_t src_stride, char* dst, int64_t dst_stride) const {
        if (contiguous_) {
            std::memcpy(dst, src, size_t(p_.features * esize_));
            return;
        }
        for (int64_t f = 0; f < p_.features; ++f) {
            std::memcpy(dst + f * dst_stride * esize_, src + f * src_stride * esize_, size_t(esize_));
        }
    }

    void zero_row(char* dst, int64_t dst_stride) const {
        if (contiguous_) {
            std::memset(dst, 0, size_t(p_.features * esize_));
            return;
        }
        for (int64_t f = 0; f < p_.features; ++f) std::memset(dst + f * dst_stride * esize_, 0, size_t(esize_));
    }

    PadParams p_;
    int64_t esize_ = 0;
    bool contiguous_ = true;
    const char* name_ = "";
};

}  // namespace

Status plan_pad(const PadParams& p, PlanPtr* out) {
    *out = std::make_unique<PadPlanCpu>(p);
    return Status::ok();
}

}  // namespace tops::cpu
