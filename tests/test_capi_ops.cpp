// The C API contract, part 2: every validation rule of softmax and transpose
// returns its status and a message naming the op, the argument and the
// offending value; op execution (arguments, workspace, aliasing, contexts)
// and logging (part 1 is test_capi.cpp; each op's own validation rules are
// in its test file). Suites are named Capi* (run once by ctest, not per ISA
// level).
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace {

using tops_test::ContextHandle;
using tops_test::OpHandle;
using tops_test::fails_with;
using tops_test::kUnknownDtype;
using tops_test::succeeds;
using tops_test::tensor_desc;

// f32 softmax over the last axis of a dense [4, 8].
tops_softmax_desc_t softmax_desc() {
    tops_softmax_desc_t d = tops_softmax_desc_default();
    d.x = tensor_desc(TOPS_DTYPE_F32, {4, 8});
    d.y = d.x;
    return d;
}

// f32 transpose [4, 8] -> [8, 4].
tops_transpose_desc_t transpose_desc() {
    tops_transpose_desc_t d = tops_transpose_desc_default();
    d.x = tensor_desc(TOPS_DTYPE_F32, {4, 8});
    d.y = tensor_desc(TOPS_DTYPE_F32, {8, 4});
    d.perm[0] = 1;
    d.perm[1] = 0;
    return d;
}

class CapiTest : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx_.ctx))); }

    tops_status_t create_softmax(const tops_softmax_desc_t& d) {
        op_.reset();
        tops_op_t op = reinterpret_cast<tops_op_t>(&op_);  // must be reset to NULL on failure
        const tops_status_t st = tops_softmax_create(ctx_.ctx, &d, &op);
        if (st != TOPS_SUCCESS) {
            EXPECT_EQ(op, nullptr) << "a failed create must leave *op NULL";
        }
        op_.op = op;  // no tops call here: it would clear the last error
        return st;
    }
    tops_status_t create_transpose(const tops_transpose_desc_t& d) {
        op_.reset();
        tops_op_t op = reinterpret_cast<tops_op_t>(&op_);
        const tops_status_t st = tops_transpose_create(ctx_.ctx, &d, &op);
        if (st != TOPS_SUCCESS) {
            EXPECT_EQ(op, nullptr) << "a failed create must leave *op NULL";
        }
        op_.op = op;  // no tops call here: it would clear the last error
        return st;
    }

    ContextHandle ctx_;
    OpHandle op_;
};

// ------------------------------------------------------------------ softmax validation

TEST_F(CapiTest, SoftmaxNullArguments) {
    tops_softmax_desc_t d = softmax_desc();
    tops_op_t op = nullptr;
    EXPECT_TRUE(fails_with(tops_softmax_create(nullptr, &d, &op), TOPS_ERROR_NULL_POINTER,
                           {"tops_softmax_create", "ctx is NULL"}));
    EXPECT_TRUE(fails_with(tops_softmax_create(ctx_.ctx, nullptr, &op), TOPS_ERROR_NULL_POINTER,
                           {"tops_softmax_create", "desc is NULL"}));
    EXPECT_TRUE(fails_with(tops_softmax_create(ctx_.ctx, &d, nullptr), TOPS_ERROR_NULL_POINTER,
                           {"tops_softmax_create", "op is NULL"}));
}

TEST_F(CapiTest, SoftmaxStructSize) {
    tops_softmax_desc_t d = softmax_desc();
    d.struct_size = 0;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_STRUCT_SIZE, {"softmax", "struct_size 0"}));
    d.struct_size = sizeof(tops_softmax_desc_t) - 4;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_STRUCT_SIZE,
                           {"softmax", std::to_string(sizeof(tops_softmax_desc_t) - 4).c_str()}));
    // A caller built against a newer header passes a larger struct: accepted.
    struct Newer {
        tops_softmax_desc_t desc;
        uint64_t appended_field;
    } newer{softmax_desc(), 0};
    newer.desc.struct_size = sizeof(Newer);
    EXPECT_TRUE(succeeds(create_softmax(newer.desc)));
}

TEST_F(CapiTest, SoftmaxRankDimsAndStrides) {
    tops_softmax_desc_t d = softmax_desc();
    d.x.rank = 9;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_RANK, {"softmax: x.rank 9", "[0, 8]"}));
    d.x.rank = -1;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_RANK, {"softmax: x.rank -1"}));
    d = softmax_desc();
    d.x = tensor_desc(TOPS_DTYPE_F32, {});
    d.y = d.x;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_RANK, {"softmax: x.rank 0"}));
    d = softmax_desc();
    d.y = tensor_desc(TOPS_DTYPE_F32, {32});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_RANK, {"softmax: y.rank 1", "x.rank 2"}));
    d = softmax_desc();
    d.x.dims[1] = -3;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE, {"softmax: x.dims[1] = -3", "negative"}));
    d = softmax_desc();
    d.y.dims[0] = -1;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE, {"softmax: y.dims[0] = -1"}));
    d = softmax_desc();
    d.x = tensor_desc(TOPS_DTYPE_F32, {int64_t(1) << 32, int64_t(1) << 32}, {0, 0});
    d.y = d.x;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE, {"softmax: x", "overflows int64"}));
    d = softmax_desc();
    d.y = tensor_desc(TOPS_DTYPE_F32, {4, 9});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE,
                           {"softmax: y.dims[1] = 9", "x.dims[1] = 8"}));
    d = softmax_desc();
    d.x.strides[0] = -8;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_STRIDE, {"softmax: x.strides[0] = -8", "negative"}));
    d = softmax_desc();
    d.y.strides[1] = -1;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_STRIDE, {"softmax: y.strides[1] = -1"}));
    d = softmax_desc();
    d.y = tensor_desc(TOPS_DTYPE_F32, {4, 8}, {4, 1});  // rows overlap
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_STRIDE, {"softmax: y", "strides[0] = 4", "overlap"}));
    d.y = tensor_desc(TOPS_DTYPE_F32, {4, 8}, {0, 1});  // a broadcast output
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_STRIDE, {"softmax: y", "overlap"}));
    d.y = tensor_desc(TOPS_DTYPE_F32, {4, 8}, {1, 3});  // interleaved
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_STRIDE, {"softmax: y", "overlap"}));
    d = softmax_desc();
    d.x = tensor_desc(TOPS_DTYPE_F32, {4, 8}, {0, 1});  // a broadcast input is fine
    EXPECT_TRUE(succeeds(create_softmax(d)));
}

TEST_F(CapiTest, SoftmaxDtypes) {
    tops_softmax_desc_t d = softmax_desc();
    d.x.dtype = d.y.dtype = TOPS_DTYPE_U8;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: x.dtype u8", "not supported"}));
    d.x.dtype = d.y.dtype = TOPS_DTYPE_I32;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: x.dtype i32"}));
    d.x.dtype = d.y.dtype = kUnknownDtype;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: x.dtype 7"}));
    d = softmax_desc();
    d.y.dtype = TOPS_DTYPE_INVALID;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: y.dtype 0"}));
    d = softmax_desc();
    d.y.dtype = TOPS_DTYPE_F16;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: y.dtype f16", "x.dtype f32"}));
}

TEST_F(CapiTest, SoftmaxAxisFlagsScale) {
    tops_softmax_desc_t d = softmax_desc();
    for (int32_t axis : {2, -3, 100, std::numeric_limits<int32_t>::min()}) {
        d.axis = axis;
        EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_AXIS,
                               {"softmax: axis", std::to_string(axis).c_str(), "[-2, 2)"}));
    }
    d = softmax_desc();
    for (uint32_t flags : {2u, 0x80000000u, TOPS_SOFTMAX_LOG | 4u}) {
        d.flags = flags;
        EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_INVALID_ARGUMENT, {"softmax: unknown flags 0x"}));
    }
    d = softmax_desc();
    for (float scale : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity()}) {
        d.scale = scale;
        EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_INVALID_ARGUMENT, {"softmax: scale", "not finite"}));
    }
    d = softmax_desc();
    d.axis = -2;
    d.scale = -0.5f;
    d.flags = TOPS_SOFTMAX_LOG;
    EXPECT_TRUE(succeeds(create_softmax(d))) << "axis -2, negative scale, log";
}

TEST_F(CapiTest, SoftmaxMaskRules) {
    tops_softmax_desc_t d = softmax_desc();
    d.mask = tensor_desc(TOPS_DTYPE_F32, {4, 8});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: mask.dtype f32", "u8"}));
    d.mask = tensor_desc(kUnknownDtype, {4, 8});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: mask.dtype 7"}));
    d.mask = tensor_desc(TOPS_DTYPE_U8, {8});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_RANK, {"softmax: mask.rank 1", "x.rank 2"}));
    d.mask = tensor_desc(TOPS_DTYPE_U8, {4, 8});
    d.mask.rank = 9;
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_RANK, {"softmax: mask.rank 9"}));
    d.mask = tensor_desc(TOPS_DTYPE_U8, {4, 3});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE,
                           {"softmax: mask.dims[1] = 3", "neither 1 nor x.dims[1] = 8"}));
    d.mask = tensor_desc(TOPS_DTYPE_U8, {2, 8});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE, {"softmax: mask.dims[0] = 2"}));
    d.mask = tensor_desc(TOPS_DTYPE_U8, {4, -8});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE, {"softmax: mask.dims[1] = -8", "negative"}));
    d.mask = tensor_desc(TOPS_DTYPE_U8, {4, 8}, {8, -1});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_STRIDE, {"softmax: mask.strides[1] = -1"}));
    for (auto dims : std::vector<std::vector<int64_t>>{{4, 8}, {1, 8}, {4, 1}, {1, 1}}) {
        d.mask = tensor_desc(TOPS_DTYPE_U8, dims);
        EXPECT_TRUE(succeeds(create_softmax(d))) << "mask dims [" << tops_test::dims_text(dims) << "]";
    }
    d.mask = tensor_desc(TOPS_DTYPE_U8, {4, 8}, {0, 0});  // broadcast through strides
    EXPECT_TRUE(succeeds(create_softmax(d)));
}

TEST_F(CapiTest, SoftmaxLengthsRules) {
    tops_softmax_desc_t d = softmax_desc();
    d.lengths = tensor_desc(TOPS_DTYPE_F32, {4, 1});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: lengths.dtype f32", "i32"}));
    d.lengths = tensor_desc(TOPS_DTYPE_U8, {4, 1});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_DTYPE, {"softmax: lengths.dtype u8"}));
    d.lengths = tensor_desc(TOPS_DTYPE_I32, {4});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_RANK, {"softmax: lengths.rank 1", "x.rank 2"}));
    d.lengths = tensor_desc(TOPS_DTYPE_I32, {4, 8});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE, {"softmax: lengths.dims[1] = 8", "must be 1"}));
    d.lengths = tensor_desc(TOPS_DTYPE_I32, {3, 1});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE,
                           {"softmax: lengths.dims[0] = 3", "neither 1 nor x.dims[0] = 4"}));
    d.lengths = tensor_desc(TOPS_DTYPE_I32, {4, -1});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE, {"softmax: lengths.dims[1] = -1"}));
    d.axis = 0;  // lengths along axis 0: dims[0] must be 1
    d.lengths = tensor_desc(TOPS_DTYPE_I32, {4, 1});
    EXPECT_TRUE(fails_with(create_softmax(d), TOPS_ERROR_BAD_SHAPE, {"softmax: lengths.dims[0] = 4", "must be 1"}));
    d.lengths = tensor_desc(TOPS_DTYPE_I32, {1, 8});
    EXPECT_TRUE(succeeds(create_softmax(d)));
    d = softmax_desc();
    for (auto dims : std::vector<std::vector<int64_t>>{{4, 1}, {1, 1}}) {
        d.lengths = tensor_desc(TOPS_DTYPE_I32, dims);
        EXPECT_TRUE(succeeds(create_softmax(d))) << "lengths dims [" << tops_test::dims_text(dims) << "]";
    }
}

// ------------------------------------------------------------------ transpose validation

TEST_F(CapiTest, TransposeNullArgumentsAndStructSize) {
    tops_transpose_desc_t d = transpose_desc();
    tops_op_t op = nullptr;
    EXPECT_TRUE(fails_with(tops_transpose_create(nullptr, &d, &op), TOPS_ERROR_NULL_POINTER,
                           {"tops_transpose_create", "ctx is NULL"}));
    EXPECT_TRUE(fails_with(tops_transpose_create(ctx_.ctx, nullptr, &op), TOPS_ERROR_NULL_POINTER,
                           {"tops_transpose_create", "desc is NULL"}));
    EXPECT_TRUE(fails_with(tops_transpose_create(ctx_.ctx, &d, nullptr), TOPS_ERROR_NULL_POINTER,
                           {"tops_transpose_create", "op is NULL"}));
    d.struct_size = 3;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_STRUCT_SIZE, {"transpose", "struct_size 3"}));
}

TEST_F(CapiTest, TransposePermutation) {
    tops_transpose_desc_t d = transpose_desc();
    d.perm[1] = 2;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_AXIS, {"transpose: perm[1] = 2", "[0, 2)"}));
    d.perm[0] = -1;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_AXIS, {"transpose: perm[0] = -1"}));
    d = transpose_desc();
    d.perm[0] = d.perm[1] = 1;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_AXIS, {"transpose: perm[1] = 1", "repeats"}));
    d = tops_transpose_desc_default();
    d.x = tensor_desc(TOPS_DTYPE_F32, {2, 3, 4});
    d.y = tensor_desc(TOPS_DTYPE_F32, {4, 2, 3});
    d.perm[0] = 2;
    d.perm[1] = 0;
    d.perm[2] = 2;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_AXIS, {"transpose: perm[2] = 2", "repeats"}));
    d.perm[2] = 1;
    EXPECT_TRUE(succeeds(create_transpose(d)));
}

TEST_F(CapiTest, TransposeShapesDtypesRanksStrides) {
    tops_transpose_desc_t d = transpose_desc();
    d.y = tensor_desc(TOPS_DTYPE_F32, {4, 8});  // not permuted
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_SHAPE,
                           {"transpose: y.dims[0] = 4", "x.dims[perm[0]] = x.dims[1] = 8"}));
    d = transpose_desc();
    d.y.dtype = TOPS_DTYPE_I32;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_DTYPE, {"transpose: y.dtype i32", "x.dtype f32"}));
    d = transpose_desc();
    d.x.dtype = TOPS_DTYPE_INVALID;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_DTYPE, {"transpose: x.dtype 0"}));
    d = transpose_desc();
    d.y = tensor_desc(TOPS_DTYPE_F32, {32});
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_RANK, {"transpose: y.rank 1", "x.rank 2"}));
    d = transpose_desc();
    d.x.rank = 9;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_RANK, {"transpose: x.rank 9"}));
    d = transpose_desc();
    d.x.rank = -2;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_RANK, {"transpose: x.rank -2"}));
    d = transpose_desc();
    d.x.dims[0] = -4;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_SHAPE, {"transpose: x.dims[0] = -4"}));
    d = transpose_desc();
    d.x = tensor_desc(TOPS_DTYPE_F32, {int64_t(1) << 40, int64_t(1) << 40}, {1, 1});
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_SHAPE, {"transpose: x", "overflows int64"}));
    d = transpose_desc();
    d.x.strides[1] = -1;
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_STRIDE, {"transpose: x.strides[1] = -1"}));
    d = transpose_desc();
    d.y = tensor_desc(TOPS_DTYPE_F32, {8, 4}, {2, 1});
    EXPECT_TRUE(fails_with(create_transpose(d), TOPS_ERROR_BAD_STRIDE, {"transpose: y", "overlap"}));
    d = transpose_desc();
    d.x = tensor_desc(TOPS_DTYPE_F32, {4, 8}, {0, 0});  // a broadcast input is fine
    EXPECT_TRUE(succeeds(create_transpose(d)));
    for (tops_dtype_t dt : {TOPS_DTYPE_U8, TOPS_DTYPE_I8, TOPS_DTYPE_F16, TOPS_DTYPE_BF16, TOPS_DTYPE_I32}) {
        d = transpose_desc();
        d.x.dtype = d.y.dtype = dt;
        EXPECT_TRUE(succeeds(create_transpose(d))) << "transpose takes every dtype: " << tops_dtype_name(dt);
    }
}

// ------------------------------------------------------------------ execute

TEST_F(CapiTest, ExecuteNullContextAndOp) {
    EXPECT_TRUE(fails_with(tops_op_execute(nullptr, nullptr, nullptr, 0, nullptr, 0), TOPS_ERROR_NULL_POINTER,
                           {"tops_op_execute", "ctx is NULL"}));
    EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, nullptr, nullptr, 0, nullptr, 0), TOPS_ERROR_NULL_POINTER,
                           {"tops_op_execute", "op is NULL"}));
    size_t bytes = 0;
    EXPECT_TRUE(fails_with(tops_op_workspace_size(nullptr, &bytes), TOPS_ERROR_NULL_POINTER,
                           {"tops_op_workspace_size", "op is NULL"}));
    EXPECT_STREQ(tops_op_kernel_name(nullptr), "");
}

class CapiExecute : public CapiTest {
protected:
    void SetUp() override {
        CapiTest::SetUp();
        x_.assign(32, 0.5f);
        y_.assign(32, 0.0f);
        mask_.assign(32, 1);
        lengths_.assign(4, 8);
    }
    tops_status_t exec(std::vector<tops_arg_t> args) {
        return tops_op_execute(ctx_.ctx, op_.op, args.data(), args.size(), nullptr, 0);
    }
    std::vector<float> x_, y_;
    std::vector<uint8_t> mask_;
    std::vector<int32_t> lengths_;
};

TEST_F(CapiExecute, WorkspaceQueryAndKernelName) {
    ASSERT_TRUE(succeeds(create_softmax(softmax_desc())));
    EXPECT_TRUE(fails_with(tops_op_workspace_size(op_.op, nullptr), TOPS_ERROR_NULL_POINTER,
                           {"tops_op_workspace_size", "bytes is NULL"}));
    size_t bytes = 1234567;
    EXPECT_TRUE(succeeds(tops_op_workspace_size(op_.op, &bytes)));
    EXPECT_LT(bytes, size_t(1234567)) << "written";
    const std::string name = tops_op_kernel_name(op_.op);
    EXPECT_NE(name.find("softmax"), std::string::npos) << "kernel names carry the op: " << name;
}

TEST_F(CapiExecute, ArgumentTags) {
    ASSERT_TRUE(succeeds(create_softmax(softmax_desc())));
    const tops_arg_t x{TOPS_ARG_X, x_.data()}, y{TOPS_ARG_Y, y_.data()};
    EXPECT_TRUE(succeeds(exec({x, y})));
    EXPECT_TRUE(succeeds(exec({y, x}))) << "tags, not positions, identify arguments";
    EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, op_.op, nullptr, 2, nullptr, 0), TOPS_ERROR_NULL_POINTER,
                           {"softmax", "args is NULL", "num_args = 2"}));
    EXPECT_TRUE(fails_with(exec({}), TOPS_ERROR_MISSING_ARGUMENT, {"softmax", "tag 1", "missing"}));
    EXPECT_TRUE(fails_with(exec({x}), TOPS_ERROR_MISSING_ARGUMENT, {"softmax", "tag 2", "missing"}));
    EXPECT_TRUE(fails_with(exec({y}), TOPS_ERROR_MISSING_ARGUMENT, {"softmax", "tag 1", "missing"}));
    EXPECT_TRUE(fails_with(exec({x, y, {TOPS_ARG_MASK, mask_.data()}}), TOPS_ERROR_UNKNOWN_ARGUMENT,
                           {"softmax", "args[2]", "tag 3", "does not take"}));
    EXPECT_TRUE(fails_with(exec({x, y, {TOPS_ARG_LENGTHS, lengths_.data()}}), TOPS_ERROR_UNKNOWN_ARGUMENT,
                           {"softmax", "args[2]", "tag 4"}));
    EXPECT_TRUE(fails_with(exec({{static_cast<tops_arg_kind_t>(0), x_.data()}, x, y}), TOPS_ERROR_UNKNOWN_ARGUMENT,
                           {"softmax", "args[0]", "tag 0"}));
    EXPECT_TRUE(fails_with(exec({x, y, {static_cast<tops_arg_kind_t>(63), x_.data()}}), TOPS_ERROR_UNKNOWN_ARGUMENT,
                           {"softmax", "args[2]", "tag 63"}));
    EXPECT_TRUE(fails_with(exec({x, y, {TOPS_ARG_GAMMA, x_.data()}}),
                           TOPS_ERROR_UNKNOWN_ARGUMENT, {"softmax", "args[2]", "tag 5"}));
    EXPECT_TRUE(fails_with(exec({x, y, x}), TOPS_ERROR_INVALID_ARGUMENT, {"softmax", "tag 1", "given twice"}));
    EXPECT_TRUE(fails_with(exec({x, {TOPS_ARG_Y, nullptr}}), TOPS_ERROR_NULL_POINTER,
                           {"softmax", "args[1]", "tag 2", "NULL pointer"}));
    EXPECT_TRUE(fails_with(exec({{TOPS_ARG_X, nullptr}, y}), TOPS_ERROR_NULL_POINTER, {"softmax", "args[0]", "tag 1"}));
}

TEST_F(CapiExecute, OptionalArgumentsBecomeRequired) {
    tops_softmax_desc_t d = softmax_desc();
    d.mask = tensor_desc(TOPS_DTYPE_U8, {4, 8});
    d.lengths = tensor_desc(TOPS_DTYPE_I32, {4, 1});
    ASSERT_TRUE(succeeds(create_softmax(d)));
    const tops_arg_t x{TOPS_ARG_X, x_.data()}, y{TOPS_ARG_Y, y_.data()};
    const tops_arg_t m{TOPS_ARG_MASK, mask_.data()}, l{TOPS_ARG_LENGTHS, lengths_.data()};
    EXPECT_TRUE(fails_with(exec({x, y, l}), TOPS_ERROR_MISSING_ARGUMENT, {"softmax", "tag 3", "missing"}));
    EXPECT_TRUE(fails_with(exec({x, y, m}), TOPS_ERROR_MISSING_ARGUMENT, {"softmax", "tag 4", "missing"}));
    EXPECT_TRUE(fails_with(exec({x, y, m, {TOPS_ARG_LENGTHS, nullptr}}), TOPS_ERROR_NULL_POINTER,
                           {"softmax", "args[3]", "tag 4"}));
    EXPECT_TRUE(succeeds(exec({l, m, y, x})));
}

TEST_F(CapiExecute, AliasingNeedsTheSamePointerAndLayout) {
    tops_softmax_desc_t d = softmax_desc();
    d.y = tensor_desc(TOPS_DTYPE_F32, {4, 8}, {1, 4});  // y column-major, x row-major
    ASSERT_TRUE(succeeds(create_softmax(d)));
    EXPECT_TRUE(fails_with(exec({{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, x_.data()}}), TOPS_ERROR_INVALID_ARGUMENT,
                           {"softmax", "output y overlaps input x", "same pointer and layout"}));
    ASSERT_TRUE(succeeds(create_softmax(softmax_desc())));
    std::vector<float> big(64, 0.25f);  // room for x and y side by side (2 x 32)
    EXPECT_TRUE(fails_with(exec({{TOPS_ARG_X, big.data()}, {TOPS_ARG_Y, big.data() + 1}}),
                           TOPS_ERROR_INVALID_ARGUMENT, {"softmax", "output y overlaps input x"}))
        << "partial overlap";
    EXPECT_TRUE(fails_with(exec({{TOPS_ARG_X, big.data() + 3}, {TOPS_ARG_Y, big.data()}}),
                           TOPS_ERROR_INVALID_ARGUMENT, {"softmax", "output y overlaps input x"}));
    EXPECT_TRUE(succeeds(exec({{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, x_.data()}}))) << "exact in place";
    for (float v : x_) EXPECT_FLOAT_EQ(v, 1.0f / 8.0f);
    EXPECT_TRUE(succeeds(exec({{TOPS_ARG_X, big.data()}, {TOPS_ARG_Y, big.data() + 32}}))) << "adjacent, disjoint";

    d = softmax_desc();
    d.mask = tensor_desc(TOPS_DTYPE_U8, {4, 8});
    ASSERT_TRUE(succeeds(create_softmax(d)));
    EXPECT_TRUE(fails_with(exec({{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, y_.data()}, {TOPS_ARG_MASK, y_.data()}}),
                           TOPS_ERROR_INVALID_ARGUMENT, {"softmax", "output y overlaps input mask"}));

    ASSERT_TRUE(succeeds(create_transpose(transpose_desc())));
    EXPECT_TRUE(fails_with(exec({{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, x_.data()}}), TOPS_ERROR_INVALID_ARGUMENT,
                           {"transpose", "output y overlaps input x"}));
    EXPECT_TRUE(succeeds(exec({{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, y_.data()}})));
}

TEST_F(CapiExecute, WorkspaceTooSmall) {
    bool tested = false;
    auto check = [&](const char* what) {
        size_t need = 0;
        ASSERT_TRUE(succeeds(tops_op_workspace_size(op_.op, &need)));
        if (need == 0) return;
        tested = true;
        std::vector<unsigned char> ws(need);
        std::vector<tops_arg_t> args = {{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, y_.data()}};
        EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, op_.op, args.data(), 2, ws.data(), need - 1),
                               TOPS_ERROR_WORKSPACE_TOO_SMALL,
                               {what, std::to_string(need - 1).c_str(), std::to_string(need).c_str()}));
        EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, op_.op, args.data(), 2, nullptr, need),
                               TOPS_ERROR_NULL_POINTER, {what, "workspace is NULL"}));
        EXPECT_TRUE(succeeds(tops_op_execute(ctx_.ctx, op_.op, args.data(), 2, ws.data(), need)));
    };
    ASSERT_TRUE(succeeds(create_softmax(softmax_desc())));
    check("softmax");
    ASSERT_TRUE(succeeds(create_transpose(transpose_desc())));
    check("transpose");
    std::vector<tops_arg_t> args = {{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, y_.data()}};
    unsigned char extra[16];
    EXPECT_TRUE(succeeds(tops_op_execute(ctx_.ctx, op_.op, args.data(), 2, extra, sizeof extra)))
        << "a larger workspace than needed is fine";
    if (!tested) GTEST_SKIP() << "no op needs a workspace on the CPU for these shapes; the rule is untestable here";
}

TEST_F(CapiExecute, OpOutlivesItsContext) {
    {
        ContextHandle first;
        ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_CPU, 0, &first.ctx)));
        tops_softmax_desc_t d = softmax_desc();
        ASSERT_TRUE(succeeds(tops_softmax_create(first.ctx, &d, &op_.op)));
    }
    EXPECT_TRUE(succeeds(exec({{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, y_.data()}})))
        << "ops stay valid after their context is destroyed";
    EXPECT_FLOAT_EQ(y_[5], 1.0f / 8.0f);
}

TEST_F(CapiExecute, ContextOfAnotherBackend) {
    const char* reason = nullptr;
    if (!tops_backend_available(TOPS_BACKEND_CUDA, &reason)) {
        GTEST_SKIP() << "needs a second backend; CUDA unavailable: " << reason;
    }
    ContextHandle cuda;
    ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_CUDA, 0, &cuda.ctx)));
    ASSERT_TRUE(succeeds(create_softmax(softmax_desc())));  // on the CPU context
    std::vector<tops_arg_t> args = {{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, y_.data()}};
    EXPECT_TRUE(fails_with(tops_op_execute(cuda.ctx, op_.op, args.data(), 2, nullptr, 0), TOPS_ERROR_CONTEXT_MISMATCH,
                           {"softmax", "created for cpu device 0", "cuda device 0 context"}));
    OpHandle on_cuda;
    tops_transpose_desc_t t = transpose_desc();
    ASSERT_TRUE(succeeds(tops_transpose_create(cuda.ctx, &t, &on_cuda.op)));
    EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, on_cuda.op, args.data(), 2, nullptr, 0),
                           TOPS_ERROR_CONTEXT_MISMATCH, {"transpose", "created for cuda device 0", "cpu device 0"}));
    ContextHandle second;
    if (tops_context_create(TOPS_BACKEND_CUDA, 1, &second.ctx) != TOPS_SUCCESS) {
        GTEST_SKIP() << "one CUDA device: the other-device case needs two (" << tops_last_error() << ")";
    }
    EXPECT_TRUE(fails_with(tops_op_execute(second.ctx, on_cuda.op, args.data(), 2, nullptr, 0),
                           TOPS_ERROR_CONTEXT_MISMATCH, {"transpose", "cuda device 0", "cuda device 1"}));
}

// ------------------------------------------------------------------ logging

struct LogCapture {
    std::vector<std::pair<int, std::string>> lines;
    static void fn(int level, const char* message, void* user) {
        static_cast<LogCapture*>(user)->lines.emplace_back(level, message);
    }
    int count(int level, const char* prefix) const {
        int n = 0;
        for (const auto& l : lines) n += l.first == level && l.second.rfind(prefix, 0) == 0;
        return n;
    }
    std::string all() const {
        std::string s;
        for (const auto& l : lines) s += "\n  [" + std::to_string(l.first) + "] " + l.second;
        return s;
    }
};

class CapiLogging : public CapiExecute {
protected:
    void TearDown() override { tops_set_log_callback(nullptr, nullptr, 0); }
    void run_softmax() {
        ASSERT_TRUE(succeeds(create_softmax(softmax_desc())));
        ASSERT_TRUE(succeeds(exec({{TOPS_ARG_X, x_.data()}, {TOPS_ARG_Y, y_.data()}})));
    }
    LogCapture log_;
};

TEST_F(CapiLogging, LevelOutOfRange) {
    EXPECT_TRUE(fails_with(tops_set_log_callback(LogCapture::fn, &log_, 3), TOPS_ERROR_INVALID_ARGUMENT,
                           {"tops_set_log_callback", "level 3", "[0, 2]"}));
    EXPECT_TRUE(fails_with(tops_set_log_callback(LogCapture::fn, &log_, -1), TOPS_ERROR_INVALID_ARGUMENT,
                           {"tops_set_log_callback", "level -1"}));
}

TEST_F(CapiLogging, LevelOneLogsCreateAndExecute) {
    ASSERT_TRUE(succeeds(tops_set_log_callback(LogCapture::fn, &log_, 1)));
    ASSERT_NO_FATAL_FAILURE(run_softmax());
    EXPECT_EQ(log_.count(1, "create,"), 1) << log_.all();
    EXPECT_EQ(log_.count(1, "exec,"), 1) << log_.all();
    EXPECT_EQ(log_.lines.size(), 2u) << "level 1 has no choice lines:" << log_.all();
    const std::string kernel = tops_op_kernel_name(op_.op);
    for (const auto& l : log_.lines) {
        for (const char* part : {"cpu", "softmax", "f32[4,8]", "ms"}) {
            EXPECT_NE(l.second.find(part), std::string::npos) << "\"" << l.second << "\" lacks " << part;
        }
        EXPECT_NE(l.second.find(kernel), std::string::npos) << "\"" << l.second << "\" lacks the kernel " << kernel;
    }
    log_.lines.clear();
    tops_softmax_desc_t bad = softmax_desc();
    bad.axis = 5;
    EXPECT_NE(create_softmax(bad), TOPS_SUCCESS);
    EXPECT_TRUE(log_.lines.empty()) << "a failed create logs nothing:" << log_.all();
}

TEST_F(CapiLogging, LevelTwoAddsTheKernelChoice) {
    ASSERT_TRUE(succeeds(tops_set_log_callback(LogCapture::fn, &log_, 2)));
    ASSERT_NO_FATAL_FAILURE(run_softmax());
    ASSERT_TRUE(succeeds(create_transpose(transpose_desc())));
    EXPECT_EQ(log_.count(1, "create,"), 2) << log_.all();
    EXPECT_EQ(log_.count(2, "choice,softmax,"), 1) << "level 2 says why a kernel was chosen:" << log_.all();
    EXPECT_EQ(log_.count(2, "choice,transpose,"), 1) << log_.all();
}

TEST_F(CapiLogging, LevelZeroIsSilent) {
    ASSERT_TRUE(succeeds(tops_set_log_callback(LogCapture::fn, &log_, 0)));
    ASSERT_NO_FATAL_FAILURE(run_softmax());
    EXPECT_TRUE(log_.lines.empty()) << log_.all();
}

}  // namespace
