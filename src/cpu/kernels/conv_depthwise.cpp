// Direct depthwise convolution (conv2d_depthwise_<dtype>_<isa>): groups = C,
// one input channel per group, K = C * multiplier.
//
// Strategy: a depthwise layer does R * S multiply-adds per output, far too
// few for a GEMM (its reduction would be R * S long and one column wide), so
// it runs directly, vectorized over output channels: for each output pixel
// and each block of SIMD-width channels, acc += xp[pixel + tap + c] * wt[tap]
// over the taps, on the zero-padded f32 NHWC staging of x (no bounds checks)
// and the filter staged tap-major (R*S, K) so both loads are contiguous.
// With a channel multiplier m > 1, output channel k reads input channel k / m:
// the input lanes are gathered. The epilogue (bias, residual, activation,
// conversion) runs on the accumulator vector, with vector loads and stores
// where y / residual / bias have unit channel stride (NHWC) and scalar ones
// otherwise. Work items are output rows (n, p), split statically.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/conv_kernels.hpp"
#include "cpu/isa_arch.hpp"
#include "cpu/kernels/activation_simd.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {


// One output row (n, p): every pixel q, every channel.
template <tops_dtype_t OUT>
void depthwise_row(const ConvDepthwiseArgs& g, int64_t n, int64_t p) {
    using TO = storage_t<OUT>;
    TO* y = static_cast<TO*>(g.y);
    const TO* res = static_cast<const TO*>(g.res);
    const TO* bias = static_cast<const TO*>(g.bias);
    const bool unit_y = g.ys[1] == 1, unit_r = !res || g.rs[1] == 1, unit_b = !bias || g.bias_s == 1;
    const int64_t k_vec = g.mult == 1 ? g.k / kLanes * kLanes : 0;  // channels done with contiguous loads
    alignas(64) float lanes[kLanes];
    for (int64_t q = 0; q < g.out_w; ++q) {
        const float* origin = g.xp + n * g.xp_img + p * g.stride_h * g.xp_row + q * g.stride_w * g.xp_pix;
        const int64_t yo = n * g.ys[0] + p * g.ys[2] + q * g.ys[3];
        const int64_t ro = n * g.rs[0] + p * g.rs[2] + q * g.rs[3];
        for (int64_t k = 0; k < g.k; k += kLanes) {
            const int cnt = int(std::min<int64_t>(kLanes, g.k - k));
            VecF acc(0.0f);
            if (k < k_vec) {
                for (int64_t t = 0; t < g.taps; ++t) {
                    acc = xsimd::fma(VecF::load_unaligned(origin + g.tap_off[t] + k),
                                     VecF::load_unaligned(g.wt + t * g.k + k), acc);
                }
            } else {
                for (int64_t t = 0; t < g.taps; ++t) {
                    for (int j = 0; j < kLanes; ++j) {
                        const int64_t kj = k + std::min(j, cnt - 1);
                        lanes[j] = origin[g.tap_off[t] + kj / g.mult] * g.wt[t * g.k + kj];
                    }
                    acc += VecF::load_aligned(lanes);
                }
            }
            if (cnt == kLanes && unit_y && unit_r && unit_b) {
                VecF v = acc;
                if (bias) v += load<OUT>(bias + k);
                if (res) v += load<OUT>(res + ro + k);
                store<OUT>(y + yo + k * g.ys[1], activate(g.act, v));
                continue;
            }
            acc.store_aligned(lanes);
            for (int j = 0; j < cnt; ++j) {
                const int64_t kj = k + j;
                float v = lanes[j];
                if (bias) v += to_float<OUT>(bias[kj * g.bias_s]);
                if (res) v += to_float<OUT>(res[ro + kj * g.rs[1]]);
                lanes[j] = v;
            }
            const VecF v = activate(g.act, VecF::load_aligned(lanes));
            v.store_aligned(lanes);
            for (int j = 0; j < cnt; ++j) y[yo + (k + j) * g.ys[1]] = from_float<OUT>(lanes[j]);
        }
    }
}

template <tops_dtype_t OUT>
void depthwise_rows(const ConvDepthwiseArgs& g, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) depthwise_row<OUT>(g, r / g.out_h, r % g.out_h);
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <tops_dtype_t OUT>
template <class A>
void ConvDepthwiseKernel<OUT>::operator()(A, ConvDepthwiseArgs g) const {
    const int64_t rows = g.batch * g.out_h;
    if (g.threads <= 1 || rows <= 1) {
        TOPS_ISA_NS::depthwise_rows<OUT>(g, 0, rows);
        return;
    }
#pragma omp parallel num_threads(g.threads)
    {
        const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        TOPS_ISA_NS::depthwise_rows<OUT>(g, rows * t / nt, rows * (t + 1) / nt);
    }
}

template void ConvDepthwiseKernel<TOPS_DTYPE_F32>::operator()<Arch>(Arch, ConvDepthwiseArgs) const;
template void ConvDepthwiseKernel<TOPS_DTYPE_F16>::operator()<Arch>(Arch, ConvDepthwiseArgs) const;
template void ConvDepthwiseKernel<TOPS_DTYPE_BF16>::operator()<Arch>(Arch, ConvDepthwiseArgs) const;

}  // namespace tops::cpu
