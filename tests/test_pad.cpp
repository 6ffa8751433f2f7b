// unpad / pad on every backend x every dtype x case, compared bit for bit with
// the reference over the whole output storage (poisoned first, so unwritten
// elements, writes into gaps and writes past cu_seqlens[B] are caught), and
// CUDA against CPU. Cases: lengths 0, 1 and S, B = 1, S = 1, empty batches
// and features, lengths outside [0, S] (clamped), a packed capacity above
// and below the sum of the lengths, multi-dim features, padded / strided /
// column-major layouts, misaligned pointers (every vector width), thread
// counts, inconsistent cu_seqlens given to pad. Then every validation rule.
#include <algorithm>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "harness.hpp"
#include "reference/pad_ref.hpp"

namespace {

using tops_test::Buffer;
using tops_test::Layout;
using tops_test::Tensor;

struct PadCase {
    std::string name;
    int64_t seqlen = 0;
    std::vector<int64_t> features;  // feature dims F...
    std::vector<int32_t> lengths;   // B entries (may lie outside [0, S])
    int64_t capacity_delta = 0;     // packed rows = sum of clamped lengths + delta (>= 0 after)
    Layout padded_layout = Layout::Dense;
    Layout packed_layout = Layout::Dense;
    size_t misalign = 0;  // elements
    int threads = 0;
    std::vector<int32_t> pad_cu;  // pad only: cu_seqlens given instead of the scanned one

    PadCase& capacity(int64_t d) { capacity_delta = d; return *this; }
    PadCase& padded(Layout l) { padded_layout = l; return *this; }
    PadCase& packed(Layout l) { packed_layout = l; return *this; }
    PadCase& misaligned(size_t e) { misalign = e; return *this; }
    PadCase& num_threads(int n) { threads = n; return *this; }
    PadCase& cu(std::vector<int32_t> c) { pad_cu = std::move(c); return *this; }

    int64_t batch() const { return int64_t(lengths.size()); }
    std::vector<int64_t> padded_dims() const {
        std::vector<int64_t> d = {batch(), seqlen};
        d.insert(d.end(), features.begin(), features.end());
        return d;
    }
    int64_t total() const {
        int64_t t = 0;
        for (int32_t l : lengths) t += std::clamp<int64_t>(l, 0, seqlen);
        return std::max<int64_t>(0, t + capacity_delta);
    }
    std::vector<int64_t> packed_dims() const {
        std::vector<int64_t> d = {total()};
        d.insert(d.end(), features.begin(), features.end());
        return d;
    }
};

void PrintTo(const PadCase& c, std::ostream* os) {
    std::vector<int64_t> l(c.lengths.begin(), c.lengths.end());
    *os << c.name << " S " << c.seqlen << " F[" << tops_test::dims_text(c.features) << "] lengths ["
        << tops_test::dims_text(l) << "] capacity " << c.total() << " padded " << tops_test::layout_label(c.padded_layout)
        << " packed " << tops_test::layout_label(c.packed_layout) << " misalign " << c.misalign << " threads " << c.threads;
}

PadCase pc(std::string name, int64_t seqlen, std::vector<int64_t> features, std::vector<int32_t> lengths) {
    PadCase c;
    c.name = std::move(name);
    c.seqlen = seqlen;
    c.features = std::move(features);
    c.lengths = std::move(lengths);
    return c;
}

std::vector<PadCase> cases() {
    return {
        pc("b1_full", 7, {5}, {7}),
        pc("b1_len0", 7, {5}, {0}),
        pc("b1_len1", 7, {5}, {1}),
        pc("s1", 1, {9}, {1, 0, 1}),
        pc("lengths_0_1_S", 13, {33}, {0, 1, 13, 6, 13, 0}),
        pc("all_empty", 4, {8}, {0, 0, 0}),
        pc("batch0", 5, {8}, {}),
        pc("seqlen0", 0, {8}, {0, 3}),
        pc("features0", 6, {0}, {2, 6}),
        pc("no_features", 9, {}, {4, 9, 1}),
        pc("clamped_lengths", 6, {16}, {-3, 9, 6, 2, 2147483647}),
        pc("capacity_above", 10, {24}, {3, 10, 7}).capacity(5),
        pc("capacity_below", 10, {24}, {3, 10, 7}).capacity(-8),
        pc("capacity_zero", 10, {24}, {3, 10, 7}).capacity(-20),
        pc("bert_like", 64, {768}, {64, 33, 47, 1, 60, 32, 64, 50}),
        pc("heads_dims", 17, {3, 64}, {17, 9, 1, 12}),
        pc("odd_row", 11, {7}, {11, 5, 8}),
        pc("large_batch", 3, {16}, std::vector<int32_t>(600, 2)),
        pc("padded_gaps", 9, {20}, {9, 4, 7}).padded(Layout::Padded),
        pc("packed_gaps", 9, {20}, {9, 4, 7}).packed(Layout::Padded),
        pc("heads_dims_packed_stride2", 8, {3, 64}, {8, 3}).packed(Layout::InnerStride2),
        pc("padded_column_major", 9, {20}, {9, 4, 7}).padded(Layout::Reversed),
        pc("packed_stride2", 9, {20}, {9, 4, 7}).packed(Layout::InnerStride2),
        pc("rotated", 6, {10}, {6, 2, 5}).padded(Layout::Rotated),
        pc("misaligned_1", 12, {64}, {12, 5, 9}).misaligned(1),
        pc("misaligned_2", 12, {64}, {12, 5, 9}).misaligned(2),
        pc("misaligned_4", 12, {64}, {12, 5, 9}).misaligned(4),
        pc("threads1", 32, {256}, {32, 17, 3, 31}).num_threads(1),
        pc("threads3", 32, {256}, {32, 17, 3, 31}).num_threads(3),
        pc("pad_bad_cu", 5, {8}, {2, 3, 5, 1}).cu({3, 1, 9, 40, -2}),
    };
}

const tops_dtype_t kDtypes[] = {TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16,
                                TOPS_DTYPE_I32, TOPS_DTYPE_I8,  TOPS_DTYPE_U8};

Tensor i32_vector(const std::vector<int32_t>& v) {
    Tensor t = Tensor::make(TOPS_DTYPE_I32, {int64_t(v.size())}, Layout::Dense);
    for (size_t i = 0; i < v.size(); ++i) t.set_bits(int64_t(i), uint32_t(v[i]));
    return t;
}

tops_ref::StridedView view(Tensor& t) { return {t.storage.data(), t.dims, t.strides}; }

// One execute argument; outputs are downloaded back into their tensor.
struct Slot {
    tops_arg_kind_t kind;
    Tensor* tensor;
    bool output;
};

// Creates the op on `backend`, uploads every slot (each pointer `misalign`
// elements off alignment), executes, downloads the outputs. Fails on any
// status, a guard zone written or a gap slot of an output changed.
::testing::AssertionResult run_slots(tops_backend_t backend, const tops_test::CreateFn& create,
                                     std::vector<Slot>& slots, size_t misalign, int threads) {
    tops_test::ContextHandle ctx;
    tops_status_t st = tops_context_create(backend, 0, &ctx.ctx);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "context: " << tops_test::status_text(st);
    if (threads > 0) tops_context_set_num_threads(ctx.ctx, threads);
    tops_test::OpHandle op;
    st = create(ctx.ctx, &op.op);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "create: " << tops_test::status_text(st);
    size_t ws_bytes = 0;
    tops_op_workspace_size(op.op, &ws_bytes);
    if (ws_bytes != 0) return ::testing::AssertionFailure() << "unexpected workspace of " << ws_bytes << " bytes";
    std::vector<std::unique_ptr<Buffer>> bufs;
    std::vector<std::vector<uint8_t>> before;
    std::vector<tops_arg_t> args;
    for (Slot& s : slots) {
        const size_t mis = s.tensor->dtype == TOPS_DTYPE_I32 ? 0 : misalign * s.tensor->esize();
        bufs.push_back(std::make_unique<Buffer>(backend, s.tensor->storage.size(), mis));
        bufs.back()->upload(s.tensor->storage);
        if (!bufs.back()->error().empty()) return ::testing::AssertionFailure() << "buffer: " << bufs.back()->error();
        before.push_back(s.tensor->storage);
        args.push_back({s.kind, bufs.back()->ptr()});
    }
    st = tops_op_execute(ctx.ctx, op.op, args.data(), args.size(), nullptr, 0);
    if (st != TOPS_SUCCESS) {
        return ::testing::AssertionFailure() << "execute (" << tops_op_kernel_name(op.op) << "): " << tops_test::status_text(st);
    }
    ::testing::AssertionResult synced = tops_test::sync_backend(backend);
    if (!synced) return synced;
    for (size_t i = 0; i < slots.size(); ++i) {
        const std::vector<uint8_t> after = bufs[i]->download();
        if (!bufs[i]->error().empty()) return ::testing::AssertionFailure() << tops_op_kernel_name(op.op) << ": " << bufs[i]->error();
        if (!slots[i].output) {
            if (after != before[i]) return ::testing::AssertionFailure() << tops_op_kernel_name(op.op) << " modified an input";
            continue;
        }
        slots[i].tensor->storage = after;
        const std::vector<char> covered = slots[i].tensor->covered();
        const size_t esz = slots[i].tensor->esize();
        for (size_t k = 0; k < covered.size(); ++k) {
            if (!covered[k] && std::memcmp(before[i].data() + k * esz, after.data() + k * esz, esz)) {
                return ::testing::AssertionFailure() << tops_op_kernel_name(op.op) << " wrote gap slot " << k;
            }
        }
    }
    return ::testing::AssertionSuccess();
}

using Param = std::tuple<tops_backend_t, tops_dtype_t, PadCase>;

class PadTest : public ::testing::TestWithParam<Param> {};

struct UnpadResult {
    Tensor packed, cu;
};

UnpadResult run_unpad(tops_backend_t backend, const PadCase& c, const Tensor& padded, const Tensor& lengths,
                      const UnpadResult& poisoned, ::testing::AssertionResult* ok) {
    UnpadResult r = poisoned;
    Tensor x = padded, len = lengths;
    std::vector<Slot> slots = {{TOPS_ARG_X, &x, false}, {TOPS_ARG_LENGTHS, &len, false},
                               {TOPS_ARG_Y, &r.packed, true}, {TOPS_ARG_CU_SEQLENS, &r.cu, true}};
    const tops_test::CreateFn create = [&](tops_context_t ctx, tops_op_t* op) {
        tops_pad_desc_t d = tops_pad_desc_default();
        d.padded = padded.desc();
        d.packed = r.packed.desc();
        d.lengths = lengths.desc();
        d.cu_seqlens = r.cu.desc();
        return tops_unpad_create(ctx, &d, op);
    };
    *ok = run_slots(backend, create, slots, c.misalign, c.threads);
    return r;
}

Tensor run_pad(tops_backend_t backend, const PadCase& c, const Tensor& packed, const Tensor& cu, const Tensor& poisoned,
               ::testing::AssertionResult* ok) {
    Tensor y = poisoned, x = packed, cu_in = cu;
    std::vector<Slot> slots = {{TOPS_ARG_X, &x, false}, {TOPS_ARG_CU_SEQLENS, &cu_in, false}, {TOPS_ARG_Y, &y, true}};
    const tops_test::CreateFn create = [&](tops_context_t ctx, tops_op_t* op) {
        tops_pad_desc_t d = tops_pad_desc_default();
        d.padded = y.desc();
        d.packed = packed.desc();
        d.cu_seqlens = cu.desc();
        return tops_pad_create(ctx, &d, op);
    };
    *ok = run_slots(backend, create, slots, c.misalign, c.threads);
    return y;
}

TEST_P(PadTest, UnpadMatchesReferenceBitForBit) {
    const auto& [backend, dtype, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    tops_test::Rng rng(tops_test::test_seed());

    Tensor padded = Tensor::make(dtype, c.padded_dims(), c.padded_layout);
    tops_test::fill_random_bits(padded, rng);
    const Tensor lengths = i32_vector(c.lengths);
    UnpadResult expected{Tensor::make(dtype, c.packed_dims(), c.packed_layout),
                         Tensor::make(TOPS_DTYPE_I32, {c.batch() + 1}, Layout::Dense)};
    expected.packed.poison();
    expected.cu.poison();
    const UnpadResult poisoned = expected;
    const std::vector<int32_t> cu = tops_ref::pad_cu_seqlens(c.lengths, c.seqlen, c.total());
    for (size_t i = 0; i < cu.size(); ++i) expected.cu.set_bits(int64_t(i), uint32_t(cu[i]));
    tops_ref::unpad(view(padded), view(expected.packed), cu, padded.esize());

    ::testing::AssertionResult ok = ::testing::AssertionSuccess();
    const UnpadResult got = run_unpad(backend, c, padded, lengths, poisoned, &ok);
    ASSERT_TRUE(ok);
    EXPECT_TRUE(tops_test::bits_equal(got.cu, expected.cu, "cu_seqlens vs reference"));
    EXPECT_TRUE(tops_test::bits_equal(got.packed, expected.packed, "packed vs reference"));

    if (backend != TOPS_BACKEND_CPU && tops_test::backend_ready(TOPS_BACKEND_CPU, nullptr)) {
        const UnpadResult cpu = run_unpad(TOPS_BACKEND_CPU, c, padded, lengths, poisoned, &ok);
        ASSERT_TRUE(ok);
        EXPECT_TRUE(tops_test::bits_equal(got.cu, cpu.cu, "cu_seqlens vs the CPU backend"));
        EXPECT_TRUE(tops_test::bits_equal(got.packed, cpu.packed, "packed vs the CPU backend"));
    }
}

TEST_P(PadTest, PadMatchesReferenceBitForBit) {
    const auto& [backend, dtype, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    tops_test::Rng rng(tops_test::test_seed());

    Tensor packed = Tensor::make(dtype, c.packed_dims(), c.packed_layout);
    tops_test::fill_random_bits(packed, rng);
    const std::vector<int32_t> cu =
        c.pad_cu.empty() ? tops_ref::pad_cu_seqlens(c.lengths, c.seqlen, c.total()) : c.pad_cu;
    const Tensor cu_t = i32_vector(cu);
    Tensor expected = Tensor::make(dtype, c.padded_dims(), c.padded_layout);
    expected.poison();
    const Tensor poisoned = expected;
    tops_ref::pad(view(packed), view(expected), cu, packed.esize());

    ::testing::AssertionResult ok = ::testing::AssertionSuccess();
    const Tensor got = run_pad(backend, c, packed, cu_t, poisoned, &ok);
    ASSERT_TRUE(ok);
    EXPECT_TRUE(tops_test::bits_equal(got, expected, "padded vs reference"));

    if (backend != TOPS_BACKEND_CPU && tops_test::backend_ready(TOPS_BACKEND_CPU, nullptr)) {
        const Tensor cpu = run_pad(TOPS_BACKEND_CPU, c, packed, cu_t, poisoned, &ok);
        ASSERT_TRUE(ok);
        EXPECT_TRUE(tops_test::bits_equal(got, cpu, "padded vs the CPU backend"));
    }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    const auto& [backend, dtype, c] = info.param;
    return std::string(tops_backend_name(backend)) + "_" + tops_dtype_name(dtype) + "_" + c.name;
}

INSTANTIATE_TEST_SUITE_P(All, PadTest,
                         ::testing::Combine(::testing::ValuesIn(tops_test::all_backends()),
                                            ::testing::ValuesIn(kDtypes), ::testing::ValuesIn(cases())),
                         param_name);

// ------------------------------------------------------------------ validation

class PadValidation : public ::testing::TestWithParam<tops_backend_t> {
protected:
    void SetUp() override {
        TOPS_SKIP_UNLESS_READY(GetParam());
        ASSERT_EQ(tops_context_create(GetParam(), 0, &ctx_.ctx), TOPS_SUCCESS);
    }

    // A valid unpad desc: padded f16 [3, 8, 4, 16], packed [20, 4, 16].
    static tops_pad_desc_t good_unpad() {
        tops_pad_desc_t d = tops_pad_desc_default();
        const int64_t pd[] = {3, 8, 4, 16}, kd[] = {20, 4, 16}, ld[] = {3}, cd[] = {4};
        tops_tensor_desc_init(&d.padded, TOPS_DTYPE_F16, 4, pd, nullptr);
        tops_tensor_desc_init(&d.packed, TOPS_DTYPE_F16, 3, kd, nullptr);
        tops_tensor_desc_init(&d.lengths, TOPS_DTYPE_I32, 1, ld, nullptr);
        tops_tensor_desc_init(&d.cu_seqlens, TOPS_DTYPE_I32, 1, cd, nullptr);
        return d;
    }
    static tops_pad_desc_t good_pad() {
        tops_pad_desc_t d = good_unpad();
        d.lengths.dtype = TOPS_DTYPE_INVALID;
        return d;
    }

    // Expects `status` from create (unpad or pad) and a message containing `text`.
    void expect_error(bool unpad, const tops_pad_desc_t& d, tops_status_t status, const std::string& text) {
        tops_test::OpHandle op;
        const tops_status_t st = unpad ? tops_unpad_create(ctx_.ctx, &d, &op.op) : tops_pad_create(ctx_.ctx, &d, &op.op);
        EXPECT_EQ(st, status) << tops_last_error();
        const std::string msg = tops_last_error();
        EXPECT_NE(msg.find(text), std::string::npos) << "message: " << msg << "\nexpected to contain: " << text;
        EXPECT_EQ(op.op, nullptr);
    }

    tops_test::ContextHandle ctx_;
};

TEST_P(PadValidation, GoodDescriptorsCreate) {
    tops_test::OpHandle a, b;
    tops_pad_desc_t u = good_unpad(), p = good_pad();
    EXPECT_EQ(tops_unpad_create(ctx_.ctx, &u, &a.op), TOPS_SUCCESS) << tops_last_error();
    EXPECT_EQ(tops_pad_create(ctx_.ctx, &p, &b.op), TOPS_SUCCESS) << tops_last_error();
}

TEST_P(PadValidation, NullArguments) {
    tops_test::OpHandle op;
    const tops_pad_desc_t d = good_unpad();
    EXPECT_EQ(tops_unpad_create(ctx_.ctx, nullptr, &op.op), TOPS_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(tops_last_error()).find("tops_unpad_create: desc is NULL"), std::string::npos);
    EXPECT_EQ(tops_pad_create(nullptr, &d, &op.op), TOPS_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(tops_last_error()).find("tops_pad_create: ctx is NULL"), std::string::npos);
    EXPECT_EQ(tops_pad_create(ctx_.ctx, &d, nullptr), TOPS_ERROR_NULL_POINTER);
}

TEST_P(PadValidation, StructSize) {
    tops_pad_desc_t d = good_unpad();
    d.struct_size = 4;
    expect_error(true, d, TOPS_ERROR_BAD_STRUCT_SIZE, "unpad");
}

TEST_P(PadValidation, RequiredTensors) {
    tops_pad_desc_t d = good_unpad();
    d.cu_seqlens.dtype = TOPS_DTYPE_INVALID;
    expect_error(true, d, TOPS_ERROR_INVALID_ARGUMENT, "unpad: cu_seqlens is required (i32 [batch + 1])");
    d = good_pad();
    d.cu_seqlens.dtype = TOPS_DTYPE_INVALID;
    expect_error(false, d, TOPS_ERROR_INVALID_ARGUMENT, "pad: cu_seqlens is required");
    d = good_unpad();
    d.lengths.dtype = TOPS_DTYPE_INVALID;
    expect_error(true, d, TOPS_ERROR_INVALID_ARGUMENT, "unpad: lengths is required (i32 [batch])");
    expect_error(false, good_unpad(), TOPS_ERROR_INVALID_ARGUMENT, "pad: lengths must be absent");
}

TEST_P(PadValidation, Ranks) {
    tops_pad_desc_t d = good_unpad();
    const int64_t one[] = {3};
    tops_tensor_desc_init(&d.padded, TOPS_DTYPE_F16, 1, one, nullptr);
    expect_error(true, d, TOPS_ERROR_BAD_RANK, "unpad: padded.rank 1 must be >= 2");
    d = good_pad();
    const int64_t k2[] = {20, 64};
    tops_tensor_desc_init(&d.packed, TOPS_DTYPE_F16, 2, k2, nullptr);
    expect_error(false, d, TOPS_ERROR_BAD_RANK, "pad: packed.rank 2 must be padded.rank - 1 = 3");
}

TEST_P(PadValidation, DtypesAndShapes) {
    tops_pad_desc_t d = good_unpad();
    d.packed.dtype = TOPS_DTYPE_BF16;
    expect_error(true, d, TOPS_ERROR_BAD_DTYPE, "unpad: packed.dtype bf16 differs from padded.dtype f16");
    d = good_unpad();
    d.packed.dims[2] = 15;
    expect_error(true, d, TOPS_ERROR_BAD_SHAPE, "unpad: packed.dims[2] = 15 differs from padded.dims[3] = 16");
    d = good_unpad();
    d.lengths.dtype = TOPS_DTYPE_F32;
    expect_error(true, d, TOPS_ERROR_BAD_DTYPE, "unpad: lengths.dtype f32 must be i32");
    d = good_unpad();
    d.lengths.dims[0] = 4;
    expect_error(true, d, TOPS_ERROR_BAD_SHAPE, "unpad: lengths must be [batch] = [3] (rank 1, dims[0] = 4)");
    d = good_pad();
    d.cu_seqlens.dims[0] = 3;
    expect_error(false, d, TOPS_ERROR_BAD_SHAPE, "pad: cu_seqlens must be [batch + 1] = [4] (rank 1, dims[0] = 3)");
    d = good_pad();
    d.cu_seqlens.dtype = TOPS_DTYPE_U8;
    expect_error(false, d, TOPS_ERROR_BAD_DTYPE, "pad: cu_seqlens.dtype u8 must be i32");
    d = good_pad();
    const int64_t huge[] = {int64_t(1) << 31, 4, 16};
    tops_tensor_desc_init(&d.packed, TOPS_DTYPE_F16, 3, huge, nullptr);
    expect_error(false, d, TOPS_ERROR_BAD_SHAPE, "pad: packed.dims[0] = 2147483648 does not fit the i32 cu_seqlens");
    d = good_unpad();
    d.padded.dims[1] = -1;
    expect_error(true, d, TOPS_ERROR_BAD_SHAPE, "unpad: padded.dims[1] = -1 is negative");
}

TEST_P(PadValidation, Strides) {
    tops_pad_desc_t d = good_unpad();
    d.packed.strides[1] = 32;  // feature dims (4, 16) with strides (32, 1): a gap between heads
    d.packed.strides[0] = 128;
    expect_error(true, d, TOPS_ERROR_BAD_STRIDE, "do not collapse to one dim of a single stride");
    d = good_unpad();
    d.packed.strides[0] = 0;  // every token row at one address
    expect_error(true, d, TOPS_ERROR_BAD_STRIDE, "unpad: packed");
    d = good_pad();
    d.padded.strides[1] = 0;
    expect_error(false, d, TOPS_ERROR_BAD_STRIDE, "pad: padded");
}

TEST_P(PadValidation, ExecuteArguments) {
    const tops_backend_t backend = GetParam();
    tops_test::OpHandle op;
    tops_pad_desc_t d = good_unpad();
    ASSERT_EQ(tops_unpad_create(ctx_.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
    Buffer padded(backend, 3 * 8 * 64 * 2), packed(backend, 20 * 64 * 2), lengths(backend, 12), cu(backend, 16);
    tops_arg_t missing[] = {{TOPS_ARG_X, padded.ptr()}, {TOPS_ARG_Y, packed.ptr()}, {TOPS_ARG_LENGTHS, lengths.ptr()}};
    EXPECT_EQ(tops_op_execute(ctx_.ctx, op.op, missing, 3, nullptr, 0), TOPS_ERROR_MISSING_ARGUMENT);
    EXPECT_NE(std::string(tops_last_error()).find("unpad: required argument with tag 40 is missing"), std::string::npos)
        << tops_last_error();
    tops_arg_t unknown[] = {{TOPS_ARG_X, padded.ptr()}, {TOPS_ARG_Y, packed.ptr()}, {TOPS_ARG_LENGTHS, lengths.ptr()},
                            {TOPS_ARG_CU_SEQLENS, cu.ptr()}, {TOPS_ARG_MASK, cu.ptr()}};
    EXPECT_EQ(tops_op_execute(ctx_.ctx, op.op, unknown, 5, nullptr, 0), TOPS_ERROR_UNKNOWN_ARGUMENT);
    tops_arg_t overlap[] = {{TOPS_ARG_X, padded.ptr()}, {TOPS_ARG_Y, padded.ptr()}, {TOPS_ARG_LENGTHS, lengths.ptr()},
                            {TOPS_ARG_CU_SEQLENS, cu.ptr()}};
    EXPECT_NE(tops_op_execute(ctx_.ctx, op.op, overlap, 4, nullptr, 0), TOPS_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(All, PadValidation, ::testing::ValuesIn(tops_test::all_backends()),
                         [](const ::testing::TestParamInfo<tops_backend_t>& info) {
                             return std::string(tops_backend_name(info.param));
                         });

}  // namespace
