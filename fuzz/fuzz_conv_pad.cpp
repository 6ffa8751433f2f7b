// libFuzzer targets for conv2d and unpad/pad (chosen at compile time by
// TOPS_FUZZ_CONV2D / TOPS_FUZZ_PAD): random descriptors (layouts, strides,
// paddings, dilations, groups, optional bias and residual; batch, sequence
// and feature dims with arbitrary lengths and cumulative offsets, including
// negative and past-the-end values) run on the CPU backend with exactly sized
// buffers. The library must return a documented status, never crash or touch
// memory outside the buffers; on success f32 conv2d (no activation or ReLU)
// is compared with an fp64 loop and unpad/pad with a bytewise copy loop.
#include "fuzz_common.hpp"

#include <algorithm>

using namespace fuzz;

namespace {

struct OpGuard {
    tops_op_t op = nullptr;
    ~OpGuard() { tops_op_destroy(op); }
};

bool created(tops_status_t s, const OpGuard& g) {
    check_status(s);
    if ((s == TOPS_SUCCESS) != (g.op != nullptr)) {
        std::fprintf(stderr, "fuzz: create returned %s with op %p\n", tops_status_string(s), (void*)g.op);
        std::abort();
    }
    return s == TOPS_SUCCESS;
}

// A rank-4 tensor whose dims are the canonical (a, b, c, d) placed in the
// caller's order: channels last moves b to the end.
tops_tensor_desc_t rank4(Reader& r, tops_dtype_t dt, bool channels_last, int64_t a, int64_t b, int64_t c, int64_t d) {
    tops_tensor_desc_t t{};
    t.dtype = dt;
    t.rank = 4;
    const int64_t canon[4] = {a, b, c, d};
    const int order[4] = {0, 2, 3, 1};  // caller dim i holds canonical dim order[i] when channels last
    for (int i = 0; i < 4; ++i) t.dims[i] = channels_last ? canon[order[i]] : canon[i];
    fill_strides(r, t);
    return t;
}

// Offset of canonical index (a, b, c, d) in t.
int64_t at4(const tops_tensor_desc_t& t, bool channels_last, int64_t a, int64_t b, int64_t c, int64_t d) {
    if (channels_last) return a * t.strides[0] + c * t.strides[1] + d * t.strides[2] + b * t.strides[3];
    return a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3];
}

int32_t small_param(Reader& r, int lo, int n) {
    const uint8_t b = r.byte();
    if (b == 0xff) return -1 - r.pick(3);  // rarely invalid
    return lo + b % n;
}

[[maybe_unused]] void fuzz_conv2d(Reader& r) {
    tops_conv2d_desc_t d = tops_conv2d_desc_default();
    d.layout = static_cast<tops_conv_layout_t>(r.pick(r.byte() == 0xff ? 4 : 2));
    d.filter_layout = static_cast<tops_conv_filter_layout_t>(r.pick(r.byte() == 0xff ? 4 : 2));
    const bool x_last = d.layout == TOPS_CONV_NHWC, w_last = d.filter_layout == TOPS_CONV_FILTER_KRSC;
    const tops_dtype_t dt = float_dtype(r);
    d.groups = small_param(r, 1, 3);
    const int64_t g = d.groups > 0 ? d.groups : 1;
    const int64_t n = r.dim(), c = g * (1 + r.pick(3)), h = r.dim(), w = r.dim();
    const int64_t k = r.flag() ? g * (1 + r.pick(3)) : r.dim();
    const int64_t kr = 1 + r.pick(3), ks = 1 + r.pick(3);
    d.stride_h = small_param(r, 1, 3);
    d.stride_w = small_param(r, 1, 3);
    d.pad_top = small_param(r, 0, 3);
    d.pad_bottom = small_param(r, 0, 3);
    d.pad_left = small_param(r, 0, 3);
    d.pad_right = small_param(r, 0, 3);
    d.dilation_h = small_param(r, 1, 2);
    d.dilation_w = small_param(r, 1, 2);
    d.act = static_cast<tops_activation_t>(r.pick(r.byte() == 0xff ? 9 : 5));
    d.x = rank4(r, dt, x_last, n, c, h, w);
    d.w = rank4(r, r.byte() < 0xf0 ? dt : float_dtype(r), w_last, k, c / g, kr, ks);
    int64_t ydims[4] = {};
    const tops_status_t os = tops_conv2d_output_dims(&d, ydims);
    check_status(os);
    int64_t p = 1, q = 1;
    if (os == TOPS_SUCCESS) {
        p = x_last ? ydims[1] : ydims[2];
        q = x_last ? ydims[2] : ydims[3];
    }
    if (r.byte() == 0xff) p += 1;  // a wrong output size
    d.y = rank4(r, dt, x_last, n, k, p, q);
    std::vector<Arg> args = {{TOPS_ARG_X, &d.x, {}}, {TOPS_ARG_W, &d.w, {}}, {TOPS_ARG_Y, &d.y, {}}};
    const bool with_bias = r.flag(), with_residual = r.byte() % 4 == 0;
    if (with_bias) {
        d.bias.dtype = dt;
        d.bias.rank = 1;
        d.bias.dims[0] = k;
        fill_strides(r, d.bias);
        args.push_back({TOPS_ARG_BIAS, &d.bias, {}});
    }
    if (with_residual) {
        d.residual = rank4(r, dt, x_last, n, k, p, q);
        args.push_back({TOPS_ARG_RESIDUAL, &d.residual, {}});
    }
    OpGuard gd;
    if (!created(tops_conv2d_create(context(), &d, &gd.op), gd)) return;
    if (!execute(r, gd.op, args)) return;
    if (dt != TOPS_DTYPE_F32 || d.w.dtype != TOPS_DTYPE_F32 || (d.act != TOPS_ACT_NONE && d.act != TOPS_ACT_RELU))
        return;
    if (n == 0 || k == 0 || p == 0 || q == 0) return;  // an empty y: nothing to compare, its other dims may be huge
    // Reference: the definition in tops.h, in fp64.
    const int64_t cg = c / g, kg = k / g;
    for (int64_t in = 0; in < n; ++in) {
        for (int64_t ik = 0; ik < k; ++ik) {
            for (int64_t ip = 0; ip < p; ++ip) {
                for (int64_t iq = 0; iq < q; ++iq) {
                    double acc = 0.0, mag = 0.0;
                    const int64_t grp = ik / kg;
                    for (int64_t ic = 0; ic < cg; ++ic) {
                        for (int64_t ir = 0; ir < kr; ++ir) {
                            for (int64_t is = 0; is < ks; ++is) {
                                const int64_t hh = ip * d.stride_h - d.pad_top + ir * d.dilation_h;
                                const int64_t ww = iq * d.stride_w - d.pad_left + is * d.dilation_w;
                                if (hh < 0 || hh >= h || ww < 0 || ww >= w) continue;
                                const double xv = f32_at(args[0].buf, at4(d.x, x_last, in, grp * cg + ic, hh, ww));
                                const double wv = f32_at(args[1].buf, at4(d.w, w_last, ik, ic, ir, is));
                                acc += xv * wv;
                                mag += std::fabs(xv * wv);
                            }
                        }
                    }
                    if (with_bias) {
                        const double b = f32_at(args[3].buf, ik * d.bias.strides[0]);
                        acc += b;
                        mag += std::fabs(b);
                    }
                    if (with_residual) {
                        const double v = f32_at(args.back().buf, at4(d.residual, x_last, in, ik, ip, iq));
                        acc += v;
                        mag += std::fabs(v);
                    }
                    if (d.act == TOPS_ACT_RELU) acc = std::max(acc, 0.0);
                    const double got = f32_at(args[2].buf, at4(d.y, x_last, in, ik, ip, iq));
                    if (!(std::fabs(got - acc) <= 1e-5 * (1.0 + mag))) mismatch("conv2d", got, acc);
                }
            }
        }
    }
}

int32_t i32_at(const Buffer& b, int64_t off) {
    int32_t v;
    std::memcpy(&v, b.bytes.get() + off * 4, 4);
    return v;
}

[[maybe_unused]] void fuzz_pad(Reader& r) {
    const bool unpad = r.flag();
    tops_pad_desc_t d = tops_pad_desc_default();
    const uint8_t dtb = r.byte();
    const tops_dtype_t dt = dtb < 0xf0 ? static_cast<tops_dtype_t>(1 + dtb % 6) : float_dtype(r);
    const int64_t b = r.dim(), s = r.dim(), total = r.dim();
    const int nf = r.pick(3);  // feature dims
    d.padded.dtype = d.packed.dtype = dt;
    d.padded.rank = 2 + nf;
    d.packed.rank = 1 + nf;
    d.padded.dims[0] = b;
    d.padded.dims[1] = s;
    d.packed.dims[0] = total;
    for (int i = 0; i < nf; ++i) d.packed.dims[1 + i] = d.padded.dims[2 + i] = 1 + r.pick(5);
    if (r.byte() == 0xff && nf > 0) d.packed.dims[d.packed.rank - 1] += 1;  // mismatched features
    fill_strides(r, d.padded);
    fill_strides(r, d.packed);
    d.cu_seqlens.dtype = TOPS_DTYPE_I32;
    d.cu_seqlens.rank = 1;
    d.cu_seqlens.dims[0] = b + (r.byte() == 0xff ? 0 : 1);
    fill_strides(r, d.cu_seqlens);
    std::vector<Arg> args;
    OpGuard g;
    tops_status_t st;
    if (unpad) {
        d.lengths.dtype = TOPS_DTYPE_I32;
        d.lengths.rank = 1;
        d.lengths.dims[0] = b;
        fill_strides(r, d.lengths);
        args = {{TOPS_ARG_X, &d.padded, {}}, {TOPS_ARG_Y, &d.packed, {}}, {TOPS_ARG_LENGTHS, &d.lengths, {}},
                {TOPS_ARG_CU_SEQLENS, &d.cu_seqlens, {}}};
        st = tops_unpad_create(context(), &d, &g.op);
    } else {
        if (r.byte() == 0xff) {  // lengths must be absent for pad
            d.lengths.dtype = TOPS_DTYPE_I32;
            d.lengths.rank = 1;
            d.lengths.dims[0] = b;
            fill_strides(r, d.lengths);
        }
        args = {{TOPS_ARG_X, &d.packed, {}}, {TOPS_ARG_Y, &d.padded, {}}, {TOPS_ARG_CU_SEQLENS, &d.cu_seqlens, {}}};
        st = tops_pad_create(context(), &d, &g.op);
    }
    if (!created(st, g)) return;
    if (!execute(r, g.op, args)) return;
    // Reference (tops.h): rows of one feature block copied bytewise.
    const size_t es = tops_dtype_size(dt);
    tops_tensor_desc_t prow = d.padded, krow = d.packed;  // one row's feature elements
    prow.rank = nf;
    krow.rank = nf;
    for (int i = 0; i < nf; ++i) {
        prow.dims[i] = d.padded.dims[2 + i];
        prow.strides[i] = d.padded.strides[2 + i];
        krow.dims[i] = d.packed.dims[1 + i];
        krow.strides[i] = d.packed.strides[1 + i];
    }
    const std::vector<int64_t> po = offsets(prow), ko = offsets(krow);
    const Buffer& padded = unpad ? args[0].buf : args[1].buf;
    const Buffer& packed = unpad ? args[1].buf : args[0].buf;
    const Buffer& cu = args.back().buf;
    auto same_row = [&](int64_t bi, int64_t si, int64_t row) {
        const unsigned char* pp = padded.bytes.get() + (bi * d.padded.strides[0] + si * d.padded.strides[1]) * es;
        const unsigned char* kp = packed.bytes.get() + row * d.packed.strides[0] * es;
        for (size_t e = 0; e < po.size(); ++e)
            if (std::memcmp(pp + po[e] * es, kp + ko[e] * es, es) != 0) return false;
        return true;
    };
    if (unpad) {
        int64_t acc = 0;
        if (b >= 0 && i32_at(cu, 0) != 0) mismatch("unpad cu_seqlens[0]", i32_at(cu, 0), 0);
        for (int64_t bi = 0; bi < b; ++bi) {
            const int64_t len = std::clamp<int64_t>(i32_at(args[2].buf, bi * d.lengths.strides[0]), 0, s);
            const int64_t next = std::min(acc + len, total);
            if (i32_at(cu, (bi + 1) * d.cu_seqlens.strides[0]) != next)
                mismatch("unpad cu_seqlens", i32_at(cu, (bi + 1) * d.cu_seqlens.strides[0]), double(next));
            for (int64_t si = 0; si < next - acc; ++si)
                if (!same_row(bi, si, acc + si)) mismatch("unpad row", double(bi), double(si));
            acc = next;
        }
        return;
    }
    for (int64_t bi = 0; bi < b; ++bi) {
        const int64_t start = std::clamp<int64_t>(i32_at(cu, bi * d.cu_seqlens.strides[0]), 0, total);
        const int64_t nb =
            std::clamp<int64_t>(int64_t(i32_at(cu, (bi + 1) * d.cu_seqlens.strides[0])) - start, 0, s);
        for (int64_t si = 0; si < s; ++si) {
            if (si < nb && start + si < total) {
                if (!same_row(bi, si, start + si)) mismatch("pad row", double(bi), double(si));
                continue;
            }
            const unsigned char* pp = padded.bytes.get() + (bi * d.padded.strides[0] + si * d.padded.strides[1]) * es;
            for (size_t e = 0; e < po.size(); ++e)
                for (size_t byte = 0; byte < es; ++byte)
                    if (pp[po[e] * es + byte] != 0) mismatch("pad zero row", double(bi), double(si));
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Reader r(data, size);
#if defined(TOPS_FUZZ_CONV2D)
    fuzz_conv2d(r);
#elif defined(TOPS_FUZZ_PAD)
    fuzz_pad(r);
#else
#error "define TOPS_FUZZ_CONV2D or TOPS_FUZZ_PAD"
#endif
    return 0;
}
