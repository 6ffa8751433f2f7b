// Softmax on every backend x {f32, f16, bf16} x shape/feature case, compared
// with the fp64 reference (tolerance table in the harness) and CUDA against
// CPU. Features: any axis (both signs), scale (negative and 0 too), log,
// masks of every broadcast shape, per-row lengths (0, 1, n, > n, negative,
// int32 extremes), fully masked rows, in place, strided / padded / permuted /
// broadcast inputs, strided outputs, misaligned pointers, thread counts.
// Shapes: sizes 1, primes, just below/at/above SIMD widths and tiles, rows of
// 4096 and 32768+, ranks 1..8, size-0 dims.
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "harness.hpp"
#include "reference/reference.hpp"

namespace {

using tops_test::Layout;
using tops_test::Tensor;

struct SoftmaxCase {
    std::string name;
    std::vector<int64_t> dims;
    int axis = -1;
    float scale = 1.0f;
    bool log = false;
    Layout x_layout = Layout::Dense;
    Layout y_layout = Layout::Dense;
    std::vector<int64_t> mask_dims;  // empty: no mask
    Layout mask_layout = Layout::Dense;
    double keep = 0.75;              // probability a mask entry keeps its position
    bool mask_one_row_off = true;    // zero one whole mask row along the axis
    std::vector<int64_t> lengths_dims;  // empty: no lengths
    bool inplace = false;
    double lo = -4.0, hi = 4.0;      // input range
    size_t misalign = 0;             // elements
    int threads = 0;

    SoftmaxCase& on_axis(int a) { axis = a; return *this; }
    SoftmaxCase& scaled(float s) { scale = s; return *this; }
    SoftmaxCase& log_softmax() { log = true; return *this; }
    SoftmaxCase& x(Layout l) { x_layout = l; return *this; }
    SoftmaxCase& y(Layout l) { y_layout = l; return *this; }
    SoftmaxCase& mask(std::vector<int64_t> d, Layout l = Layout::Dense) {
        mask_dims = std::move(d);
        mask_layout = l;
        return *this;
    }
    SoftmaxCase& keep_prob(double p, bool one_row_off) {
        keep = p;
        mask_one_row_off = one_row_off;
        return *this;
    }
    SoftmaxCase& lengths(std::vector<int64_t> d) { lengths_dims = std::move(d); return *this; }
    SoftmaxCase& in_place() { inplace = true; return *this; }
    SoftmaxCase& range(double l, double h) { lo = l; hi = h; return *this; }
    SoftmaxCase& misaligned(size_t e) { misalign = e; return *this; }
    SoftmaxCase& num_threads(int n) { threads = n; return *this; }
};

void PrintTo(const SoftmaxCase& c, std::ostream* os) {
    *os << c.name << " x[" << tops_test::dims_text(c.dims) << "] axis " << c.axis << " scale " << c.scale
        << (c.log ? " log" : "") << " x " << tops_test::layout_label(c.x_layout) << " y "
        << tops_test::layout_label(c.y_layout);
    if (!c.mask_dims.empty()) *os << " mask[" << tops_test::dims_text(c.mask_dims) << "] keep " << c.keep;
    if (!c.lengths_dims.empty()) *os << " lengths[" << tops_test::dims_text(c.lengths_dims) << "]";
    *os << (c.inplace ? " in place" : "") << " range [" << c.lo << ", " << c.hi << "] misalign " << c.misalign
        << " threads " << c.threads;
}

SoftmaxCase sc(std::string name, std::vector<int64_t> dims) {
    SoftmaxCase c;
    c.name = std::move(name);
    c.dims = std::move(dims);
    return c;
}

std::vector<SoftmaxCase> cases() {
    std::vector<SoftmaxCase> v;
    // Row lengths around every SIMD width (4/8/16 f32 lanes, x2 unrolled) and tile.
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 127, 128, 129,
                      255, 256, 257, 1021, 1023, 1024, 1025}) {
        v.push_back(sc("n" + std::to_string(n), {3, n}));
    }
    const std::vector<int64_t> attn = {2, 3, 5, 37};  // (batch, heads, queries, keys)
    const std::vector<SoftmaxCase> more = {
        sc("r1_1", {1}), sc("r1_1021", {1021}), sc("r2_1x1", {1, 1}),
        sc("rows1000_n7", {1000, 7}), sc("rows257_n33", {257, 33}),
        // large: a few MB
        sc("large_48x4096", {48, 4096}),
        sc("large_32x32768", {32, 32768}),
        sc("large_4x32785_log", {4, 32785}).log_softmax(),
        sc("large_16384x64_mask", {16384, 64}).mask({16384, 1}),
        sc("large_2x65539", {2, 65539}),
        // short rows (8 lanes x 4 vectors for f32) over more rows than one
        // wave of resident blocks: partial rows, odd row counts, padded rows
        sc("many_rows_20011x128", {20011, 128}),
        sc("many_rows_40009x100_log", {40009, 100}).scaled(-0.125f).log_softmax(),
        sc("many_rows_padded_17001x96", {17001, 96}).x(Layout::Padded).y(Layout::Padded),
        // dense rows (CUDA: unmasked softmax over rows at one stride, 16-byte
        // vectors): partial last vectors of a lane, merged outer dims, a
        // broadcast x (row stride 0), in place, a scale; two outer dims that
        // do not merge take the general kernel
        sc("dense_333x100", {333, 100}), sc("dense_37x1000", {37, 1000}),
        sc("dense_merged_4x6x512", {4, 6, 512}), sc("dense_bcast_7x512", {7, 512}).x(Layout::BroadcastOuter),
        sc("dense_inplace_9x1024", {9, 1024}).in_place(), sc("dense_scaled_5x1024", {5, 1024}).scaled(0.125f),
        sc("unmerged_bcast_3x5x512", {3, 5, 512}).x(Layout::BroadcastOuter),
        // axes
        sc("axis0_4d", {3, 5, 7, 11}).on_axis(0), sc("axis1_4d", {3, 5, 7, 11}).on_axis(1),
        sc("axis2_4d", {3, 5, 7, 11}).on_axis(2), sc("axis3_4d", {3, 5, 7, 11}).on_axis(3),
        sc("axis_m2_4d", {3, 5, 7, 11}).on_axis(-2), sc("axis_m4_4d", {3, 5, 7, 11}).on_axis(-4),
        sc("axis1_3d", {5, 33, 7}).on_axis(1), sc("axis0_1021x3", {1021, 3}).on_axis(0),
        sc("axis0_130x2x17", {130, 2, 17}).on_axis(0), sc("axis1_64x129x16", {4, 129, 16}).on_axis(1),
        sc("axis0_log", {37, 20}).on_axis(0).log_softmax(),
        // scale
        sc("scale_0125", {4, 100}).scaled(0.125f), sc("scale_neg", {4, 100}).scaled(-1.5f),
        sc("scale_zero", {4, 100}).scaled(0.0f), sc("scale_3", {4, 100}).scaled(3.0f),
        sc("scale_neg_log", {4, 100}).scaled(-0.7f).log_softmax(),
        // log
        sc("log_n1", {3, 1}).log_softmax(), sc("log_n129", {5, 129}).log_softmax(),
        sc("log_37x1000", {37, 1000}).log_softmax(),
        // input values
        sc("offset_1000", {4, 300}).range(995.0, 1005.0), sc("constant_rows", {3, 77}).range(2.5, 2.5),
        sc("wide_range", {5, 200}).range(-60.0, 60.0), sc("wide_range_log", {5, 200}).range(-60.0, 60.0).log_softmax(),
        // layouts
        sc("x_padded", {9, 67}).x(Layout::Padded), sc("x_reversed", {9, 67}).x(Layout::Reversed),
        sc("x_rotated", {4, 6, 67}).x(Layout::Rotated), sc("x_stride2", {9, 67}).x(Layout::InnerStride2),
        sc("x_broadcast", {9, 67}).x(Layout::BroadcastOuter),
        sc("x_broadcast_axis0", {9, 67}).x(Layout::BroadcastOuter).on_axis(0),
        sc("y_padded", {9, 67}).y(Layout::Padded), sc("y_reversed", {9, 67}).y(Layout::Reversed),
        sc("y_stride2", {9, 67}).y(Layout::InnerStride2),
        sc("both_padded_3d", {6, 5, 40}).x(Layout::Padded).y(Layout::Padded).on_axis(1),
        sc("x_reversed_axis1", {6, 5, 40}).x(Layout::Reversed).on_axis(1),
        sc("misaligned_7x65", {7, 65}).misaligned(1), sc("misaligned_3x4096", {3, 4096}).misaligned(1),
        sc("threads1", {301, 257}).num_threads(1), sc("threads3", {301, 257}).num_threads(3),
        // masks of every broadcast shape
        sc("mask_full", attn).mask(attn), sc("mask_keys", attn).mask({2, 1, 1, 37}),
        sc("mask_qk", attn).mask({1, 1, 5, 37}), sc("mask_k", attn).mask({1, 1, 1, 37}),
        sc("mask_rows", attn).mask({2, 3, 5, 1}), sc("mask_b_q", attn).mask({2, 1, 5, 1}),
        sc("mask_scalar_keep", attn).mask({1, 1, 1, 1}).keep_prob(1.0, false),
        sc("mask_scalar_off", attn).mask({1, 1, 1, 1}).keep_prob(0.0, false),
        sc("mask_padded", attn).mask(attn, Layout::Padded),
        sc("mask_stride0", attn).mask(attn, Layout::BroadcastOuter),
        sc("mask_full_log", attn).mask(attn).log_softmax(),
        sc("mask_axis1", {4, 33, 6}).on_axis(1).mask({1, 33, 6}),
        sc("mask_axis1_rows", {4, 33, 6}).on_axis(1).mask({4, 1, 6}),
        sc("mask_long_log", {8, 1024}).mask({1, 1024}).log_softmax(),
        sc("mask_sparse", {64, 16}).mask({64, 16}).keep_prob(0.05, true),
        sc("mask_all_off", {5, 17}).mask({5, 17}).keep_prob(0.0, false),
        sc("mask_all_off_log", {5, 17}).mask({5, 17}).keep_prob(0.0, false).log_softmax(),
        // lengths
        sc("len_rows", {10, 40}).lengths({10, 1}), sc("len_one", {6, 40}).lengths({1, 1}),
        sc("len_batch", {2, 3, 50}).lengths({2, 1, 1}), sc("len_bh", {2, 3, 50}).lengths({2, 3, 1}),
        sc("len_axis0", {33, 12}).on_axis(0).lengths({1, 12}),
        sc("len_axis1", {4, 33, 6}).on_axis(1).lengths({4, 1, 6}),
        sc("len_n1", {10, 1}).lengths({10, 1}), sc("len_long", {20, 4099}).lengths({20, 1}),
        sc("len_log", {10, 40}).lengths({10, 1}).log_softmax(),
        sc("len_mask_log", {3, 4, 70}).mask({3, 1, 70}).lengths({3, 4, 1}).log_softmax(),
        sc("len_mask_scale", {3, 4, 70}).mask({1, 4, 70}).lengths({3, 1, 1}).scaled(0.3f),
        // in place
        sc("inplace", {7, 129}).in_place(), sc("inplace_padded", {5, 300}).x(Layout::Padded).in_place(),
        sc("inplace_axis1_mask_log", {4, 33, 6}).on_axis(1).mask({4, 33, 1}).log_softmax().in_place(),
        sc("inplace_lengths", {10, 40}).lengths({10, 1}).in_place(),
        sc("inplace_large", {16, 4096}).in_place(),
        // ranks 1..8
        sc("rank3", {4, 5, 6}).on_axis(1), sc("rank5_unit_axis", {2, 3, 1, 4, 5}).on_axis(2),
        sc("rank6", {2, 1, 3, 2, 2, 9}), sc("rank7", {2, 2, 1, 2, 3, 2, 5}).on_axis(3),
        sc("rank8_axis0", {2, 1, 2, 3, 1, 2, 2, 7}).on_axis(0), sc("rank8_last", {2, 1, 2, 3, 1, 2, 2, 7}),
        sc("rank8_mask", {2, 1, 2, 3, 1, 2, 2, 7}).mask({2, 1, 1, 3, 1, 1, 2, 7}),
        // size-0 dims
        sc("empty_0x5", {0, 5}), sc("empty_4x0", {4, 0}), sc("empty_3x0x2_axis1", {3, 0, 2}).on_axis(1),
        sc("empty_3x0x2_axis0", {3, 0, 2}).on_axis(0), sc("empty_mask", {0, 5}).mask({1, 5}),
    };
    v.insert(v.end(), more.begin(), more.end());
    return v;
}

const tops_dtype_t kDtypes[] = {TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16};

int norm_axis(const SoftmaxCase& c) { return c.axis < 0 ? c.axis + int(c.dims.size()) : c.axis; }

// Mask: random keep/drop (nonzero keep values vary), and optionally one
// whole mask row along the axis dropped, so fully masked rows always occur.
Tensor make_mask(const SoftmaxCase& c, tops_test::Rng& rng) {
    Tensor m = Tensor::make(TOPS_DTYPE_U8, c.mask_dims, c.mask_layout);
    std::bernoulli_distribution keep(c.keep);
    std::uniform_int_distribution<int> value(1, 255);
    for (int64_t s = 0; s < m.slots(); ++s) m.set_value(s, keep(rng) ? value(rng) : 0);
    if (c.mask_one_row_off && m.count() > 0) {
        std::vector<int64_t> idx(c.mask_dims.size(), 0);
        const size_t a = size_t(norm_axis(c));
        for (idx[a] = 0; idx[a] < c.mask_dims[a]; ++idx[a]) m.set_value(m.offset(idx.data()), 0);
    }
    return m;
}

// Lengths cycle through 0, 1, n, > n, negative, random, n - 1 and int32 extremes.
Tensor make_lengths(const SoftmaxCase& c, tops_test::Rng& rng) {
    Tensor l = Tensor::make(TOPS_DTYPE_I32, c.lengths_dims, Layout::Dense);
    const int64_t n = c.dims[size_t(norm_axis(c))];
    std::uniform_int_distribution<int64_t> any(0, n);
    const int64_t kPatterns = 10;
    for (int64_t s = 0; s < l.slots(); ++s) {
        int64_t v = 0;
        switch (s % kPatterns) {
            case 0: v = 0; break;
            case 1: v = 1; break;
            case 2: v = n; break;
            case 3: v = n + 7; break;
            case 4: v = -3; break;
            case 5: v = any(rng); break;
            case 6: v = n - 1; break;
            case 7: v = any(rng); break;
            case 8: v = std::numeric_limits<int32_t>::max(); break;
            default: v = std::numeric_limits<int32_t>::min(); break;
        }
        l.set_value(s, double(v));
    }
    return l;
}

using Param = std::tuple<tops_backend_t, tops_dtype_t, SoftmaxCase>;

class SoftmaxTest : public ::testing::TestWithParam<Param> {};

struct Inputs {
    Tensor x, mask, lengths;
    bool has_mask = false, has_lengths = false;
};

// Runs the case on `backend`; returns the output's element values in *out.
::testing::AssertionResult run_case(tops_backend_t backend, const SoftmaxCase& c, const Inputs& in,
                                    std::vector<double>* out) {
    Tensor y = Tensor::make(in.x.dtype, c.dims, c.inplace ? c.x_layout : c.y_layout);
    y.poison();
    const tops_test::CreateFn create = [&](tops_context_t ctx, tops_op_t* op) {
        tops_softmax_desc_t d = tops_softmax_desc_default();
        d.x = in.x.desc();
        d.y = y.desc();
        d.axis = c.axis;
        d.scale = c.scale;
        d.flags = c.log ? TOPS_SOFTMAX_LOG : 0u;
        if (in.has_mask) d.mask = in.mask.desc();
        if (in.has_lengths) d.lengths = in.lengths.desc();
        return tops_softmax_create(ctx, &d, op);
    };
    tops_test::RunSpec spec;
    spec.inputs = {{TOPS_ARG_X, &in.x}};
    if (in.has_mask) spec.inputs.push_back({TOPS_ARG_MASK, &in.mask});
    if (in.has_lengths) spec.inputs.push_back({TOPS_ARG_LENGTHS, &in.lengths});
    spec.y = &y;
    spec.inplace = c.inplace;
    spec.misalign_elems = c.misalign;
    spec.num_threads = c.threads;
    ::testing::AssertionResult r = tops_test::run_op(backend, create, spec);
    if (r) *out = y.logical();
    return r;
}

TEST_P(SoftmaxTest, MatchesReference) {
    const auto& [backend, dtype, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    tops_test::Rng rng(tops_test::test_seed());

    Inputs in;
    in.x = Tensor::make(dtype, c.dims, c.x_layout);
    tops_test::fill_uniform(in.x, rng, c.lo, c.hi);
    tops_ref::SoftmaxProblem p;
    p.dims = c.dims;
    p.axis = c.axis;
    p.scale = double(c.scale);
    p.log = c.log;
    p.x = in.x.logical();
    if (!c.mask_dims.empty()) {
        in.mask = make_mask(c, rng);
        in.has_mask = true;
        p.mask_dims = c.mask_dims;
        for (double v : in.mask.logical()) p.mask.push_back(v != 0.0 ? 1 : 0);
    }
    if (!c.lengths_dims.empty()) {
        in.lengths = make_lengths(c, rng);
        in.has_lengths = true;
        p.lengths_dims = c.lengths_dims;
        for (double v : in.lengths.logical()) p.lengths.push_back(int32_t(v));
    }
    const std::vector<double> ref = tops_ref::softmax(p);

    std::vector<double> out;
    ASSERT_TRUE(run_case(backend, c, in, &out));
    EXPECT_TRUE(tops_test::compare_values(out, ref, tops_test::tolerance(dtype), c.dims, "y vs fp64 reference",
                                          /*zeros_exact=*/!c.log));

    if (backend != TOPS_BACKEND_CPU && tops_test::backend_ready(TOPS_BACKEND_CPU, nullptr)) {
        std::vector<double> out_cpu;
        ASSERT_TRUE(run_case(TOPS_BACKEND_CPU, c, in, &out_cpu));
        EXPECT_TRUE(tops_test::compare_values(out, out_cpu, tops_test::cross_backend_tolerance(dtype), c.dims,
                                              "y vs the CPU backend", /*zeros_exact=*/false));
    }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    const auto& [backend, dtype, c] = info.param;
    return std::string(tops_backend_name(backend)) + "_" + tops_dtype_name(dtype) + "_" + c.name;
}

INSTANTIATE_TEST_SUITE_P(All, SoftmaxTest,
                         ::testing::Combine(::testing::ValuesIn(tops_test::all_backends()),
                                            ::testing::ValuesIn(kDtypes), ::testing::ValuesIn(cases())),
                         param_name);

}  // namespace
