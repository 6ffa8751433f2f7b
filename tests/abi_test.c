/*
 * ABI test: the public header compiled as strict C99 (-std=c99 -pedantic
 * -Werror), and every public function called from C with its status checked.
 * Exits 0 on success; prints each failed check.
 */
#include <math.h>
#include <stdio.h>
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
