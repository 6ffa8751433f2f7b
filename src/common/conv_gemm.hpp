// Convolutions that are exactly one GEMM, for both backends: a 1x1 filter,
// stride 1, no padding and one group (dilation is moot), so
//   y[n, k, h, w] = act(sum_c x[n, c, h, w] * w[k, c] + bias[k] + residual[n, k, h, w])
// is D = act(A @ B + C + bias) with A = x as (pixels, C), B = w^T (C, K),
// D = y as (pixels, K) and C = the residual (beta 1). The (h, w) pixels of
// x, y and residual become one GEMM dim when their strides allow it; the
// images join them when every tensor continues across images (dense NHWC:
// one GEMM of N * H * W rows), else they are the GEMM batch (NCHW: per
// image, a column-major (H * W, C) A and (H * W, K) D). The backend's GEMM
// plan does the rest: layouts, packing of odd strides, epilogues.
#pragma once

#include <memory>
#include <new>
#include <string>
#include <utility>

#include "common/backend.hpp"
#include "common/params.hpp"

namespace tops {

// Stride of the (h, w) pixels of a (N, C, H, W) layout seen as one dim, or -1
// when h does not continue where w ends.
inline int64_t conv_pixel_stride(const TensorLayout& t) {
    if (t.dims[3] == 1) return t.strides[2];
    int64_t row = 0;
    if (t.dims[2] == 1 || (!__builtin_mul_overflow(t.dims[3], t.strides[3], &row) && t.strides[2] == row)) {
        return t.strides[3];
    }
    return -1;
}

// Fills `g` and returns true when the convolution is one (batched) GEMM.
inline bool conv_as_gemm(const ConvParams& p, GemmParams* g) {
    if (p.kernel_h != 1 || p.kernel_w != 1 || p.stride_h != 1 || p.stride_w != 1 || p.pad_top != 0 ||
        p.pad_bottom != 0 || p.pad_left != 0 || p.pad_right != 0 || p.groups != 1) {
        return false;
    }
    // Empty tensors may have unbounded dims: products that overflow int64
    // leave the convolution to the backend's own checks.
    int64_t pixels = 0, all_pixels = 0;
    if (__builtin_mul_overflow(p.in_h, p.in_w, &pixels) || __builtin_mul_overflow(p.batch, pixels, &all_pixels)) {
        return false;
    }
    const TensorLayout* pix[3] = {&p.x, &p.y, p.residual.present() ? &p.residual : nullptr};
    int64_t ps[3] = {};
    bool images_join = true;
    for (int i = 0; i < 3; ++i) {
        if (!pix[i]) continue;
        ps[i] = conv_pixel_stride(*pix[i]);
        if (ps[i] < 0) return false;
        int64_t image = 0;
        images_join = images_join && (p.batch == 1 || (!__builtin_mul_overflow(pixels, ps[i], &image) &&
                                                       pix[i]->strides[0] == image));
    }
    const int64_t batch = images_join ? 1 : p.batch;
    const int64_t rows = images_join ? all_pixels : pixels;
    // (batch, rows, channels) view of x, y or residual.
    auto matrix = [&](const TensorLayout& t, int64_t pixel_stride) {
        TensorLayout m;
        m.dtype = t.dtype;
        m.rank = 3;
        m.dims[0] = batch;
        m.dims[1] = rows;
        m.dims[2] = t.dims[1];
        m.strides[0] = images_join ? 0 : t.strides[0];
        m.strides[1] = pixel_stride;
        m.strides[2] = t.strides[1];
        return m;
    };
    *g = GemmParams{};
    g->a = matrix(p.x, ps[0]);
    g->d = matrix(p.y, ps[1]);
    if (p.residual.present()) {
        g->c = matrix(p.residual, ps[2]);
        g->beta = 1.0f;
    }
    g->b.dtype = p.w.dtype;  // (C, K): w (K, C, 1, 1) read transposed, shared by the batch
    g->b.rank = 3;
    g->b.dims[0] = batch;
    g->b.dims[1] = p.in_c;
    g->b.dims[2] = p.out_c;
    g->b.strides[1] = p.w.strides[1];
    g->b.strides[2] = p.w.strides[0];
    g->bias = p.bias;
    g->act = p.act;
    g->allow_tf32 = p.allow_tf32;
    g->batch = batch;
    g->m = rows;
    g->n = p.out_c;
    g->k = p.in_c;
    return true;
}

// A conv2d op run as the GEMM plan of conv_as_gemm: execute renames the
// arguments (X -> A, W -> B, RESIDUAL -> C, BIAS -> BIAS, Y -> D).
class ConvAsGemmPlan final : public OpPlan {
public:
    ConvAsGemmPlan(bool residual, bool bias, PlanPtr gemm)
        : residual_(residual), bias_(bias), gemm_(std::move(gemm)), name_(std::string("conv2d_1x1_") + gemm_->kernel_name()) {}

    size_t workspace_size() const override { return gemm_->workspace_size(); }
    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override {
        return "1x1, stride 1, no padding, groups 1: the GEMM (pixels, C) @ (C, K), residual as C; " + gemm_->reason();
    }
    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        ArgTable g;
        g.ptr[TOPS_ARG_A] = args.in(TOPS_ARG_X);
        g.ptr[TOPS_ARG_B] = args.in(TOPS_ARG_W);
        g.ptr[TOPS_ARG_C] = residual_ ? args.in(TOPS_ARG_RESIDUAL) : nullptr;
        g.ptr[TOPS_ARG_BIAS] = bias_ ? args.in(TOPS_ARG_BIAS) : nullptr;
        g.ptr[TOPS_ARG_D] = args.in(TOPS_ARG_Y);
        g.workspace = args.workspace;
        g.workspace_bytes = args.workspace_bytes;
        return gemm_->execute(ctx, g);
    }

private:
    bool residual_, bias_;
    PlanPtr gemm_;
    std::string name_;
};

// Plans `p` through `plan_gemm` (the backend's GEMM planner) when
// conv_as_gemm applies; *planned says whether it did.
template <class PlanGemm>
Status plan_conv_as_gemm(const ConvParams& p, PlanGemm&& plan_gemm, PlanPtr* out, bool* planned) {
    *planned = false;
    GemmParams g;
    if (!conv_as_gemm(p, &g)) return Status::ok();
    PlanPtr gemm;
    TOPS_RETURN_IF_ERROR(plan_gemm(g, &gemm));
    out->reset(new (std::nothrow) ConvAsGemmPlan(p.residual.present(), p.bias.present(), std::move(gemm)));
    if (!*out) return Status(TOPS_ERROR_OUT_OF_MEMORY, "conv2d: out of host memory");
    *planned = true;
    return Status::ok();
}

}  // namespace tops
