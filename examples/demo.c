/* tops demo: a masked, scaled softmax and a [B,S,H,D] -> [B,H,S,D] transpose
 * on the default backend (CUDA when the demo is built with it and a GPU is
 * usable, else CPU), printing what ran and checking the result against a
 * plain C loop. Runs on a machine with no GPU and no CUDA toolkit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tops/tops.h>

#if defined(TOPS_DEMO_WITH_CUDA)
#include <cuda_runtime.h>
#endif

/* Buffers live where the context's backend computes: host memory for the CPU
 * backend, device memory for CUDA. */
static tops_backend_t g_backend = TOPS_BACKEND_CPU;

static void *buf_alloc(size_t bytes) {
#if defined(TOPS_DEMO_WITH_CUDA)
    if (g_backend == TOPS_BACKEND_CUDA) {
        void *p = NULL;
        return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
    }
#endif
    return malloc(bytes);
}

static void buf_free(void *p) {
#if defined(TOPS_DEMO_WITH_CUDA)
    if (g_backend == TOPS_BACKEND_CUDA) {
        cudaFree(p);
        return;
    }
#endif
    free(p);
}

/* to_device != 0: host -> buffer, else buffer -> host. */
static void buf_copy(void *dst, const void *src, size_t bytes, int to_device) {
#if defined(TOPS_DEMO_WITH_CUDA)
    if (g_backend == TOPS_BACKEND_CUDA) {
        cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
        return;
    }
#endif
    (void)to_device;
    memcpy(dst, src, bytes);
}

/* Runs op with X = host array x, Y copied back into host array y. */
static void execute_xy(tops_context_t ctx, tops_op_t op, const void *x, size_t xbytes, void *y, size_t ybytes,
                       const void *extra, size_t extra_bytes, tops_arg_kind_t extra_kind);


#define CHECK(call)                                                                   \
    do {                                                                              \
        tops_status_t s_ = (call);                                                    \
        if (s_ != TOPS_SUCCESS) {                                                     \
            fprintf(stderr, "%s failed: %s: %s\n", #call, tops_status_string(s_),     \
                    tops_last_error());                                               \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static float frand(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffffff) / 16777216.0f * 8.0f - 4.0f;
}

static int run_softmax(tops_context_t ctx) {
    enum { ROWS = 6, COLS = 10 };
    float x[ROWS * COLS], y[ROWS * COLS];
    int32_t lengths[ROWS] = {10, 7, 3, 1, 0, 10};
    unsigned seed = 12345u;
    double max_err = 0.0;
    int r, c;
    int64_t dims[2] = {ROWS, COLS};
    int64_t len_dims[2] = {ROWS, 1};
    tops_softmax_desc_t d = tops_softmax_desc_default();
    tops_op_t op = NULL;
    size_t ws = 0;

    for (r = 0; r < ROWS * COLS; ++r) x[r] = frand(&seed);
    CHECK(tops_tensor_desc_init(&d.x, TOPS_DTYPE_F32, 2, dims, NULL));
    CHECK(tops_tensor_desc_init(&d.y, TOPS_DTYPE_F32, 2, dims, NULL));
    CHECK(tops_tensor_desc_init(&d.lengths, TOPS_DTYPE_I32, 2, len_dims, NULL));
    d.scale = 0.5f;
    CHECK(tops_softmax_create(ctx, &d, &op));
    CHECK(tops_op_workspace_size(op, &ws));
    (void)ws; /* softmax needs no workspace */
    execute_xy(ctx, op, x, sizeof x, y, sizeof y, lengths, sizeof lengths, TOPS_ARG_LENGTHS);
    printf("softmax   [%d,%d] f32, scale 0.5, key-padding lengths {10,7,3,1,0,10}: kernel %s\n", ROWS, COLS,
           tops_op_kernel_name(op));
    for (r = 0; r < ROWS; ++r) {
        double m = -INFINITY, s = 0.0;
        int n = lengths[r];
        for (c = 0; c < n; ++c) m = fmax(m, 0.5 * x[r * COLS + c]);
        for (c = 0; c < n; ++c) s += exp(0.5 * x[r * COLS + c] - m);
        for (c = 0; c < COLS; ++c) {
            double ref = c < n ? exp(0.5 * x[r * COLS + c] - m) / s : 0.0;
            double e = fabs(ref - y[r * COLS + c]);
            if (!(e <= max_err)) max_err = isnan(e) ? INFINITY : e;
        }
    }
    printf("          row 1 (7 valid):  ");
    for (c = 0; c < COLS; ++c) printf("%.3f ", y[1 * COLS + c]);
    printf("\n          row 4 (0 valid):  ");
    for (c = 0; c < COLS; ++c) printf("%.1f ", y[4 * COLS + c]);
    printf("\n          max |error| vs a double-precision loop: %.2e\n", max_err);
    CHECK(tops_op_destroy(op));
    return max_err < 1e-6 ? 0 : 1;
}

static int run_transpose(tops_context_t ctx) {
    enum { B = 2, S = 5, H = 3, D = 4 };
    static float x[B * S * H * D], y[B * H * S * D];
    int64_t xd[4] = {B, S, H, D};
    int64_t yd[4] = {B, H, S, D};
    tops_transpose_desc_t t = tops_transpose_desc_default();
    tops_op_t op = NULL;
    int b, s, h, k, bad = 0;

    for (k = 0; k < B * S * H * D; ++k) x[k] = (float)k;
    CHECK(tops_tensor_desc_init(&t.x, TOPS_DTYPE_F32, 4, xd, NULL));
    CHECK(tops_tensor_desc_init(&t.y, TOPS_DTYPE_F32, 4, yd, NULL));
    t.perm[0] = 0; t.perm[1] = 2; t.perm[2] = 1; t.perm[3] = 3;
    CHECK(tops_transpose_create(ctx, &t, &op));
    execute_xy(ctx, op, x, sizeof x, y, sizeof y, NULL, 0, TOPS_ARG_MASK);
    for (b = 0; b < B; ++b)
        for (s = 0; s < S; ++s)
            for (h = 0; h < H; ++h)
                for (k = 0; k < D; ++k)
                    bad += y[((b * H + h) * S + s) * D + k] != x[((b * S + s) * H + h) * D + k];
    printf("transpose [%d,%d,%d,%d] -> perm (0,2,1,3) -> [%d,%d,%d,%d] f32: kernel %s, %d mismatches\n", B, S,
           H, D, B, H, S, D, tops_op_kernel_name(op), bad);
    CHECK(tops_op_destroy(op));
    return bad != 0;
}

static void execute_xy(tops_context_t ctx, tops_op_t op, const void *x, size_t xbytes, void *y, size_t ybytes,
                       const void *extra, size_t extra_bytes, tops_arg_kind_t extra_kind) {
    tops_arg_t args[3];
    void *dx = buf_alloc(xbytes), *dy = buf_alloc(ybytes), *de = extra ? buf_alloc(extra_bytes) : NULL;
    if (!dx || !dy || (extra && !de)) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    buf_copy(dx, x, xbytes, 1);
    if (extra) buf_copy(de, extra, extra_bytes, 1);
    args[0].kind = TOPS_ARG_X; args[0].ptr = dx;
    args[1].kind = TOPS_ARG_Y; args[1].ptr = dy;
    args[2].kind = extra_kind; args[2].ptr = de;
    CHECK(tops_op_execute(ctx, op, args, extra ? 3 : 2, NULL, 0));
    buf_copy(y, dy, ybytes, 0); /* a synchronous copy: waits for the op */
    buf_free(dx);
    buf_free(dy);
    if (de) buf_free(de);
}

int main(void) {
    const char *why = NULL;
    tops_context_t ctx = NULL;
    int fails = 0;
    int cuda_ok;
    printf("%s\n", tops_version());
    printf("cpu backend: available, ISA %s\n", tops_cpu_isa());
    cuda_ok = tops_backend_available(TOPS_BACKEND_CUDA, &why);
    printf("cuda backend: %s (%s)\n", cuda_ok ? "available" : "unavailable", why);
#if defined(TOPS_DEMO_WITH_CUDA)
    CHECK(tops_context_create(TOPS_BACKEND_DEFAULT, 0, &ctx));
#else
    CHECK(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx));
#endif
    CHECK(tops_context_get_backend(ctx, &g_backend));
    printf("running on: %s\n", tops_backend_name(g_backend));
    fails += run_softmax(ctx);
    fails += run_transpose(ctx);
    CHECK(tops_context_destroy(ctx));
    printf("%s\n", fails ? "demo FAILED" : "demo OK");
    return fails ? 1 : 0;
}
