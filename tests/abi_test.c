/*
 * ABI test: the public header compiled as strict C99 (-std=c99 -pedantic
 * -Werror), and every public function called from C with its status checked.
 * Exits 0 on success; prints each failed check.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tops/tops.h"

static int g_failures = 0;
static int g_log_lines = 0;
static unsigned char g_workspace[1 << 16];

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "abi_test.c:%d: check failed: %s (last error: %s)\n", __LINE__, #cond, \
                    tops_last_error());                                      \
            ++g_failures;                                                    \
        }                                                                    \
    } while (0)

#define CHECK_OK(call) CHECK((call) == TOPS_SUCCESS)

static void count_lines(int level, const char *message, void *user_data) {
    int *counter = (int *)user_data;
    (void)level;
    if (message && message[0]) ++*counter;
}

static void check_info(void) {
    const char *reason = NULL;
    tops_dtype_t dt;
    CHECK(strncmp(tops_version(), "tops ", 5) == 0);
    CHECK(tops_version_number() ==
          TOPS_VERSION_MAJOR * 10000 + TOPS_VERSION_MINOR * 100 + TOPS_VERSION_PATCH);
    CHECK(strcmp(tops_status_string(TOPS_SUCCESS), "TOPS_SUCCESS") == 0);
    CHECK(strcmp(tops_status_string(TOPS_ERROR_BAD_SHAPE), "TOPS_ERROR_BAD_SHAPE") == 0);
    CHECK(TOPS_STATUS_CATEGORY(TOPS_ERROR_BAD_SHAPE) == 0x100);
    CHECK(tops_dtype_size(TOPS_DTYPE_F32) == 4 && tops_dtype_size(TOPS_DTYPE_BF16) == 2);
    for (dt = TOPS_DTYPE_F32; dt <= TOPS_DTYPE_U8; dt = (tops_dtype_t)(dt + 1)) {
        CHECK(tops_dtype_name(dt) != NULL && strcmp(tops_dtype_name(dt), "invalid") != 0);
    }
    CHECK(strcmp(tops_backend_name(TOPS_BACKEND_CPU), "cpu") == 0);
    CHECK(tops_backend_available(TOPS_BACKEND_CPU, &reason) == 1 && reason != NULL);
    reason = NULL;
    (void)tops_backend_available(TOPS_BACKEND_CUDA, &reason);
    CHECK(reason != NULL && reason[0] != '\0');
    CHECK(tops_cpu_isa() != NULL && tops_cpu_isa()[0] != '\0');
}

static void check_errors(tops_context_t ctx) {
    tops_tensor_desc_t d;
    int64_t dims[2] = {2, -1};
    CHECK(tops_tensor_desc_init(&d, TOPS_DTYPE_F32, 2, dims, NULL) == TOPS_ERROR_BAD_SHAPE);
    CHECK(strstr(tops_last_error(), "dims[1]") != NULL);
    CHECK(tops_context_set_num_threads(ctx, -1) == TOPS_ERROR_INVALID_ARGUMENT);
    CHECK(tops_last_error()[0] != '\0');
    CHECK_OK(tops_context_set_num_threads(ctx, 2));
    CHECK(tops_last_error()[0] == '\0');
}

/* Ops outside the first two: created, or refused as not supported where
 * this build has no kernel for them yet; anything else fails the test. */
static int created(tops_status_t st, const char *what) {
    if (st == TOPS_SUCCESS) return 1;
    if (TOPS_STATUS_CATEGORY(st) == TOPS_STATUS_CATEGORY(TOPS_ERROR_NOT_SUPPORTED)) {
        printf("abi_test: %s: %s (%s)\n", what, tops_status_string(st), tops_last_error());
        return 0;
    }
    fprintf(stderr, "abi_test: %s create: %s: %s\n", what, tops_status_string(st), tops_last_error());
    ++g_failures;
    return 0;
}

/* Executes op with args and a workspace of the size it asks for, then destroys it. */
static int run(tops_context_t ctx, tops_op_t op, const tops_arg_t *args, size_t n) {
    size_t ws = 0;
    void *w = NULL;
    tops_status_t st;
    CHECK_OK(tops_op_workspace_size(op, &ws));
    w = ws <= sizeof g_workspace ? (void *)g_workspace : malloc(ws);
    CHECK(w != NULL || ws == 0);
    st = tops_op_execute(ctx, op, args, n, w, ws);
    if (w != g_workspace) free(w);
    CHECK(st == TOPS_SUCCESS);
    CHECK_OK(tops_op_destroy(op));
    return st == TOPS_SUCCESS;
}

static void desc2(tops_tensor_desc_t *d, tops_dtype_t dt, int64_t d0, int64_t d1) {
    int64_t dims[2];
    dims[0] = d0;
    dims[1] = d1;
    CHECK_OK(tops_tensor_desc_init(d, dt, 2, dims, NULL));
}

static void check_norm_reduce(tops_context_t ctx) {
    float x[2][8], y[2][8], sums[2];
    tops_norm_desc_t nd = tops_norm_desc_default();
    tops_reduce_desc_t rd = tops_reduce_desc_default();
    int64_t two = 2;
    tops_op_t op = NULL;
    tops_arg_t args[2];
    int i, j;
    for (i = 0; i < 2; ++i) {
        for (j = 0; j < 8; ++j) x[i][j] = (float)(i * 8 + j) * 0.25f - 1.0f;
    }
    CHECK(nd.struct_size == sizeof nd && rd.struct_size == sizeof rd);
    desc2(&nd.x, TOPS_DTYPE_F32, 2, 8);
    nd.y = nd.x;
    args[0].kind = TOPS_ARG_X;
    args[0].ptr = x;
    args[1].kind = TOPS_ARG_Y;
    args[1].ptr = y;
    if (created(tops_norm_create(ctx, &nd, &op), "norm") && run(ctx, op, args, 2)) {
        for (i = 0; i < 2; ++i) {
            float mean = 0.0f;
            for (j = 0; j < 8; ++j) mean += y[i][j] / 8.0f;
            CHECK(fabsf(mean) < 1e-5f);
        }
    }
    rd.op = TOPS_REDUCE_SUM;
    desc2(&rd.x, TOPS_DTYPE_F32, 2, 8);
    CHECK_OK(tops_tensor_desc_init(&rd.y, TOPS_DTYPE_F32, 1, &two, NULL));
    rd.axes = 1u << 1;
    args[1].ptr = sums;
    if (created(tops_reduce_create(ctx, &rd, &op), "reduce") && run(ctx, op, args, 2)) {
        CHECK(fabsf(sums[0] + 1.0f) < 1e-5f && fabsf(sums[1] - 15.0f) < 1e-5f); /* 0.25 * (0+..+7) - 8, 0.25 * (8+..+15) - 8 */
    }
}

static void check_eltwise(tops_context_t ctx) {
    float x[2][8], b[8], y[2][8], x2[2][8];
    tops_bias_act_desc_t bd = tops_bias_act_desc_default();
    tops_prelu_desc_t pd = tops_prelu_desc_default();
    tops_weighted_sum_desc_t wd = tops_weighted_sum_desc_default();
    tops_op_t op = NULL;
    tops_arg_t args[3];
    int i, j;
    for (i = 0; i < 2; ++i) {
        for (j = 0; j < 8; ++j) {
            x[i][j] = (float)(j - 4) + 0.5f * (float)i;
            x2[i][j] = 1.0f;
        }
    }
    for (j = 0; j < 8; ++j) b[j] = 0.25f * (float)j;
    CHECK(bd.struct_size == sizeof bd && pd.struct_size == sizeof pd && wd.struct_size == sizeof wd);
    desc2(&bd.x, TOPS_DTYPE_F32, 2, 8);
    desc2(&bd.bias, TOPS_DTYPE_F32, 1, 8);
    bd.y = bd.x;
    bd.act = TOPS_ACT_RELU;
    args[0].kind = TOPS_ARG_X;
    args[0].ptr = x;
    args[1].kind = TOPS_ARG_Y;
    args[1].ptr = y;
    args[2].kind = TOPS_ARG_BIAS;
    args[2].ptr = b;
    if (created(tops_bias_act_create(ctx, &bd, &op), "bias_act") && run(ctx, op, args, 3)) {
        for (j = 0; j < 8; ++j) CHECK(y[1][j] == (x[1][j] + b[j] > 0.0f ? x[1][j] + b[j] : 0.0f));
    }
    pd.x = bd.x;
    pd.slope = bd.bias;
    pd.y = bd.x;
    args[2].kind = TOPS_ARG_SLOPE;
    if (created(tops_prelu_create(ctx, &pd, &op), "prelu") && run(ctx, op, args, 3)) {
        for (j = 0; j < 8; ++j) CHECK(fabsf(y[0][j] - (x[0][j] > 0.0f ? x[0][j] : b[j] * x[0][j])) < 1e-6f);
    }
    CHECK(wd.coefs[0] == 1.0f);
    wd.num_inputs = 2;
    wd.inputs[0] = bd.x;
    wd.inputs[1] = bd.x;
    wd.coefs[0] = 0.5f;
    wd.coefs[1] = 2.0f;
    wd.y = bd.x;
    args[0].kind = TOPS_ARG_Y;
    args[0].ptr = y;
    args[1].kind = (tops_arg_kind_t)TOPS_ARG_INPUT0;
    args[1].ptr = x;
    args[2].kind = (tops_arg_kind_t)(TOPS_ARG_INPUT0 + 1);
    args[2].ptr = x2;
    if (created(tops_weighted_sum_create(ctx, &wd, &op), "weighted_sum") && run(ctx, op, args, 3)) {
        for (j = 0; j < 8; ++j) CHECK(fabsf(y[1][j] - (0.5f * x[1][j] + 2.0f)) < 1e-6f);
    }
}

static void check_gemm_attention(tops_context_t ctx) {
    const float a[2][3] = {{1, 2, 3}, {4, 5, 6}};
    const float b[3][4] = {{1, 0, 0, 1}, {0, 1, 0, 1}, {0, 0, 1, 1}};
    float d[2][4];
    float q[4][2][8], k[5][2][8], v[5][2][8], o[4][2][8];
    int64_t qdims[4] = {1, 4, 2, 8}, kdims[4] = {1, 5, 2, 8};
    tops_gemm_desc_t gd = tops_gemm_desc_default();
    tops_attention_desc_t ad = tops_attention_desc_default();
    tops_op_t op = NULL;
    tops_arg_t args[4];
    int i, j, h;
    CHECK(gd.struct_size == sizeof gd && gd.alpha == 1.0f && gd.beta == 0.0f);
    desc2(&gd.a, TOPS_DTYPE_F32, 2, 3);
    desc2(&gd.b, TOPS_DTYPE_F32, 3, 4);
    desc2(&gd.d, TOPS_DTYPE_F32, 2, 4);
    args[0].kind = TOPS_ARG_A;
    args[0].ptr = a;
    args[1].kind = TOPS_ARG_B;
    args[1].ptr = b;
    args[2].kind = TOPS_ARG_D;
    args[2].ptr = d;
    if (created(tops_gemm_create(ctx, &gd, &op), "gemm") && run(ctx, op, args, 3)) {
        CHECK(d[0][0] == 1.0f && d[0][3] == 6.0f && d[1][2] == 6.0f && d[1][3] == 15.0f);
    }
    for (i = 0; i < 5; ++i) {
        for (h = 0; h < 2; ++h) {
            for (j = 0; j < 8; ++j) {
                if (i < 4) q[i][h][j] = 0.1f * (float)(i + j - h);
                k[i][h][j] = 0.05f * (float)(i * j - h);
                v[i][h][j] = 1.0f;
            }
        }
    }
    CHECK(ad.struct_size == sizeof ad && ad.window_left == -1);
    CHECK_OK(tops_tensor_desc_init(&ad.q, TOPS_DTYPE_F32, 4, qdims, NULL));
    CHECK_OK(tops_tensor_desc_init(&ad.k, TOPS_DTYPE_F32, 4, kdims, NULL));
    ad.v = ad.k;
    ad.o = ad.q;
    args[0].kind = TOPS_ARG_Q;
    args[0].ptr = q;
    args[1].kind = TOPS_ARG_K;
    args[1].ptr = k;
    args[2].kind = TOPS_ARG_V;
    args[2].ptr = v;
    args[3].kind = TOPS_ARG_O;
    args[3].ptr = o;
    if (created(tops_attention_create(ctx, &ad, &op), "attention") && run(ctx, op, args, 4)) {
        CHECK(fabsf(o[3][1][7] - 1.0f) < 1e-5f); /* V == 1: every output is 1 */
    }
}

static void check_softmax(tops_context_t ctx) {
    const float x[2][3] = {{1.0f, 2.0f, 3.0f}, {0.0f, 0.0f, 0.0f}};
    float y[2][3];
    int64_t dims[2] = {2, 3};
    tops_softmax_desc_t desc = tops_softmax_desc_default();
    tops_op_t op = NULL;
    size_t ws = 1;
    tops_arg_t args[2];
    int i, j;
    CHECK(desc.struct_size == sizeof desc && desc.axis == -1 && desc.scale == 1.0f);
    CHECK_OK(tops_tensor_desc_init(&desc.x, TOPS_DTYPE_F32, 2, dims, NULL));
    desc.y = desc.x;
    CHECK_OK(tops_softmax_create(ctx, &desc, &op));
    if (!op) return;
    CHECK_OK(tops_op_workspace_size(op, &ws));
    CHECK(ws <= sizeof g_workspace);
    if (ws > sizeof g_workspace) return;
    CHECK(tops_op_kernel_name(op) != NULL && tops_op_kernel_name(op)[0] != '\0');
    args[0].kind = TOPS_ARG_X;
    args[0].ptr = x;
    args[1].kind = TOPS_ARG_Y;
    args[1].ptr = y;
    CHECK_OK(tops_op_execute(ctx, op, args, 2, g_workspace, ws));
    for (i = 0; i < 2; ++i) {
        float sum = 0.0f;
        for (j = 0; j < 3; ++j) sum += y[i][j];
        CHECK(fabsf(sum - 1.0f) < 1e-5f);
    }
    CHECK(y[0][0] < y[0][1] && y[0][1] < y[0][2]);
    CHECK(fabsf(y[1][0] - 1.0f / 3.0f) < 1e-6f);
    CHECK_OK(tops_op_destroy(op));
}

static void check_transpose(tops_context_t ctx) {
    const uint16_t x[2][3] = {{1, 2, 3}, {4, 5, 6}};
    uint16_t y[3][2];
    int64_t x_dims[2] = {2, 3};
    int64_t y_dims[2] = {3, 2};
    tops_transpose_desc_t desc = tops_transpose_desc_default();
    tops_op_t op = NULL;
    tops_arg_t args[2];
    int i, j;
    CHECK(desc.struct_size == sizeof desc && desc.perm[0] == 0 && desc.perm[1] == 1);
    CHECK_OK(tops_tensor_desc_init(&desc.x, TOPS_DTYPE_BF16, 2, x_dims, NULL));
    CHECK_OK(tops_tensor_desc_init(&desc.y, TOPS_DTYPE_BF16, 2, y_dims, NULL));
    desc.perm[0] = 1;
    desc.perm[1] = 0;
    CHECK_OK(tops_transpose_create(ctx, &desc, &op));
    if (!op) return;
    args[0].kind = TOPS_ARG_X;
    args[0].ptr = x;
    args[1].kind = TOPS_ARG_Y;
    args[1].ptr = y;
    CHECK_OK(tops_op_execute(ctx, op, args, 2, g_workspace, sizeof g_workspace));
    for (i = 0; i < 3; ++i) {
        for (j = 0; j < 2; ++j) CHECK(y[i][j] == x[j][i]);
    }
    CHECK_OK(tops_op_destroy(op));
}

static void check_pad(tops_context_t ctx) {
    /* padded [2, 3, 2] with lengths {1, 3} -> packed [4, 2] -> padded again */
    const int16_t x[2][3][2] = {{{1, 2}, {9, 9}, {9, 9}}, {{3, 4}, {5, 6}, {7, 8}}};
    const int32_t lengths[2] = {1, 3};
    int16_t packed[4][2];
    int16_t back[2][3][2];
    int32_t cu[3] = {-1, -1, -1};
    int64_t pdims[3] = {2, 3, 2}, kdims[2] = {4, 2}, ldims[1] = {2}, cdims[1] = {3};
    tops_pad_desc_t d = tops_pad_desc_default();
    tops_op_t op = NULL;
    tops_arg_t args[4];
    int i;
    CHECK(d.struct_size == sizeof d && d.lengths.dtype == TOPS_DTYPE_INVALID);
    CHECK_OK(tops_tensor_desc_init(&d.padded, TOPS_DTYPE_F16, 3, pdims, NULL));
    CHECK_OK(tops_tensor_desc_init(&d.packed, TOPS_DTYPE_F16, 2, kdims, NULL));
    CHECK_OK(tops_tensor_desc_init(&d.lengths, TOPS_DTYPE_I32, 1, ldims, NULL));
    CHECK_OK(tops_tensor_desc_init(&d.cu_seqlens, TOPS_DTYPE_I32, 1, cdims, NULL));
    args[0].kind = TOPS_ARG_X;
    args[0].ptr = x;
    args[1].kind = TOPS_ARG_Y;
    args[1].ptr = packed;
    args[2].kind = TOPS_ARG_LENGTHS;
    args[2].ptr = lengths;
    args[3].kind = TOPS_ARG_CU_SEQLENS;
    args[3].ptr = cu;
    if (created(tops_unpad_create(ctx, &d, &op), "unpad") && run(ctx, op, args, 4)) {
        CHECK(cu[0] == 0 && cu[1] == 1 && cu[2] == 4);
        for (i = 0; i < 8; ++i) CHECK(packed[i / 2][i % 2] == i + 1);
    }
    d.lengths.dtype = TOPS_DTYPE_INVALID;
    args[0].ptr = packed;
    args[1].ptr = back;
    args[2].kind = TOPS_ARG_CU_SEQLENS;
    args[2].ptr = cu;
    if (created(tops_pad_create(ctx, &d, &op), "pad") && run(ctx, op, args, 3)) {
        CHECK(back[0][0][1] == 2 && back[0][1][0] == 0 && back[0][2][1] == 0 && back[1][2][1] == 8);
    }
}

int main(void) {
    tops_context_t ctx = NULL;
    tops_backend_t backend = TOPS_BACKEND_DEFAULT;

    check_info();
    CHECK_OK(tops_set_log_callback(count_lines, &g_log_lines, 1));
    CHECK_OK(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx));
    if (!ctx) {
        fprintf(stderr, "abi_test: no CPU context: %s\n", tops_last_error());
        return 1;
    }
    CHECK_OK(tops_context_get_backend(ctx, &backend));
    CHECK(backend == TOPS_BACKEND_CPU);
    CHECK_OK(tops_context_set_stream(ctx, NULL));
    check_errors(ctx);
    check_softmax(ctx);
    check_transpose(ctx);
    check_norm_reduce(ctx);
    check_eltwise(ctx);
    check_gemm_attention(ctx);
    check_pad(ctx);
    CHECK(g_log_lines >= 4); /* create + exec of each op */
    CHECK_OK(tops_set_log_callback(NULL, NULL, 0));
    CHECK_OK(tops_context_destroy(ctx));
    CHECK_OK(tops_context_destroy(NULL));
    CHECK_OK(tops_op_destroy(NULL));
    if (g_failures) {
        fprintf(stderr, "abi_test: %d checks failed\n", g_failures);
        return 1;
    }
    printf("abi_test: every public function called from C99: ok\n");
    return 0;
}
