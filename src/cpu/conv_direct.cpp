// Direct CPU convolution (conv2d_direct_<dtype>): the plain seven-deep loop,
// one output element at a time with an f32 accumulator, any strides, any
// dtype. Obviously correct rather than fast: the planner (src/cpu/conv.cpp)
// uses it only where the packed paths do not apply, and tests compare the
// fast paths against the fp64 reference, not against this.
#include <cmath>

#include "common/half.hpp"
#include "cpu/activation.hpp"
#include "cpu/conv_kernels.hpp"
#include "cpu/parallel.hpp"

namespace tops::cpu {
namespace {

constexpr int64_t kGrainMacs = 64 * 1024;  // multiply-adds worth one thread

template <tops_dtype_t DT>
struct Elem;
template <>
struct Elem<TOPS_DTYPE_F32> {
    using T = float;
    static float load(T v) { return v; }
    static T store(float v) { return v; }
};
template <>
struct Elem<TOPS_DTYPE_F16> {
    using T = uint16_t;
    static float load(T v) { return f16_to_float(v); }
    static T store(float v) { return float_to_f16(v); }
};
template <>
struct Elem<TOPS_DTYPE_BF16> {
    using T = uint16_t;
    static float load(T v) { return bf16_to_float(v); }
    static T store(float v) { return float_to_bf16(v); }
};

template <tops_dtype_t DT>
void conv_direct(const ConvParams& p, const ArgTable& args, int threads) {
    using E = Elem<DT>;
    using T = typename E::T;
    const T* x = static_cast<const T*>(args.in(TOPS_ARG_X));
    const T* w = static_cast<const T*>(args.in(TOPS_ARG_W));
    const T* bias = p.bias.present() ? static_cast<const T*>(args.in(TOPS_ARG_BIAS)) : nullptr;
    const T* res = p.residual.present() ? static_cast<const T*>(args.in(TOPS_ARG_RESIDUAL)) : nullptr;
    T* y = static_cast<T*>(args.out(TOPS_ARG_Y));
    const int64_t cg = p.in_c_per_group(), kg = p.out_c_per_group();
    const int64_t* xs = p.x.strides;
    const int64_t* ws = p.w.strides;
    const int64_t* ys = p.y.strides;
    const int64_t* rs = p.residual.strides;
    const int64_t macs = p.out_h * p.out_w * cg * p.kernel_h * p.kernel_w;
    const int64_t planes = p.batch * p.out_c;  // (n, k) work items
    parallel_for(pick_threads(threads, planes * (macs + 1), kGrainMacs), planes, [&](int64_t begin, int64_t end) {
        for (int64_t nk = begin; nk < end; ++nk) {
            const int64_t n = nk / p.out_c, k = nk % p.out_c;
            const int64_t c0 = k / kg * cg;
            const float b = bias ? E::load(bias[k * p.bias.strides[0]]) : 0.0f;
            for (int64_t oh = 0; oh < p.out_h; ++oh) {
                for (int64_t ow = 0; ow < p.out_w; ++ow) {
                    float acc = 0.0f;
                    for (int64_t c = 0; c < cg; ++c) {
                        for (int64_t r = 0; r < p.kernel_h; ++r) {
                            const int64_t ih = oh * p.stride_h - p.pad_top + r * p.dilation_h;
                            if (ih < 0 || ih >= p.in_h) continue;
                            for (int64_t s = 0; s < p.kernel_w; ++s) {
                                const int64_t iw = ow * p.stride_w - p.pad_left + s * p.dilation_w;
                                if (iw < 0 || iw >= p.in_w) continue;
                                acc += E::load(x[n * xs[0] + (c0 + c) * xs[1] + ih * xs[2] + iw * xs[3]]) *
                                       E::load(w[k * ws[0] + c * ws[1] + r * ws[2] + s * ws[3]]);
                            }
                        }
                    }
                    float v = acc + b;
                    if (res) v += E::load(res[n * rs[0] + k * rs[1] + oh * rs[2] + ow * rs[3]]);
                    y[n * ys[0] + k * ys[1] + oh * ys[2] + ow * ys[3]] = E::store(activate_scalar(p.act, v));
                }
            }
        }
    });
}

}  // namespace


void conv_direct_run(const ConvParams& p, const ArgTable& args, int threads) {
    switch (p.x.dtype) {
        case TOPS_DTYPE_F16: conv_direct<TOPS_DTYPE_F16>(p, args, threads); break;
        case TOPS_DTYPE_BF16: conv_direct<TOPS_DTYPE_BF16>(p, args, threads); break;
        default: conv_direct<TOPS_DTYPE_F32>(p, args, threads); break;
    }
}

}  // namespace tops::cpu
