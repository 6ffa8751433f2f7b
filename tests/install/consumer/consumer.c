/* Consumer of an installed tops: runs a softmax on the CPU backend, checks it
 * against a plain loop and reports what tops_backend_available() says about
 * CUDA. With --expect-no-cuda it fails unless CUDA is reported unavailable
 * with a reason and a CUDA context cannot be created. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tops/tops.h>

#define ROWS 3
#define COLS 5

static int run_softmax(void) {
    float x[ROWS * COLS], y[ROWS * COLS];
    int64_t dims[2] = {ROWS, COLS};
    tops_context_t ctx = NULL;
    tops_op_t op = NULL;
    tops_softmax_desc_t desc = tops_softmax_desc_default();
    int i, r, c;
    double max_err = 0.0;

    for (i = 0; i < ROWS * COLS; ++i) x[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
    if (tops_context_create(TOPS_BACKEND_CPU, 0, &ctx) != TOPS_SUCCESS ||
        tops_tensor_desc_init(&desc.x, TOPS_DTYPE_F32, 2, dims, NULL) != TOPS_SUCCESS ||
        tops_tensor_desc_init(&desc.y, TOPS_DTYPE_F32, 2, dims, NULL) != TOPS_SUCCESS ||
        tops_softmax_create(ctx, &desc, &op) != TOPS_SUCCESS) {
        fprintf(stderr, "consumer: setup failed: %s\n", tops_last_error());
        return 1;
    }
    {
        tops_arg_t args[2] = {{TOPS_ARG_X, x}, {TOPS_ARG_Y, y}};
        if (tops_op_execute(ctx, op, args, 2, NULL, 0) != TOPS_SUCCESS) {
            fprintf(stderr, "consumer: execute failed: %s\n", tops_last_error());
            return 1;
        }
    }
    for (r = 0; r < ROWS; ++r) {
        double mx = x[r * COLS], sum = 0.0;
        for (c = 1; c < COLS; ++c) mx = x[r * COLS + c] > mx ? x[r * COLS + c] : mx;
        for (c = 0; c < COLS; ++c) sum += exp(x[r * COLS + c] - mx);
        for (c = 0; c < COLS; ++c) {
            double err = fabs(exp(x[r * COLS + c] - mx) / sum - y[r * COLS + c]);
            max_err = err > max_err ? err : max_err;
        }
    }
    tops_op_destroy(op);
    tops_context_destroy(ctx);
    printf("consumer: %s, softmax on cpu (%s): max error %.3g\n", tops_version(), tops_cpu_isa(), max_err);
    return max_err < 1e-6 ? 0 : 1;
}

int main(int argc, char **argv) {
    int expect_no_cuda = argc > 1 && strcmp(argv[1], "--expect-no-cuda") == 0;
    const char *why = NULL;
    int cuda = tops_backend_available(TOPS_BACKEND_CUDA, &why);
    printf("consumer: cuda available %d (%s)\n", cuda, why ? why : "(null)");
    if (run_softmax() != 0) return 1;
    if (expect_no_cuda) {
        tops_context_t ctx = NULL;
        tops_status_t s;
        if (cuda != 0 || why == NULL || why[0] == '\0' || strcmp(why, "ok") == 0) {
            fprintf(stderr, "consumer: expected CUDA unavailable with a reason\n");
            return 1;
        }
        s = tops_context_create(TOPS_BACKEND_CUDA, 0, &ctx);
        if (s != TOPS_ERROR_BACKEND_UNAVAILABLE || ctx != NULL) {
            fprintf(stderr, "consumer: CUDA context create gave %s\n", tops_status_string(s));
            return 1;
        }
        printf("consumer: CUDA context refused: %s\n", tops_last_error());
    }
    return 0;
}
