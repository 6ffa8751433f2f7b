// tops_conv2d_create / tops_conv2d_output_dims: validation of convolution
// descriptors. Every tensor is given its logical dims in one canonical order
// (x, y, residual (N, C, H, W); w (K, C/G, R, S)) with the caller's strides
// permuted along, so backends read the memory order from the strides
// (src/common/params.hpp ConvParams).
#include <string>

#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::TensorLayout;
using tops::fmt;

constexpr int kRank = 4;
// Canonical dim i is the caller's dim kFromChannelsLast[i] for NHWC / KRSC.
constexpr int kFromChannelsLast[kRank] = {0, 3, 1, 2};

const char* layout_name(bool channels_last) { return channels_last ? "nhwc" : "nchw"; }

std::string dims_text(const int64_t* dims, int rank) {
    std::string s = "[";
    for (int i = 0; i < rank; ++i) s += fmt(i ? "," : "", dims[i]);
    return s + "]";
}

// A rank-4 tensor of the caller -> canonical order.
Status canonical(const char* name, const tops_tensor_desc_t& d, bool channels_last, TensorLayout* out) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt("conv2d: ", name), d));
    if (d.rank != kRank) {
        return Status(TOPS_ERROR_BAD_RANK, fmt("conv2d: ", name, ".rank ", d.rank, " must be 4"));
    }
    TensorLayout t = tops::layout_from_desc(d);
    if (channels_last) {
        for (int i = 0; i < kRank; ++i) {
            t.dims[i] = d.dims[kFromChannelsLast[i]];
            t.strides[i] = d.strides[kFromChannelsLast[i]];
        }
    }
    *out = t;
    return Status::ok();
}

// Output extent of one spatial dim; fails when the dilated kernel does not fit.
Status output_extent(const char* dim, int64_t in, int64_t pad_lo, int64_t pad_hi, int64_t kernel, int64_t stride,
                     int64_t dilation, int64_t* out) {
    int64_t span = 0, padded = 0;
    if (__builtin_mul_overflow(dilation, kernel - 1, &span) || __builtin_add_overflow(span, int64_t{1}, &span) ||
        __builtin_add_overflow(in, pad_lo + pad_hi, &padded)) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt("conv2d: the ", dim, " extent overflows int64"));
    }
    if (span > padded) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt("conv2d: dilated kernel ", dim, " ", span, " exceeds the padded input ",
                                                dim, " ", padded, " (", in, " + ", pad_lo, " + ", pad_hi,
                                                "): the output would be empty"));
    }
    *out = (padded - span) / stride + 1;
    return Status::ok();
}

// Everything the output size depends on: x, w, layouts, strides, paddings,
// dilations, groups. Fills p's x, w, sizes and hyper-parameters.
Status validate_geometry(const tops_conv2d_desc_t& d, tops::ConvParams* p) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("conv2d", d.struct_size, sizeof(tops_conv2d_desc_t)));
    const int layout = int(d.layout), filter_layout = int(d.filter_layout);
    if (layout != TOPS_CONV_NCHW && layout != TOPS_CONV_NHWC) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT,
                      fmt("conv2d: layout ", layout, " is not a tops_conv_layout_t (NCHW 0, NHWC 1)"));
    }
    if (filter_layout != TOPS_CONV_FILTER_KCRS && filter_layout != TOPS_CONV_FILTER_KRSC) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("conv2d: filter_layout ", filter_layout,
                                                       " is not a tops_conv_filter_layout_t (KCRS 0, KRSC 1)"));
    }
    p->channels_last = layout == TOPS_CONV_NHWC;
    p->filter_krsc = filter_layout == TOPS_CONV_FILTER_KRSC;
    TOPS_RETURN_IF_ERROR(canonical("x", d.x, p->channels_last, &p->x));
    TOPS_RETURN_IF_ERROR(canonical("w", d.w, p->filter_krsc, &p->w));
    if (!tops::is_float_dtype(d.x.dtype)) {
        return Status(TOPS_ERROR_BAD_DTYPE,
                      fmt("conv2d: x.dtype ", tops::capi::dtype_name(d.x.dtype), " is not supported (f32, f16, bf16)"));
    }
    if (d.w.dtype != d.x.dtype) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("conv2d: w.dtype ", tops::capi::dtype_name(d.w.dtype),
                                                " differs from x.dtype ", tops::capi::dtype_name(d.x.dtype)));
    }
    const struct {
        const char* name;
        int32_t value;
        int32_t min;
    } scalars[] = {{"stride_h", d.stride_h, 1},     {"stride_w", d.stride_w, 1},     {"pad_top", d.pad_top, 0},
                   {"pad_bottom", d.pad_bottom, 0}, {"pad_left", d.pad_left, 0},     {"pad_right", d.pad_right, 0},
                   {"dilation_h", d.dilation_h, 1}, {"dilation_w", d.dilation_w, 1}, {"groups", d.groups, 1}};
    for (const auto& s : scalars) {
        if (s.value < s.min) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("conv2d: ", s.name, " = ", s.value, " must be >= ", s.min));
        }
    }
    p->batch = p->x.dims[0];
    p->in_c = p->x.dims[1];
    p->in_h = p->x.dims[2];
    p->in_w = p->x.dims[3];
    p->out_c = p->w.dims[0];
    p->kernel_h = p->w.dims[2];
    p->kernel_w = p->w.dims[3];
    p->groups = d.groups;
    if (p->in_c % p->groups != 0) {
        return Status(TOPS_ERROR_BAD_SHAPE,
                      fmt("conv2d: x has C = ", p->in_c, " channels, not a multiple of groups = ", p->groups));
    }
    if (p->out_c % p->groups != 0) {
        return Status(TOPS_ERROR_BAD_SHAPE,
                      fmt("conv2d: w has K = ", p->out_c, " filters, not a multiple of groups = ", p->groups));
    }
    if (p->w.dims[1] != p->in_c / p->groups) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt("conv2d: w has ", p->w.dims[1], " input channels per filter but C / groups = ",
                                                p->in_c, " / ", p->groups, " = ", p->in_c / p->groups));
    }
    if (p->kernel_h < 1 || p->kernel_w < 1) {
        return Status(TOPS_ERROR_BAD_SHAPE,
                      fmt("conv2d: w's kernel R x S = ", p->kernel_h, " x ", p->kernel_w, " must be at least 1 x 1"));
    }
    p->stride_h = d.stride_h;
    p->stride_w = d.stride_w;
    p->pad_top = d.pad_top;
    p->pad_bottom = d.pad_bottom;
    p->pad_left = d.pad_left;
    p->pad_right = d.pad_right;
    p->dilation_h = d.dilation_h;
    p->dilation_w = d.dilation_w;
    TOPS_RETURN_IF_ERROR(output_extent("height", p->in_h, p->pad_top, p->pad_bottom, p->kernel_h, p->stride_h,
                                       p->dilation_h, &p->out_h));
    TOPS_RETURN_IF_ERROR(output_extent("width", p->in_w, p->pad_left, p->pad_right, p->kernel_w, p->stride_w,
                                       p->dilation_w, &p->out_w));
    return Status::ok();
}

// y's dims in the caller's order.
void output_dims(const tops::ConvParams& p, int64_t* dims) {
    const int64_t canon[kRank] = {p.batch, p.out_c, p.out_h, p.out_w};
    for (int i = 0; i < kRank; ++i) dims[p.channels_last ? kFromChannelsLast[i] : i] = canon[i];
}

Status validate(const tops_conv2d_desc_t& d, tops::ConvParams* p, std::string* summary) {
    TOPS_RETURN_IF_ERROR(validate_geometry(d, p));
    const tops_dtype_t dt = d.x.dtype;
    int64_t want[kRank];
    output_dims(*p, want);
    TOPS_RETURN_IF_ERROR(canonical("y", d.y, p->channels_last, &p->y));
    if (d.y.dtype != dt) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("conv2d: y.dtype ", tops::capi::dtype_name(d.y.dtype),
                                                " differs from x.dtype ", tops::capi::dtype_name(dt)));
    }
    for (int i = 0; i < kRank; ++i) {
        if (d.y.dims[i] != want[i]) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("conv2d: y.dims ", dims_text(d.y.dims, kRank), " differ from the output ",
                                                    dims_text(want, kRank), " (", layout_name(p->channels_last),
                                                    "; see tops_conv2d_output_dims)"));
        }
    }
    TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("conv2d: y", p->y));
    if (d.bias.dtype != TOPS_DTYPE_INVALID) {
        TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("conv2d: bias", d.bias));
        if (d.bias.dtype != dt) {
            return Status(TOPS_ERROR_BAD_DTYPE, fmt("conv2d: bias.dtype ", tops::capi::dtype_name(d.bias.dtype),
                                                    " differs from x.dtype ", tops::capi::dtype_name(dt)));
        }
        if (d.bias.rank != 1 || d.bias.dims[0] != p->out_c) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("conv2d: bias must be [K] = [", p->out_c, "] (got rank ", d.bias.rank,
                                                    " dims ", dims_text(d.bias.dims, d.bias.rank), ")"));
        }
        p->bias = tops::layout_from_desc(d.bias);
    }
    if (d.residual.dtype != TOPS_DTYPE_INVALID) {
        TOPS_RETURN_IF_ERROR(canonical("residual", d.residual, p->channels_last, &p->residual));
        if (d.residual.dtype != dt) {
            return Status(TOPS_ERROR_BAD_DTYPE, fmt("conv2d: residual.dtype ", tops::capi::dtype_name(d.residual.dtype),
                                                    " differs from x.dtype ", tops::capi::dtype_name(dt)));
        }
        for (int i = 0; i < kRank; ++i) {
            if (d.residual.dims[i] != d.y.dims[i]) {
                return Status(TOPS_ERROR_BAD_SHAPE, fmt("conv2d: residual.dims ", dims_text(d.residual.dims, kRank),
                                                        " differ from y.dims ", dims_text(d.y.dims, kRank)));
            }
        }
    }
    if (int(d.act) < int(TOPS_ACT_NONE) || int(d.act) > int(TOPS_ACT_SILU)) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("conv2d: act ", int(d.act), " is not a tops_activation_t"));
    }
    if (d.flags & ~TOPS_CONV_ALLOW_TF32) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("conv2d: unknown flags 0x", std::hex, d.flags));
    }
    p->act = tops::Activation(int(d.act));
    p->allow_tf32 = (d.flags & TOPS_CONV_ALLOW_TF32) != 0;
    static const char* const acts[] = {"none", "relu", "gelu_erf", "gelu_tanh", "silu"};
    *summary = fmt("x:", tops::capi::describe(tops::layout_from_desc(d.x)), " w:",
                   tops::capi::describe(tops::layout_from_desc(d.w)), " y:",
                   tops::capi::describe(tops::layout_from_desc(d.y)), " layout:", layout_name(p->channels_last),
                   " filter:", p->filter_krsc ? "krsc" : "kcrs", " stride:", p->stride_h, "x", p->stride_w,
                   " pad:", p->pad_top, ",", p->pad_bottom, ",", p->pad_left, ",", p->pad_right,
                   " dilation:", p->dilation_h, "x", p->dilation_w, " groups:", p->groups,
                   p->bias.present() ? " bias" : "", p->residual.present() ? " residual" : "", " act:",
                   acts[int(d.act)], p->allow_tf32 ? " tf32" : "");
    return Status::ok();
}

}  // namespace

extern "C" {

TOPS_API tops_conv2d_desc_t tops_conv2d_desc_default(void) {
    tops_conv2d_desc_t d{};
    d.struct_size = sizeof(tops_conv2d_desc_t);
    d.layout = TOPS_CONV_NCHW;
    d.filter_layout = TOPS_CONV_FILTER_KCRS;
    d.stride_h = d.stride_w = 1;
    d.dilation_h = d.dilation_w = 1;
    d.groups = 1;
    d.act = TOPS_ACT_NONE;
    return d;
}

TOPS_API tops_status_t tops_conv2d_output_dims(const tops_conv2d_desc_t* desc, int64_t dims[4]) {
    TOPS_CAPI_GUARD({
        if (!desc || !dims) {
            return tops::capi::report(Status(TOPS_ERROR_NULL_POINTER, desc ? "conv2d: dims is NULL" : "conv2d: desc is NULL"));
        }
        tops::ConvParams p;
        const Status st = validate_geometry(*desc, &p);
        if (!st.is_ok()) return tops::capi::report(st);
        output_dims(p, dims);
        return tops::capi::success();
    })
}

TOPS_API tops_status_t tops_conv2d_create(tops_context_t ctx, const tops_conv2d_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        Status st = tops::capi::check_create_args(ctx, "conv2d", desc, op);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::ConvParams p;
        tops::capi::OpSignature sig;
        st = validate(*desc, &p, &sig.summary);
        if (!st.is_ok()) return tops::capi::report(st);
        sig.op_name = "conv2d";
        // Aliasing on the canonical views (a permutation spans the same bytes).
        sig.input(TOPS_ARG_X, "x", p.x);
        sig.input(TOPS_ARG_W, "w", p.w);
        sig.optional_input(TOPS_ARG_BIAS, "bias", p.bias);
        sig.optional_input(TOPS_ARG_RESIDUAL, "residual", p.residual);
        sig.output(TOPS_ARG_Y, "y", p.y, tops::capi::arg_bit(TOPS_ARG_RESIDUAL));
        return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
            return b.plan_conv2d(p, dev, out);
        });
    })
}

}  // extern "C"
