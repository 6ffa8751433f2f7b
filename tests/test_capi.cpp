// The C API contract, part 1: versions, status strings, dtypes, backends,
// contexts, the thread-local last error and tensor descriptors (part 2, the
// op life cycle, validation and logging, is test_capi_ops.cpp). Suites are
// named Capi* (run once by ctest, not per ISA level).
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
using tops_test::fails_with;
using tops_test::kUnknownBackend;
using tops_test::kUnknownDtype;
using tops_test::kUnknownStatus;
using tops_test::succeeds;
using tops_test::tensor_desc;

// ------------------------------------------------------------------ version, status, dtypes

TEST(CapiVersion, StringAndNumberAgreeWithTheHeader) {
    const std::string v = tops_version();
    const std::string num = std::to_string(TOPS_VERSION_MAJOR) + "." + std::to_string(TOPS_VERSION_MINOR) + "." +
                            std::to_string(TOPS_VERSION_PATCH);
    EXPECT_EQ(v.rfind("tops " + num, 0), 0u) << v;
    EXPECT_NE(v.find("cpu"), std::string::npos) << "the version names the backends compiled in: " << v;
    EXPECT_EQ(tops_version_number(), TOPS_VERSION_MAJOR * 10000 + TOPS_VERSION_MINOR * 100 + TOPS_VERSION_PATCH);
}

TEST(CapiStatus, EveryCodeHasItsNameAndCategory) {
    const struct {
        tops_status_t code;
        const char* name;
        int category;
    } all[] = {
        {TOPS_SUCCESS, "TOPS_SUCCESS", 0},
        {TOPS_ERROR_INVALID_ARGUMENT, "TOPS_ERROR_INVALID_ARGUMENT", 0x100},
        {TOPS_ERROR_NULL_POINTER, "TOPS_ERROR_NULL_POINTER", 0x100},
        {TOPS_ERROR_BAD_STRUCT_SIZE, "TOPS_ERROR_BAD_STRUCT_SIZE", 0x100},
        {TOPS_ERROR_BAD_DTYPE, "TOPS_ERROR_BAD_DTYPE", 0x100},
        {TOPS_ERROR_BAD_RANK, "TOPS_ERROR_BAD_RANK", 0x100},
        {TOPS_ERROR_BAD_SHAPE, "TOPS_ERROR_BAD_SHAPE", 0x100},
        {TOPS_ERROR_BAD_STRIDE, "TOPS_ERROR_BAD_STRIDE", 0x100},
        {TOPS_ERROR_BAD_AXIS, "TOPS_ERROR_BAD_AXIS", 0x100},
        {TOPS_ERROR_MISSING_ARGUMENT, "TOPS_ERROR_MISSING_ARGUMENT", 0x100},
        {TOPS_ERROR_UNKNOWN_ARGUMENT, "TOPS_ERROR_UNKNOWN_ARGUMENT", 0x100},
        {TOPS_ERROR_WORKSPACE_TOO_SMALL, "TOPS_ERROR_WORKSPACE_TOO_SMALL", 0x100},
        {TOPS_ERROR_CONTEXT_MISMATCH, "TOPS_ERROR_CONTEXT_MISMATCH", 0x100},
        {TOPS_ERROR_NOT_SUPPORTED, "TOPS_ERROR_NOT_SUPPORTED", 0x200},
        {TOPS_ERROR_BACKEND_UNAVAILABLE, "TOPS_ERROR_BACKEND_UNAVAILABLE", 0x200},
        {TOPS_ERROR_OUT_OF_MEMORY, "TOPS_ERROR_OUT_OF_MEMORY", 0x300},
        {TOPS_ERROR_DEVICE, "TOPS_ERROR_DEVICE", 0x400},
        {TOPS_ERROR_DEVICE_LAUNCH, "TOPS_ERROR_DEVICE_LAUNCH", 0x400},
        {TOPS_ERROR_INTERNAL, "TOPS_ERROR_INTERNAL", 0x500},
    };
    for (const auto& s : all) {
        EXPECT_STREQ(tops_status_string(s.code), s.name);
        EXPECT_EQ(TOPS_STATUS_CATEGORY(s.code), s.category) << s.name;
    }
    EXPECT_STREQ(tops_status_string(static_cast<tops_status_t>(kUnknownStatus)), "TOPS_ERROR_UNKNOWN_STATUS");
}

TEST(CapiDtype, SizesAndNames) {
    const struct {
        tops_dtype_t dt;
        size_t size;
        const char* name;
    } all[] = {{TOPS_DTYPE_F32, 4, "f32"}, {TOPS_DTYPE_F16, 2, "f16"}, {TOPS_DTYPE_BF16, 2, "bf16"},
               {TOPS_DTYPE_I32, 4, "i32"}, {TOPS_DTYPE_I8, 1, "i8"},    {TOPS_DTYPE_U8, 1, "u8"},
               {TOPS_DTYPE_INVALID, 0, "invalid"}, {kUnknownDtype, 0, "invalid"}};
    for (const auto& d : all) {
        EXPECT_EQ(tops_dtype_size(d.dt), d.size) << d.name;
        EXPECT_STREQ(tops_dtype_name(d.dt), d.name);
    }
}

// ------------------------------------------------------------------ backends and contexts

TEST(CapiBackend, NamesAndAvailability) {
    EXPECT_STREQ(tops_backend_name(TOPS_BACKEND_CPU), "cpu");
    EXPECT_STREQ(tops_backend_name(TOPS_BACKEND_CUDA), "cuda");
    EXPECT_STREQ(tops_backend_name(TOPS_BACKEND_DEFAULT), "default");
    const char* reason = nullptr;
    EXPECT_EQ(tops_backend_available(TOPS_BACKEND_CPU, &reason), 1);
    EXPECT_STREQ(reason, "ok");
    EXPECT_EQ(tops_backend_available(TOPS_BACKEND_DEFAULT, nullptr), 1);
    reason = nullptr;
    EXPECT_EQ(tops_backend_available(kUnknownBackend, &reason), 0);
    ASSERT_NE(reason, nullptr);
    EXPECT_NE(std::string(reason).find("unknown backend"), std::string::npos) << reason;
    reason = nullptr;
    const int cuda = tops_backend_available(TOPS_BACKEND_CUDA, &reason);
    ASSERT_NE(reason, nullptr);
    if (cuda) {
        EXPECT_STREQ(reason, "ok");
    } else {
        EXPECT_GT(std::strlen(reason), 4u) << "an unavailable CUDA backend says why";
    }
}

TEST(CapiContext, CpuContextLifeCycle) {
    ContextHandle c;
    ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_CPU, 0, &c.ctx)));
    tops_backend_t b = TOPS_BACKEND_DEFAULT;
    EXPECT_TRUE(succeeds(tops_context_get_backend(c.ctx, &b)));
    EXPECT_EQ(b, TOPS_BACKEND_CPU);
    EXPECT_TRUE(succeeds(tops_context_set_stream(c.ctx, nullptr)));
    EXPECT_TRUE(succeeds(tops_context_set_num_threads(c.ctx, 0)));
    EXPECT_TRUE(succeeds(tops_context_set_num_threads(c.ctx, 3)));
    EXPECT_TRUE(succeeds(tops_context_destroy(nullptr)));
    EXPECT_TRUE(succeeds(tops_op_destroy(nullptr)));
}

TEST(CapiContext, DefaultBackendResolvesToAConcreteOne) {
    ContextHandle c;
    ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_DEFAULT, 0, &c.ctx)));
    tops_backend_t b = TOPS_BACKEND_DEFAULT;
    ASSERT_TRUE(succeeds(tops_context_get_backend(c.ctx, &b)));
    EXPECT_EQ(b, tops_backend_available(TOPS_BACKEND_CUDA, nullptr) ? TOPS_BACKEND_CUDA : TOPS_BACKEND_CPU);
}

TEST(CapiContext, NullPointers) {
    EXPECT_TRUE(fails_with(tops_context_create(TOPS_BACKEND_CPU, 0, nullptr), TOPS_ERROR_NULL_POINTER,
                           {"tops_context_create", "ctx is NULL"}));
    tops_backend_t b;
    EXPECT_TRUE(fails_with(tops_context_get_backend(nullptr, &b), TOPS_ERROR_NULL_POINTER,
                           {"tops_context_get_backend", "ctx is NULL"}));
    ContextHandle c;
    ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_CPU, 0, &c.ctx)));
    EXPECT_TRUE(fails_with(tops_context_get_backend(c.ctx, nullptr), TOPS_ERROR_NULL_POINTER,
                           {"tops_context_get_backend", "backend is NULL"}));
    EXPECT_TRUE(fails_with(tops_context_set_stream(nullptr, nullptr), TOPS_ERROR_NULL_POINTER,
                           {"tops_context_set_stream", "ctx is NULL"}));
    EXPECT_TRUE(fails_with(tops_context_set_num_threads(nullptr, 1), TOPS_ERROR_NULL_POINTER,
                           {"tops_context_set_num_threads", "ctx is NULL"}));
}

TEST(CapiContext, UnknownBackendNegativeDeviceNegativeThreads) {
    tops_context_t c = reinterpret_cast<tops_context_t>(&c);
    EXPECT_TRUE(fails_with(tops_context_create(kUnknownBackend, 0, &c), TOPS_ERROR_INVALID_ARGUMENT,
                           {"tops_context_create", "unknown backend 3"}));
    EXPECT_EQ(c, nullptr) << "a failed create must leave *ctx NULL";
    EXPECT_TRUE(fails_with(tops_context_create(TOPS_BACKEND_CPU, -1, &c), TOPS_ERROR_INVALID_ARGUMENT,
                           {"tops_context_create", "device -1", "negative"}));
    ContextHandle ok;
    ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_CPU, 0, &ok.ctx)));
    EXPECT_TRUE(fails_with(tops_context_set_num_threads(ok.ctx, -2), TOPS_ERROR_INVALID_ARGUMENT,
                           {"tops_context_set_num_threads", "num_threads -2", "negative"}));
}

TEST(CapiContext, CudaContextFailsWithTheReasonWhenUnavailable) {
    const char* reason = nullptr;
    if (tops_backend_available(TOPS_BACKEND_CUDA, &reason)) {
        ContextHandle c;
        const tops_status_t st = tops_context_create(TOPS_BACKEND_CUDA, 1 << 20, &c.ctx);
        EXPECT_NE(st, TOPS_SUCCESS) << "a CUDA context on device 1048576";
        EXPECT_EQ(c.ctx, nullptr);
        EXPECT_STRNE(tops_last_error(), "");
        return;
    }
    tops_context_t c = nullptr;
    EXPECT_TRUE(fails_with(tops_context_create(TOPS_BACKEND_CUDA, 0, &c), TOPS_ERROR_BACKEND_UNAVAILABLE,
                           {"tops_context_create", "cuda", reason}));
    EXPECT_EQ(c, nullptr);
}

// ------------------------------------------------------------------ last error

TEST(CapiLastError, SetOnFailureClearedAfterSuccess) {
    ContextHandle c;
    ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_CPU, 0, &c.ctx)));
    EXPECT_STREQ(tops_last_error(), "");
    EXPECT_NE(tops_context_set_num_threads(c.ctx, -1), TOPS_SUCCESS);
    EXPECT_STRNE(tops_last_error(), "");
    EXPECT_TRUE(succeeds(tops_context_set_num_threads(c.ctx, 1)));
    EXPECT_STREQ(tops_last_error(), "") << "a successful call clears the last error";
}

TEST(CapiLastError, IsPerThread) {
    ContextHandle c;
    ASSERT_TRUE(succeeds(tops_context_create(TOPS_BACKEND_CPU, 0, &c.ctx)));
    ASSERT_NE(tops_context_set_num_threads(c.ctx, -5), TOPS_SUCCESS);
    const std::string mine = tops_last_error();
    std::string other_before, other_after;
    std::thread t([&] {
        other_before = tops_last_error();
        tops_context_t bad = nullptr;
        (void)tops_context_create(TOPS_BACKEND_CPU, -3, &bad);
        other_after = tops_last_error();
    });
    t.join();
    EXPECT_EQ(other_before, "") << "a new thread starts with no error";
    EXPECT_NE(other_after.find("device -3"), std::string::npos) << other_after;
    EXPECT_EQ(std::string(tops_last_error()), mine) << "another thread's error does not leak into this one";
}

// ------------------------------------------------------------------ tensor descriptors

TEST(CapiTensorDesc, InitDenseAndStrided) {
    tops_tensor_desc_t d;
    const int64_t dims[3] = {2, 3, 5};
    ASSERT_TRUE(succeeds(tops_tensor_desc_init(&d, TOPS_DTYPE_BF16, 3, dims, nullptr)));
    EXPECT_EQ(d.dtype, TOPS_DTYPE_BF16);
    EXPECT_EQ(d.rank, 3);
    EXPECT_EQ(d.strides[0], 15);
    EXPECT_EQ(d.strides[1], 5);
    EXPECT_EQ(d.strides[2], 1);
    const int64_t strides[3] = {0, 1, 3};
    ASSERT_TRUE(succeeds(tops_tensor_desc_init(&d, TOPS_DTYPE_U8, 3, dims, strides)));
    EXPECT_EQ(d.strides[0], 0);
    EXPECT_EQ(d.strides[2], 3);
    ASSERT_TRUE(succeeds(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 0, nullptr, nullptr))) << "a scalar";
    EXPECT_EQ(d.rank, 0);
}

TEST(CapiTensorDesc, EveryRule) {
    tops_tensor_desc_t d;
    const int64_t dims[9] = {2, 3, 4, 1, 1, 1, 1, 1, 1};
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(nullptr, TOPS_DTYPE_F32, 1, dims, nullptr), TOPS_ERROR_NULL_POINTER,
                           {"tops_tensor_desc_init", "desc is NULL"}));
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 2, nullptr, nullptr), TOPS_ERROR_NULL_POINTER,
                           {"tops_tensor_desc_init", "dims is NULL"}));
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 9, dims, nullptr), TOPS_ERROR_BAD_RANK,
                           {"tops_tensor_desc_init", "rank 9", "[0, 8]"}));
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, -1, dims, nullptr), TOPS_ERROR_BAD_RANK,
                           {"tops_tensor_desc_init", "rank -1"}));
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, kUnknownDtype, 1, dims, nullptr),
                           TOPS_ERROR_BAD_DTYPE, {"dtype 7"}));
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_INVALID, 1, dims, nullptr), TOPS_ERROR_BAD_DTYPE,
                           {"dtype 0"}));
    const int64_t neg[2] = {4, -5};
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 2, neg, nullptr), TOPS_ERROR_BAD_SHAPE,
                           {"dims[1] = -5", "negative"}));
    const int64_t neg_stride[2] = {-1, 1};
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 2, dims, neg_stride), TOPS_ERROR_BAD_STRIDE,
                           {"strides[0] = -1", "negative"}));
    const int64_t huge[3] = {int64_t(1) << 40, int64_t(1) << 40, 2};
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 3, huge, nullptr), TOPS_ERROR_BAD_SHAPE,
                           {"element count overflows int64", "dims[1]"}));
    const int64_t big[1] = {int64_t(1) << 62};
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 1, big, nullptr), TOPS_ERROR_BAD_SHAPE,
                           {"byte extent overflows int64"}));
    const int64_t two[2] = {2, 3};
    const int64_t far[2] = {std::numeric_limits<int64_t>::max(), 1};
    EXPECT_TRUE(fails_with(tops_tensor_desc_init(&d, TOPS_DTYPE_U8, 2, two, far), TOPS_ERROR_BAD_STRIDE,
                           {"offset overflows int64"}));
    const int64_t empty[2] = {0, int64_t(1) << 62};
    EXPECT_TRUE(succeeds(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 2, empty, nullptr)))
        << "a tensor with a 0 dim has no elements and cannot overflow";
}

}  // namespace
