// Transpose on every backend x every dtype (each element size) x shape case,
// compared bit for bit with the reference over the whole output storage (so
// unwritten elements and writes into gaps are caught), and CUDA against CPU.
// Shapes: ranks 0..8, sizes 1, primes, just below/at/above tile sizes
// (8/16/32/64), large (MBs), size-0 dims, padded / permuted / strided /
// broadcast inputs, strided outputs, misaligned pointers, thread counts.
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "harness.hpp"
#include "reference/reference.hpp"

namespace {

using tops_test::Layout;
using tops_test::Tensor;

struct TransposeCase {
    std::string name;
    std::vector<int64_t> dims;  // of x
    std::vector<int> perm;
    Layout x_layout = Layout::Dense;
    Layout y_layout = Layout::Dense;
    size_t misalign = 0;  // elements
    int threads = 0;

    TransposeCase& x(Layout l) {
        x_layout = l;
        return *this;
    }
    TransposeCase& y(Layout l) {
        y_layout = l;
        return *this;
    }
    TransposeCase& misaligned(size_t elems) {
        misalign = elems;
        return *this;
    }
    TransposeCase& num_threads(int n) {
        threads = n;
        return *this;
    }
};

void PrintTo(const TransposeCase& c, std::ostream* os) {
    std::vector<int64_t> perm(c.perm.begin(), c.perm.end());
    *os << c.name << " x[" << tops_test::dims_text(c.dims) << "] perm(" << tops_test::dims_text(perm) << ") x "
        << tops_test::layout_label(c.x_layout) << ", y " << tops_test::layout_label(c.y_layout) << ", misalign "
        << c.misalign << ", threads " << c.threads;
}

TransposeCase tc(std::string name, std::vector<int64_t> dims, std::vector<int> perm) {
    TransposeCase c;
    c.name = std::move(name);
    c.dims = std::move(dims);
    c.perm = std::move(perm);
    return c;
}

TransposeCase t2(int64_t rows, int64_t cols) {
    return tc("t2d_" + std::to_string(rows) + "x" + std::to_string(cols), {rows, cols}, {1, 0});
}

std::vector<TransposeCase> cases() {
    std::vector<TransposeCase> v = {
        tc("scalar", {}, {}),
        tc("r1_1", {1}, {0}),
        tc("r1_1021", {1021}, {0}),
        t2(1, 1), t2(2, 3), t2(7, 13), t2(8, 8), t2(15, 17), t2(16, 16), t2(17, 15), t2(31, 33), t2(32, 32),
        t2(33, 31), t2(63, 65), t2(64, 64), t2(65, 63), t2(127, 129), t2(128, 128), t2(1, 1021), t2(1021, 1),
        t2(3, 4099),
        tc("t2d_identity_padded", {37, 29}, {0, 1}).x(Layout::Padded),
        tc("t2d_large_1024x1027", {1024, 1027}, {1, 0}),
        // y >= 8 MiB for f32 and f16 with line-aligned y rows: the tile
        // strategy's non-temporal stores, plus edge rows (2085 = 130 * 16 + 5);
        // misaligned, the same shape takes the plain-store path.
        t2(2048, 2085),
        tc("t2d_2048x2085_misaligned", {2048, 2085}, {1, 0}).misaligned(1),
        tc("t3d_021", {5, 7, 9}, {0, 2, 1}),
        tc("t3d_102", {5, 7, 9}, {1, 0, 2}),
        tc("t3d_120", {5, 7, 9}, {1, 2, 0}),
        tc("t3d_201", {5, 7, 9}, {2, 0, 1}),
        tc("t3d_210", {5, 7, 9}, {2, 1, 0}),
        tc("t3d_012", {5, 7, 9}, {0, 1, 2}),
        tc("t3d_unit_dims", {3, 1, 4}, {2, 1, 0}),
        tc("t3d_cube_64", {64, 64, 64}, {2, 1, 0}),
        tc("bshd_to_bhsd", {2, 37, 4, 64}, {0, 2, 1, 3}),
        tc("bhsd_to_bsdh", {2, 4, 37, 64}, {0, 2, 3, 1}),
        tc("bshd_to_bhsd_large", {8, 128, 12, 64}, {0, 2, 1, 3}),
        // x's unit dim shorter than a cache line, its run continuing in the
        // next dim of x ([n][c][h][w][e] -> [n][e][h][w][c]): the tile
        // strategy's row groups. Power-of-two pitches; 8 MiB of f32 for the
        // non-temporal stores; odd sizes for edge rows, columns and groups.
        // Rows kept whole ([B, S, H, D] -> [B, H, S, D] and kin): on sm_90
        // the TMA kernel when rows are >= 64 bytes in 16-byte multiples.
        // Edge tiles along S and H, rows longer than one 256-element box,
        // 5-D, a 6-D case beyond tensor maps (the ring wrap: TmaRing below).
        tc("bshd_edges", {3, 37, 5, 32}, {0, 2, 1, 3}),
        tc("keep_last_rows_320", {3, 5, 7, 320}, {2, 0, 1, 3}),
        tc("keep_last_5d", {2, 3, 5, 7, 64}, {3, 0, 2, 1, 4}),
        tc("keep_last_6d", {2, 3, 2, 3, 2, 64}, {4, 2, 0, 3, 1, 5}),
        tc("bshd_padded", {2, 37, 4, 64}, {0, 2, 1, 3}).x(Layout::Padded).y(Layout::Padded),
        tc("t5d_e8_groups", {2, 32, 4, 8, 8}, {0, 4, 2, 3, 1}),
        tc("t5d_e8_groups_large", {4, 32, 32, 64, 8}, {0, 4, 2, 3, 1}),
        tc("t5d_e4_groups_edges", {3, 20, 5, 7, 4}, {0, 4, 2, 3, 1}),
        tc("t4d_e2_groups_edges", {3, 17, 33, 2}, {0, 3, 2, 1}),
        tc("t4d_e16_groups", {2, 64, 16, 16}, {0, 3, 2, 1}),
        tc("t5d_e8_groups_misaligned", {2, 32, 4, 8, 8}, {0, 4, 2, 3, 1}).misaligned(1),
        tc("t5d_e8_groups_threads3", {3, 32, 4, 16, 8}, {0, 4, 2, 3, 1}).num_threads(3),
        tc("t4d_reverse", {3, 5, 17, 33}, {3, 2, 1, 0}),
        tc("t4d_keep_last", {6, 5, 4, 3}, {2, 0, 1, 3}),
        tc("t5d_a", {3, 4, 5, 6, 7}, {4, 2, 0, 3, 1}),
        tc("t5d_b", {2, 3, 4, 5, 6}, {0, 3, 1, 4, 2}),
        tc("t6d", {2, 3, 2, 3, 2, 3}, {5, 3, 1, 4, 2, 0}),
        tc("t7d", {2, 1, 3, 2, 1, 2, 3}, {6, 0, 5, 1, 4, 2, 3}),
        tc("t8d_reverse", {2, 3, 2, 1, 2, 3, 2, 2}, {7, 6, 5, 4, 3, 2, 1, 0}),
        tc("t8d_pairs", {2, 3, 2, 1, 2, 3, 2, 5}, {1, 0, 3, 2, 5, 4, 7, 6}),
        tc("empty_0x5", {0, 5}, {1, 0}),
        tc("empty_3x0x4", {3, 0, 4}, {2, 0, 1}),
        tc("x_padded", {33, 65}, {1, 0}).x(Layout::Padded),
        tc("x_reversed", {33, 65}, {1, 0}).x(Layout::Reversed),
        tc("x_rotated_3d", {9, 10, 11}, {1, 0, 2}).x(Layout::Rotated),
        tc("x_stride2", {33, 65}, {1, 0}).x(Layout::InnerStride2),
        tc("x_broadcast", {17, 40}, {1, 0}).x(Layout::BroadcastOuter),
        tc("x_broadcast_3d", {5, 6, 7}, {2, 0, 1}).x(Layout::BroadcastOuter),
        tc("y_padded", {33, 65}, {1, 0}).y(Layout::Padded),
        tc("y_reversed", {33, 65}, {1, 0}).y(Layout::Reversed),
        tc("y_stride2", {33, 65}, {1, 0}).y(Layout::InnerStride2),
        tc("both_padded_4d", {3, 5, 17, 33}, {0, 2, 1, 3}).x(Layout::Padded).y(Layout::Padded),
        tc("misaligned_64", {64, 64}, {1, 0}).misaligned(1),
        tc("misaligned_31x33", {31, 33}, {1, 0}).misaligned(1),
        tc("misaligned_4d", {2, 37, 4, 64}, {0, 2, 1, 3}).misaligned(3),
        tc("threads1", {257, 255}, {1, 0}).num_threads(1),
        tc("threads3", {257, 255}, {1, 0}).num_threads(3),
    };
    return v;
}

const tops_dtype_t kDtypes[] = {TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16,
                                TOPS_DTYPE_I32, TOPS_DTYPE_I8,  TOPS_DTYPE_U8};

using Param = std::tuple<tops_backend_t, tops_dtype_t, TransposeCase>;

class TransposeTest : public ::testing::TestWithParam<Param> {};

// Runs the case on `backend` into a poisoned y; returns y through *y.
::testing::AssertionResult run_case(tops_backend_t backend, const TransposeCase& c, const Tensor& x, Tensor* y) {
    y->poison();
    const tops_test::CreateFn create = [&](tops_context_t ctx, tops_op_t* op) {
        tops_transpose_desc_t d = tops_transpose_desc_default();
        d.x = x.desc();
        d.y = y->desc();
        for (size_t k = 0; k < c.perm.size(); ++k) d.perm[k] = c.perm[k];
        return tops_transpose_create(ctx, &d, op);
    };
    tops_test::RunSpec spec;
    spec.inputs = {{TOPS_ARG_X, &x}};
    spec.y = y;
    spec.misalign_elems = c.misalign;
    spec.num_threads = c.threads;
    return tops_test::run_op(backend, create, spec);
}

// Runs `c` on `backend` against the reference (and CUDA against CPU).
void check_case(tops_backend_t backend, tops_dtype_t dtype, const TransposeCase& c) {
    TOPS_TRACE_SEED();
    tops_test::Rng rng(tops_test::test_seed());

    Tensor x = Tensor::make(dtype, c.dims, c.x_layout);
    tops_test::fill_random_bits(x, rng);
    std::vector<int64_t> y_dims(c.dims.size());
    for (size_t k = 0; k < c.perm.size(); ++k) y_dims[k] = c.dims[size_t(c.perm[k])];
    Tensor expected = Tensor::make(dtype, y_dims, c.y_layout);
    expected.poison();
    tops_ref::transpose(x.storage.data(), x.dims, x.strides, expected.storage.data(), expected.strides, c.perm,
                        x.esize());

    Tensor y = expected;
    ASSERT_TRUE(run_case(backend, c, x, &y));
    EXPECT_TRUE(tops_test::bits_equal(y, expected, "y vs reference"));

    if (backend != TOPS_BACKEND_CPU && tops_test::backend_ready(TOPS_BACKEND_CPU, nullptr)) {
        Tensor y_cpu = expected;
        ASSERT_TRUE(run_case(TOPS_BACKEND_CPU, c, x, &y_cpu));
        EXPECT_TRUE(tops_test::bits_equal(y, y_cpu, "y vs the CPU backend"));
    }
}

TEST_P(TransposeTest, MatchesReferenceBitForBit) {
    const auto& [backend, dtype, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    check_case(backend, dtype, c);
}

// The 25 MiB [32, 512, 12, 64] f16 bench shape: enough tiles that every CTA
// of the sm_90 TMA kernel wraps its stage ring. CUDA only (with the CPU
// cross-check): too slow for the CPU-only runs under sanitizers.
TEST(TransposeTmaRing, BenchShapeOnCuda) {
    TOPS_SKIP_UNLESS_READY(TOPS_BACKEND_CUDA);
    check_case(TOPS_BACKEND_CUDA, TOPS_DTYPE_F16, tc("bshd_bench_shape", {32, 512, 12, 64}, {0, 2, 1, 3}));
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    const auto& [backend, dtype, c] = info.param;
    return std::string(tops_backend_name(backend)) + "_" + tops_dtype_name(dtype) + "_" + c.name;
}

INSTANTIATE_TEST_SUITE_P(All, TransposeTest,
                         ::testing::Combine(::testing::ValuesIn(tops_test::all_backends()),
                                            ::testing::ValuesIn(kDtypes), ::testing::ValuesIn(cases())),
                         param_name);

}  // namespace
