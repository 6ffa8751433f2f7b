// Standalone probe behind the CPU row reduction's streamed form
// (src/cpu/kernels/reduce_rows.cpp): sums 4096 rows of 4096 f32 (64 MiB, ten
// buffers rotated, so every call reads from memory) with several loop shapes,
// calls interleaved, median of 200 per shape. AVX-512 only.
//   cc -O2 -mavx512f bench/reduce_rows_probe.c -o /tmp/reduce_rows_probe && /tmp/reduce_rows_probe
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kRows = 4096, kCols = 4096, kSets = 10, kCalls = 200, kPage = 4096, kAhead = 2 * kPage };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// ACC accumulators, one vector each per step; PAGE: prefetch the line kAhead
// bytes ahead at the first vector of each page.
#define SUM_ROWS(NAME, ACC, PAGE)                                                               \
    __attribute__((noinline)) static void NAME(const float* x, float* y) {                     \
        for (int r = 0; r < kRows; ++r) {                                                      \
            const float* p = x + (size_t)r * kCols;                                            \
            __m512 a[ACC];                                                                     \
            for (int u = 0; u < ACC; ++u) a[u] = _mm512_setzero_ps();                          \
            for (int j = 0; j < kCols; j += 16 * ACC) {                                        \
                if (PAGE && ((uintptr_t)(p + j) % kPage) < 64 * ACC)                           \
                    _mm_prefetch((const char*)(p + j) + kAhead, _MM_HINT_T0);                  \
                for (int u = 0; u < ACC; ++u) a[u] = _mm512_add_ps(a[u], _mm512_loadu_ps(p + j + 16 * u)); \
            }                                                                                  \
            for (int u = 1; u < ACC; ++u) a[0] = _mm512_add_ps(a[0], a[u]);                    \
            y[r] = _mm512_reduce_add_ps(a[0]);                                                 \
        }                                                                                      \
    }
SUM_ROWS(acc4, 4, 0)
SUM_ROWS(acc2, 2, 0)
SUM_ROWS(acc1, 1, 0)
SUM_ROWS(acc4_page, 4, 1)
SUM_ROWS(acc2_page, 2, 1)
SUM_ROWS(acc1_page, 1, 1)

typedef void (*Fn)(const float*, float*);

static int by_value(const void* a, const void* b) {
    const double d = *(const double*)a - *(const double*)b;
    return (d > 0) - (d < 0);
}

int main(void) {
    const Fn fns[] = {acc4, acc2, acc1, acc4_page, acc2_page, acc1_page};
    const char* names[] = {"4 accumulators", "2 accumulators", "1 accumulator", "4 + page prefetch",
                           "2 + page prefetch", "1 + page prefetch"};
    enum { kShapes = sizeof(fns) / sizeof(fns[0]) };
    float* x[kSets];
    float* y = aligned_alloc(64, kRows * sizeof(float));
    for (int s = 0; s < kSets; ++s) {
        x[s] = aligned_alloc(64, (size_t)kRows * kCols * sizeof(float));
        for (size_t i = 0; i < (size_t)kRows * kCols; ++i) x[s][i] = (float)(i % 7);
    }
    static double t[kShapes][kCalls];
    for (int c = 0; c < kCalls; ++c) {
        for (int v = 0; v < kShapes; ++v) {
            const double t0 = now();
            fns[v](x[(c + 2 * v) % kSets], y);
            t[v][c] = now() - t0;
        }
    }
    for (int v = 0; v < kShapes; ++v) {
        qsort(t[v], kCalls, sizeof(double), by_value);
        const double med = t[v][kCalls / 2];
        printf("%-20s %.3f ms  %.1f GB/s\n", names[v], med * 1e3, (double)kRows * kCols * sizeof(float) / med / 1e9);
    }
    return 0;
}
