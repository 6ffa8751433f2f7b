// conv_ab_libs: two builds of libtops timed in one process on one f32 conv2d
// (CPU backend), their calls interleaved one by one (the order swapped every
// pair) over buffer sets rotated through 2x the LLC (sysconf; 256 MiB when
// it does not say), so both see the
// same machine state. On a machine whose speed drifts within seconds (a
// shared VM), two tops-bench runs one after the other cannot resolve a 5%
// change; the per-pair ratio can. Prints each library's median, quartiles
// and the median of the per-pair time ratios (lib 1 / lib 0), after checking
// every call's status and that both libraries give the same y on one input
// (outputs poisoned with NaN first; max relative difference printed).
//
// Build: cc -O2 -Iinclude bench/conv_ab_libs.c -o conv_ab_libs -ldl -lm
// Usage: conv_ab_libs libA.so libB.so nhwc|nchw N C H W K R S stride pad threads iters [ENV=VALUE]
//   (ENV=VALUE is set before libB is loaded and its op created, e.g. to A/B an env switch of one build)
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <unistd.h>
#include "tops/tops.h"
typedef tops_status_t (*ctx_create_f)(tops_backend_t, int, tops_context_t *);
typedef tops_status_t (*thr_f)(tops_context_t, int);
typedef tops_status_t (*td_f)(tops_tensor_desc_t *, tops_dtype_t, int32_t, const int64_t *, const int64_t *);
typedef tops_conv2d_desc_t (*cd_f)(void);
typedef tops_status_t (*cc_f)(tops_context_t, const tops_conv2d_desc_t *, tops_op_t *);
typedef tops_status_t (*ws_f)(tops_op_t, size_t *);
typedef tops_status_t (*ex_f)(tops_context_t, tops_op_t, const tops_arg_t *, size_t, void *, size_t);
typedef const char *(*kn_f)(tops_op_t);
struct lib { tops_context_t ctx; tops_op_t op; ex_f ex; void *ws; size_t wsb; };
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  if (argc < 15) {
    fprintf(stderr, "usage: %s libA.so libB.so nhwc|nchw N C H W K R S stride pad threads iters [ENV=VALUE]\n",
            argv[0]);
    return 2;
  }
  int nhwc = !strcmp(argv[3], "nhwc");
  long N = atol(argv[4]), C = atol(argv[5]), H = atol(argv[6]), W = atol(argv[7]), K = atol(argv[8]);
  long R = atol(argv[9]), S = atol(argv[10]), st = atol(argv[11]), pd = atol(argv[12]);
  int thr = atoi(argv[13]), iters = atoi(argv[14]);
  long P = (H + 2 * pd - R) / st + 1, Q = (W + 2 * pd - S) / st + 1;
  long xs = N * C * H * W, ws = K * C * R * S, ys = N * K * P * Q;
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = 256L * 1024 * 1024;
  int sets = (int)(2.0 * llc / ((xs + ys) * 4)) + 1;
  float **X = malloc(sets * sizeof(float *)), **Y = malloc(sets * sizeof(float *));
  float *Wt = malloc(ws * 4);
  srand(1);
  for (long i = 0; i < ws; ++i) Wt[i] = rand() / (float)RAND_MAX - 0.5f;
  for (int s = 0; s < sets; ++s) {
    X[s] = malloc(xs * 4); Y[s] = malloc(ys * 4);
    for (long i = 0; i < xs; ++i) X[s][i] = rand() / (float)RAND_MAX - 0.5f;
    memset(Y[s], 0, ys * 4);
  }
  struct lib L[2];
  for (int l = 0; l < 2; ++l) {
    if (l == 1 && argc > 15) putenv(argv[15]);
    void *h = dlopen(argv[1 + l], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    ((ctx_create_f)dlsym(h, "tops_context_create"))(TOPS_BACKEND_CPU, 0, &L[l].ctx);
    ((thr_f)dlsym(h, "tops_context_set_num_threads"))(L[l].ctx, thr);
    td_f td = (td_f)dlsym(h, "tops_tensor_desc_init");
    tops_conv2d_desc_t d = ((cd_f)dlsym(h, "tops_conv2d_desc_default"))();
    d.layout = nhwc ? TOPS_CONV_NHWC : TOPS_CONV_NCHW;
    d.filter_layout = nhwc ? TOPS_CONV_FILTER_KRSC : TOPS_CONV_FILTER_KCRS;
    int64_t xd[4] = {N, nhwc ? H : C, nhwc ? W : H, nhwc ? C : W};
    int64_t wd[4] = {K, nhwc ? R : C, nhwc ? S : R, nhwc ? C : S};
    int64_t yd[4] = {N, nhwc ? P : K, nhwc ? Q : P, nhwc ? K : Q};
    td(&d.x, TOPS_DTYPE_F32, 4, xd, NULL); td(&d.w, TOPS_DTYPE_F32, 4, wd, NULL); td(&d.y, TOPS_DTYPE_F32, 4, yd, NULL);
    d.stride_h = d.stride_w = st; d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pd;
    if (((cc_f)dlsym(h, "tops_conv2d_create"))(L[l].ctx, &d, &L[l].op)) {
      fprintf(stderr, "lib %d: tops_conv2d_create failed\n", l);
      return 1;
    }
    ((ws_f)dlsym(h, "tops_op_workspace_size"))(L[l].op, &L[l].wsb);
    L[l].ws = L[l].wsb ? malloc(L[l].wsb) : NULL;
    L[l].ex = (ex_f)dlsym(h, "tops_op_execute");
    printf("lib %d: %s ws %zu\n", l, ((kn_f)dlsym(h, "tops_op_kernel_name"))(L[l].op), L[l].wsb);
  }
  double *t[2] = {malloc(iters * sizeof(double)), malloc(iters * sizeof(double))};
  int s = 0;
  for (int i = -5; i < iters; ++i) {
    for (int l0 = 0; l0 < 2; ++l0) {
      int l = (i & 1) ? 1 - l0 : l0;
      tops_arg_t a[3] = {{TOPS_ARG_X, X[s]}, {TOPS_ARG_W, Wt}, {TOPS_ARG_Y, Y[s]}};
      s = (s + 1) % sets;
      double t0 = now();
      const tops_status_t rc = L[l].ex(L[l].ctx, L[l].op, a, 3, L[l].ws, L[l].wsb);
      double t1 = now();
      if (rc) {
        fprintf(stderr, "lib %d: tops_op_execute failed (%d)\n", l, (int)rc);
        return 1;
      }
      if (i >= 0) t[l][i] = (t1 - t0) * 1e3;
    }
  }
  // Both libraries on the input of set 0, outputs poisoned first.
  float *yc[2] = {malloc(ys * 4), malloc(ys * 4)};
  for (int l = 0; l < 2; ++l) {
    for (long i = 0; i < ys; ++i) yc[l][i] = NAN;
    tops_arg_t a[3] = {{TOPS_ARG_X, X[0]}, {TOPS_ARG_W, Wt}, {TOPS_ARG_Y, yc[l]}};
    if (L[l].ex(L[l].ctx, L[l].op, a, 3, L[l].ws, L[l].wsb)) return 1;
  }
  double maxrel = 0;
  for (long i = 0; i < ys; ++i) {
    const double d = fabs((double)yc[0][i] - yc[1][i]) / (fabs((double)yc[0][i]) + 1e-6);
    if (!(d <= maxrel)) maxrel = d;  // NaN-propagating
  }
  printf("y, lib 1 against lib 0: max relative difference %.3g\n", maxrel);
  double r[iters];
  for (int i = 0; i < iters; ++i) r[i] = t[1][i] / t[0][i];
  qsort(r, iters, sizeof(double), cmp);
  for (int l = 0; l < 2; ++l) {
    qsort(t[l], iters, sizeof(double), cmp);
    printf("lib %d: median %.3f ms  p25 %.3f  p75 %.3f\n", l, t[l][iters / 2], t[l][iters / 4], t[l][3 * iters / 4]);
  }
  printf("per-pair B/A: median %.3f  p25 %.3f  p75 %.3f\n", r[iters / 2], r[iters / 4], r[3 * iters / 4]);
  return 0;
}
