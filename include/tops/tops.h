/*
 * tops.h - the public C API of tops ("tensor ops").
 *
 * Pure C99. One API, two backends (CPU in the core library, CUDA as an
 * on-demand plugin). Every function returns a tops_status_t; on failure
 * tops_last_error() says exactly what was wrong. The library never aborts,
 * never prints unless asked (log callback or TOPS_VERBOSE), and never throws.
 *
 * Op life cycle:
 *   tops_<op>_create(ctx, &desc, &op)     validate, choose a kernel (cheap)
 *   tops_op_workspace_size(op, &bytes)    caller provides that much workspace
 *   tops_op_execute(ctx, op, args, n, ws, ws_bytes)
 *   tops_op_destroy(op)
 *
 * Thread safety: a context must not be used by two threads at once. An op is
 * immutable after creation: it may be executed concurrently from several
 * threads, each with its own context of the op's backend and device; it must
 * not be destroyed while an execute on it runs. Creating and destroying
 * distinct contexts and ops, tops_backend_available() and the descriptor
 * helpers may be called from any threads at once. tops_last_error() is per
 * thread. The log callback may be called from any thread, one call at a time;
 * it must not call tops functions.
 */
#ifndef TOPS_TOPS_H
#define TOPS_TOPS_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(TOPS_BUILDING_LIBRARY)
#    define TOPS_API __declspec(dllexport)
#  else
#    define TOPS_API __declspec(dllimport)
#  endif
#else
#  define TOPS_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/** Major version: changes only with an incompatible ABI change (SONAME). */
#define TOPS_VERSION_MAJOR 0
/** Minor version: new functions, ops or appended descriptor fields. */
#define TOPS_VERSION_MINOR 1
/** Patch version: fixes only. */
#define TOPS_VERSION_PATCH 0

/** Library version and build info, e.g. "tops 0.1.0 (backends: cpu, cuda-plugin)". */
TOPS_API const char *tops_version(void);

/** Runtime version as MAJOR*10000 + MINOR*100 + PATCH. */
TOPS_API int tops_version_number(void);

/* ------------------------------------------------------------------------ */
/* Status codes: the high byte is the category                               */
/* ------------------------------------------------------------------------ */

/** Result of every call. Categories: TOPS_STATUS_CATEGORY(s). */
typedef enum tops_status {
    TOPS_SUCCESS = 0,

    /* invalid argument (the caller's mistake) */
    TOPS_ERROR_INVALID_ARGUMENT = 0x100, /**< generic invalid argument */
    TOPS_ERROR_NULL_POINTER = 0x101,     /**< a required pointer is NULL */
    TOPS_ERROR_BAD_STRUCT_SIZE = 0x102,  /**< struct_size smaller than the oldest known */
    TOPS_ERROR_BAD_DTYPE = 0x103,        /**< unknown dtype or mismatched dtypes */
    TOPS_ERROR_BAD_RANK = 0x104,         /**< rank outside [0, TOPS_MAX_RANK] or mismatched */
    TOPS_ERROR_BAD_SHAPE = 0x105,        /**< negative, overflowing or mismatched dims */
    TOPS_ERROR_BAD_STRIDE = 0x106,       /**< negative strides, or an output that overlaps itself */
    TOPS_ERROR_BAD_AXIS = 0x107,         /**< axis or permutation out of range */
    TOPS_ERROR_MISSING_ARGUMENT = 0x108, /**< a required execute argument is absent */
    TOPS_ERROR_UNKNOWN_ARGUMENT = 0x109, /**< an execute argument the op does not take */
    TOPS_ERROR_WORKSPACE_TOO_SMALL = 0x10a, /**< workspace smaller than tops_op_workspace_size */
    TOPS_ERROR_CONTEXT_MISMATCH = 0x10b, /**< op executed with a context of another backend/device */

    /* not supported (valid request this build or device cannot do) */
    TOPS_ERROR_NOT_SUPPORTED = 0x200,
    TOPS_ERROR_BACKEND_UNAVAILABLE = 0x201, /**< see tops_backend_available() */

    /* resources */
    TOPS_ERROR_OUT_OF_MEMORY = 0x300,

    /* device (CUDA runtime/driver) errors; message carries the CUDA text */
    TOPS_ERROR_DEVICE = 0x400,
    TOPS_ERROR_DEVICE_LAUNCH = 0x401,

    /* a bug in tops */
    TOPS_ERROR_INTERNAL = 0x500
} tops_status_t;

/** Category of a status: 0, 0x100, 0x200, 0x300, 0x400 or 0x500. */
#define TOPS_STATUS_CATEGORY(s) ((int)(s) & 0xff00)

/** Static name of a status, e.g. "TOPS_ERROR_BAD_SHAPE". Never NULL. */
TOPS_API const char *tops_status_string(tops_status_t status);

/**
 * Message of the last failed call on this thread ("softmax: x.dims[2] = -1
 * is negative"), or "" if the last call succeeded. Valid until the next
 * tops call on the same thread.
 */
TOPS_API const char *tops_last_error(void);

/* ------------------------------------------------------------------------ */
/* Logging                                                                   */
/* ------------------------------------------------------------------------ */

/** Log levels: 1 = one line per op create/execute, 2 = also kernel choice reasons. */
typedef void (*tops_log_fn)(int level, const char *message, void *user_data);

/**
 * Route log lines to fn (NULL = stderr) at verbosity level (0 = off, 1, 2).
 * Until this is called, the TOPS_VERBOSE environment variable (0, 1 or 2)
 * sets the level and lines go to stderr.
 */
TOPS_API tops_status_t tops_set_log_callback(tops_log_fn fn, void *user_data, int level);

/* ------------------------------------------------------------------------ */
/* Data types and tensor descriptors                                         */
/* ------------------------------------------------------------------------ */

/** Element types. */
typedef enum tops_dtype {
    TOPS_DTYPE_INVALID = 0, /**< marks an absent optional tensor */
    TOPS_DTYPE_F32 = 1,
    TOPS_DTYPE_F16 = 2,
    TOPS_DTYPE_BF16 = 3,
    TOPS_DTYPE_I32 = 4, /**< index tensors (lengths, offsets); reserved for compute */
    TOPS_DTYPE_I8 = 5,  /**< reserved */
    TOPS_DTYPE_U8 = 6   /**< boolean masks: nonzero = keep, 0 = masked out */
} tops_dtype_t;

/** Size in bytes of one element, 0 for an unknown dtype. */
TOPS_API size_t tops_dtype_size(tops_dtype_t dtype);

/** Name of a dtype ("f32", "f16", ...), "invalid" if unknown. */
TOPS_API const char *tops_dtype_name(tops_dtype_t dtype);

/** Largest supported rank. */
#define TOPS_MAX_RANK 8

/**
 * A strided tensor: dims and strides counted in elements (not bytes).
 * Strides must be >= 0; a stride of 0 broadcasts an input along that dim.
 * A descriptor with dtype TOPS_DTYPE_INVALID marks an absent optional tensor.
 * A dim of 0 is valid: ops run and write nothing, except where an output is
 * not empty (reductions over nothing give their identity, GEMM with K = 0
 * gives act(beta * C + bias), attention without keys gives O = 0). Element
 * counts and extents that overflow int64 are refused with TOPS_ERROR_BAD_SHAPE.
 */
typedef struct tops_tensor_desc {
    tops_dtype_t dtype;
    int32_t rank;                    /**< 0..TOPS_MAX_RANK (0 = scalar) */
    int64_t dims[TOPS_MAX_RANK];     /**< dims[0] is the outermost */
    int64_t strides[TOPS_MAX_RANK];  /**< in elements */
} tops_tensor_desc_t;

/**
 * Fill desc. strides may be NULL for a dense row-major layout. Checks rank,
 * dims >= 0 and that the element count fits in int64.
 */
TOPS_API tops_status_t tops_tensor_desc_init(tops_tensor_desc_t *desc, tops_dtype_t dtype,
                                             int32_t rank, const int64_t *dims,
                                             const int64_t *strides);

/* ------------------------------------------------------------------------ */
/* Backends and contexts                                                     */
/* ------------------------------------------------------------------------ */

/** Execution backends. */
typedef enum tops_backend {
    TOPS_BACKEND_DEFAULT = 0, /**< CUDA if available, else CPU */
    TOPS_BACKEND_CPU = 1,
    TOPS_BACKEND_CUDA = 2
} tops_backend_t;

/** Name of a backend ("cpu", "cuda", "default"). */
TOPS_API const char *tops_backend_name(tops_backend_t backend);

/**
 * 1 if the backend can be used in this process, else 0. When reason is not
 * NULL it receives a static explanation ("CUDA plugin libtops_cuda.so not
 * found", "no CUDA device", "compute capability 7.5 < 8.0", or "ok").
 */
TOPS_API int tops_backend_available(tops_backend_t backend, const char **reason);

/** Name of the CPU instruction set the CPU kernels use ("sse4", "avx2", "avx512"). */
TOPS_API const char *tops_cpu_isa(void);

/** Opaque context: backend, device, stream, thread count. */
typedef struct tops_context_s *tops_context_t;

/**
 * Create a context on backend (device = CUDA device ordinal, ignored on CPU).
 * Fails with TOPS_ERROR_BACKEND_UNAVAILABLE and the reason when the backend
 * cannot be used.
 */
TOPS_API tops_status_t tops_context_create(tops_backend_t backend, int device,
                                           tops_context_t *ctx);

/** Destroy a context (NULL is a no-op). Ops created with it stay valid. */
TOPS_API tops_status_t tops_context_destroy(tops_context_t ctx);

/** The backend a context runs on (never TOPS_BACKEND_DEFAULT). */
TOPS_API tops_status_t tops_context_get_backend(tops_context_t ctx, tops_backend_t *backend);

/** CUDA stream (a cudaStream_t) for subsequent executes; NULL = default stream. CPU: ignored. */
TOPS_API tops_status_t tops_context_set_stream(tops_context_t ctx, void *stream);

/** Threads for CPU kernels; 0 = the OpenMP default. CUDA: ignored. */
TOPS_API tops_status_t tops_context_set_num_threads(tops_context_t ctx, int num_threads);

/* ------------------------------------------------------------------------ */
/* Ops                                                                       */
/* ------------------------------------------------------------------------ */

/** Opaque validated op with its chosen kernel. */
typedef struct tops_op_s *tops_op_t;

/** Tags of execute arguments. */
typedef enum tops_arg_kind {
    TOPS_ARG_X = 1,        /**< main input */
    TOPS_ARG_Y = 2,        /**< main output */
    TOPS_ARG_MASK = 3,     /**< optional mask */
    TOPS_ARG_LENGTHS = 4,  /**< optional per-row valid lengths (int32) */
    TOPS_ARG_GAMMA = 5,    /**< norm scale */
    TOPS_ARG_BETA = 6,     /**< norm shift */
    TOPS_ARG_BIAS = 7,     /**< bias added before the op's main work */
    TOPS_ARG_RESIDUAL = 8, /**< residual input of fused norms */
    TOPS_ARG_PRENORM = 9,  /**< output: the fused sum a norm normalized */
    TOPS_ARG_MEAN = 10,    /**< output: per-row mean (f32) */
    TOPS_ARG_RSTD = 11,    /**< output: per-row 1/sqrt(var + eps) (f32) */
    TOPS_ARG_SLOPE = 12,   /**< PReLU slope */
    TOPS_ARG_INPUT0 = 16,  /**< weighted-sum input i is TOPS_ARG_INPUT0 + i (i < 8) */
    TOPS_ARG_A = 24,       /**< GEMM operand A */
    TOPS_ARG_B = 25,       /**< GEMM operand B */
    TOPS_ARG_C = 26,       /**< GEMM addend C */
    TOPS_ARG_D = 27,       /**< GEMM output D */
    TOPS_ARG_Q = 28,       /**< attention queries */
    TOPS_ARG_K = 29,       /**< attention keys */
    TOPS_ARG_V = 30,       /**< attention values */
    TOPS_ARG_O = 31,       /**< attention output */
    TOPS_ARG_LSE = 32,     /**< output: row log-sum-exp (f32) */
    TOPS_ARG_SEQLENS_K = 33,    /**< per-batch valid key lengths (i32 [B]) */
    TOPS_ARG_CU_SEQLENS_Q = 34, /**< varlen: cumulative query offsets (i32 [B+1]) */
    TOPS_ARG_CU_SEQLENS_K = 35, /**< varlen: cumulative key offsets (i32 [B+1]) */
    TOPS_ARG_W = 36,            /**< convolution filter */
    TOPS_ARG_CU_SEQLENS = 40    /**< unpad output / pad input: cumulative sequence offsets (i32 [B+1]) */
} tops_arg_kind_t;

/** One tagged execute argument: a pointer to the tensor's first element. */
typedef struct tops_arg {
    tops_arg_kind_t kind;
    const void *ptr; /**< outputs are written through this pointer */
} tops_arg_t;

/** Workspace the op needs in tops_op_execute, in bytes (0 if none). */
TOPS_API tops_status_t tops_op_workspace_size(tops_op_t op, size_t *bytes);

/** Name of the kernel the op chose (static string owned by the op). */
TOPS_API const char *tops_op_kernel_name(tops_op_t op);

/**
 * Run op on ctx's stream/threads. ctx must have the backend and device the
 * op was created for. Each argument tag may appear at most once; pointers
 * are device pointers on CUDA. No device synchronization, no allocation.
 */
TOPS_API tops_status_t tops_op_execute(tops_context_t ctx, tops_op_t op, const tops_arg_t *args,
                                       size_t num_args, void *workspace, size_t workspace_bytes);

/** Destroy an op (NULL is a no-op). */
TOPS_API tops_status_t tops_op_destroy(tops_op_t op);

/* ------------------------------------------------------------------------ */
/* Softmax                                                                   */
/* ------------------------------------------------------------------------ */

/** Softmax flags. */
#define TOPS_SOFTMAX_LOG 1u /**< log-softmax */

/**
 * y = softmax(scale * x) along axis (or log-softmax with TOPS_SOFTMAX_LOG).
 *
 * x, y: same dtype (f32, f16, bf16) and dims; any strides. y may be x
 *   (in place) when both have the same strides.
 * mask (optional, u8): broadcastable to x (each dim equal or 1, same rank);
 *   0 marks a masked-out position. Execute argument TOPS_ARG_MASK.
 * lengths (optional, i32): same rank as x with dims[axis] == 1 and every
 *   other dim equal or 1: only the first lengths[row] entries of each row
 *   take part (values clamped to [0, dims[axis]]). Argument TOPS_ARG_LENGTHS.
 * Masked-out positions are written as 0 (-inf for log-softmax); a row with
 * no position left is all 0 (all -inf for log-softmax), never NaN.
 * Non-finite inputs: a row where scale * x is NaN or +inf at a position
 * taking part is all NaN (+inf - +inf); -inf entries get probability 0 (-inf
 * for log-softmax); masked-out and past-length entries never reach the row.
 * Denormal inputs are not flushed; a huge scale gives one-hot rows, a tiny
 * one uniform rows. A dim of 0: nothing is written.
 */
typedef struct tops_softmax_desc {
    uint32_t struct_size;       /**< sizeof(tops_softmax_desc_t) */
    tops_tensor_desc_t x;
    tops_tensor_desc_t y;
    int32_t axis;               /**< negative counts from the end */
    float scale;                /**< applied to x before the softmax (1 = none) */
    uint32_t flags;             /**< TOPS_SOFTMAX_* */
    tops_tensor_desc_t mask;    /**< dtype TOPS_DTYPE_INVALID = no mask */
    tops_tensor_desc_t lengths; /**< dtype TOPS_DTYPE_INVALID = no lengths */
} tops_softmax_desc_t;

/** A softmax desc with struct_size set, scale 1, axis -1 and no mask/lengths. */
TOPS_API tops_softmax_desc_t tops_softmax_desc_default(void);

/** Create a softmax op. Arguments: TOPS_ARG_X, TOPS_ARG_Y [, MASK, LENGTHS]. */
TOPS_API tops_status_t tops_softmax_create(tops_context_t ctx, const tops_softmax_desc_t *desc,
                                           tops_op_t *op);

/* ------------------------------------------------------------------------ */
/* Transpose                                                                 */
/* ------------------------------------------------------------------------ */

/**
 * y[i0, .., in-1] = x[j] with j[perm[k]] = i[k]: y.dims[k] == x.dims[perm[k]].
 * x, y: same dtype (any), same rank, any strides (y must not overlap itself
 * and must not overlap x). Elements are copied bit for bit (NaN payloads,
 * infinities, denormals and -0 unchanged). A dim of 0: nothing is written.
 */
typedef struct tops_transpose_desc {
    uint32_t struct_size;  /**< sizeof(tops_transpose_desc_t) */
    tops_tensor_desc_t x;
    tops_tensor_desc_t y;
    int32_t perm[TOPS_MAX_RANK]; /**< a permutation of 0..rank-1 */
} tops_transpose_desc_t;

/** A transpose desc with struct_size set and the identity permutation. */
TOPS_API tops_transpose_desc_t tops_transpose_desc_default(void);

/** Create a transpose op. Arguments: TOPS_ARG_X, TOPS_ARG_Y. */
TOPS_API tops_status_t tops_transpose_create(tops_context_t ctx,
                                             const tops_transpose_desc_t *desc, tops_op_t *op);

/* ------------------------------------------------------------------------ */
/* LayerNorm and RMSNorm                                                     */
/* ------------------------------------------------------------------------ */

/** Which normalization. */
typedef enum tops_norm_kind {
    TOPS_NORM_LAYER = 0, /**< (s - mean) * rstd * gamma + beta */
    TOPS_NORM_RMS = 1    /**< s * rstd * gamma, rstd = 1 / sqrt(mean(s^2) + eps) */
} tops_norm_kind_t;

/**
 * y = norm(s) over the last normalized_rank dims, where s = x [+ bias]
 * [+ residual] (the fused residual form). Statistics in f32.
 *
 * x, y, residual, prenorm: same float dtype and dims. The leading dims must
 *   collapse to one row stride and the normalized dims to one column stride
 *   (any padding between rows is fine).
 * gamma, beta, bias (optional): x's dtype or f32, dims = x's last
 *   normalized_rank dims. beta only for TOPS_NORM_LAYER.
 * prenorm (optional output): s, for the next residual connection.
 * mean, rstd (optional f32 outputs): dims = x's leading dims (rank x.rank -
 *   normalized_rank); mean only for TOPS_NORM_LAYER.
 * y may be x or residual (in place), and prenorm may be x or residual.
 * Non-finite inputs: a NaN in s makes its row of y NaN, as does +-inf under
 * LayerNorm; under RMSNorm +-inf gives rstd = 0: that entry NaN, the rest of
 * the row 0. Other rows are unaffected. A constant row has
 * variance 0 and normalizes to beta (LayerNorm), never NaN, as eps > 0;
 * denormals are not flushed. Empty leading dims: nothing is written.
 * Arguments: X, Y [, GAMMA, BETA, BIAS, RESIDUAL, PRENORM, MEAN, RSTD].
 */
typedef struct tops_norm_desc {
    uint32_t struct_size;        /**< sizeof(tops_norm_desc_t) */
    tops_norm_kind_t kind;
    tops_tensor_desc_t x;
    tops_tensor_desc_t y;
    int32_t normalized_rank;     /**< >= 1 */
    float eps;                   /**< >= 0 */
    tops_tensor_desc_t gamma;    /**< optional */
    tops_tensor_desc_t beta;     /**< optional */
    tops_tensor_desc_t bias;     /**< optional */
    tops_tensor_desc_t residual; /**< optional */
    tops_tensor_desc_t prenorm;  /**< optional output */
    tops_tensor_desc_t mean;     /**< optional output */
    tops_tensor_desc_t rstd;     /**< optional output */
} tops_norm_desc_t;

/** A norm desc with struct_size set, layer norm over 1 dim, eps 1e-5, nothing optional. */
TOPS_API tops_norm_desc_t tops_norm_desc_default(void);

/** Create a LayerNorm / RMSNorm op. */
TOPS_API tops_status_t tops_norm_create(tops_context_t ctx, const tops_norm_desc_t *desc, tops_op_t *op);

/* ------------------------------------------------------------------------ */
/* Reduce                                                                    */
/* ------------------------------------------------------------------------ */

/** Reductions. Over an empty set: sum, sumsq, norm2 = 0; prod = 1; max = -inf; min = +inf; mean = NaN. */
typedef enum tops_reduce_op {
    TOPS_REDUCE_SUM = 0,
    TOPS_REDUCE_MEAN = 1,
    TOPS_REDUCE_MAX = 2,  /**< NaN propagates */
    TOPS_REDUCE_MIN = 3,  /**< NaN propagates */
    TOPS_REDUCE_PROD = 4,
    TOPS_REDUCE_SUMSQ = 5, /**< sum of squares */
    TOPS_REDUCE_NORM2 = 6  /**< sqrt of the sum of squares */
} tops_reduce_op_t;

/**
 * y = reduce(x) over the dims whose bit is set in axes, f32 accumulation.
 * Deterministic: the same input gives bitwise the same output on every run.
 * Non-finite inputs follow IEEE arithmetic (a NaN reaches every reduction
 * it takes part in, +inf + -inf is NaN); denormals are not flushed.
 * x: f32, f16 or bf16, any strides. y: any float dtype; dims = x's dims with
 * the reduced dims set to 1 (keepdims) or removed. Arguments: X, Y.
 */
typedef struct tops_reduce_desc {
    uint32_t struct_size;  /**< sizeof(tops_reduce_desc_t) */
    tops_reduce_op_t op;
    tops_tensor_desc_t x;
    tops_tensor_desc_t y;
    uint32_t axes;         /**< bit i set: reduce x's dim i */
    int32_t keepdims;      /**< nonzero: y keeps reduced dims as size 1 */
} tops_reduce_desc_t;

/** A reduce desc with struct_size set (sum, no axes, keepdims 0). */
TOPS_API tops_reduce_desc_t tops_reduce_desc_default(void);

/** Create a reduce op. */
TOPS_API tops_status_t tops_reduce_create(tops_context_t ctx, const tops_reduce_desc_t *desc, tops_op_t *op);

/* ------------------------------------------------------------------------ */
/* Fused elementwise ops                                                     */
/* ------------------------------------------------------------------------ */

/**
 * Activations. Non-finite inputs: NaN stays NaN except under ReLU (max(x, 0)
 * gives 0); GELU and SiLU of -inf are NaN (-inf * 0), of +inf +inf.
 * The elementwise ops (bias_act, PReLU, weighted sum) otherwise follow IEEE
 * arithmetic (a weighted-sum coefficient of 0 times +-inf is NaN), do not
 * flush denormals, and write nothing for a dim of 0.
 */
typedef enum tops_activation {
    TOPS_ACT_NONE = 0,
    TOPS_ACT_RELU = 1,
    TOPS_ACT_GELU_ERF = 2,  /**< x * 0.5 * (1 + erf(x / sqrt(2))) */
    TOPS_ACT_GELU_TANH = 3, /**< x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) */
    TOPS_ACT_SILU = 4       /**< x * sigmoid(x) */
} tops_activation_t;

/**
 * y = act(x + bias). x, y: same float dtype and dims. bias (optional): x's
 * dtype, same rank, each dim equal to x's or 1 (a row bias is [1, N]).
 * y may be x. Arguments: X, Y [, BIAS].
 */
typedef struct tops_bias_act_desc {
    uint32_t struct_size; /**< sizeof(tops_bias_act_desc_t) */
    tops_tensor_desc_t x;
    tops_tensor_desc_t bias; /**< optional */
    tops_tensor_desc_t y;
    tops_activation_t act;
} tops_bias_act_desc_t;

/** A bias+activation desc with struct_size set (no bias, no activation). */
TOPS_API tops_bias_act_desc_t tops_bias_act_desc_default(void);

/** Create a bias + activation op. */
TOPS_API tops_status_t tops_bias_act_create(tops_context_t ctx, const tops_bias_act_desc_t *desc,
                                            tops_op_t *op);

/**
 * y = x > 0 ? x : slope * x. slope: x's dtype, same rank, each dim equal to
 * x's or 1 (per channel of NCHW: [1, C, 1, 1]). y may be x.
 * Arguments: X, Y, SLOPE.
 */
typedef struct tops_prelu_desc {
    uint32_t struct_size; /**< sizeof(tops_prelu_desc_t) */
    tops_tensor_desc_t x;
    tops_tensor_desc_t slope;
    tops_tensor_desc_t y;
} tops_prelu_desc_t;

/** A PReLU desc with struct_size set. */
TOPS_API tops_prelu_desc_t tops_prelu_desc_default(void);

/** Create a PReLU op. */
TOPS_API tops_status_t tops_prelu_create(tops_context_t ctx, const tops_prelu_desc_t *desc, tops_op_t *op);

/** Most inputs of a weighted sum. */
#define TOPS_MAX_SUM_INPUTS 8

/**
 * y = sum_i coefs[i] * inputs[i] (f32 math). Each input: y's dtype, same
 * rank, each dim equal to y's or 1. y may be any input of y's layout.
 * Arguments: Y and TOPS_ARG_INPUT0 + i for each input.
 */
typedef struct tops_weighted_sum_desc {
    uint32_t struct_size; /**< sizeof(tops_weighted_sum_desc_t) */
    int32_t num_inputs;   /**< 1..TOPS_MAX_SUM_INPUTS */
    tops_tensor_desc_t inputs[TOPS_MAX_SUM_INPUTS];
    float coefs[TOPS_MAX_SUM_INPUTS];
    tops_tensor_desc_t y;
} tops_weighted_sum_desc_t;

/** A weighted-sum desc with struct_size set and all coefficients 1. */
TOPS_API tops_weighted_sum_desc_t tops_weighted_sum_desc_default(void);

/** Create a weighted-sum op. */
TOPS_API tops_status_t tops_weighted_sum_create(tops_context_t ctx, const tops_weighted_sum_desc_t *desc,
                                                tops_op_t *op);

/* ------------------------------------------------------------------------ */
/* GEMM                                                                      */
/* ------------------------------------------------------------------------ */

/** GEMM flags. */
#define TOPS_GEMM_ALLOW_TF32 1u /**< f32 inputs may use TF32 tensor cores (CUDA) */

/**
 * D = act(alpha * op(A) @ op(B) + beta * C + bias), f32 accumulation.
 *
 * A: [M, K] ([K, M] with trans_a), B: [K, N] ([N, K] with trans_b), C, D:
 * [M, N]; or each with a leading batch dim: rank 3, batch equal to D's or
 * 1, and any batch stride (0 shares one matrix across the batch). Row- or
 * column-major is given by the strides of the last two dims (the CUDA
 * backend needs one of them to be 1).
 * Dtypes: A and B f32, f16 or bf16 (the same); D f32, or for f16/bf16 inputs
 * that dtype or f32; C and bias (optional, bias [N]) have D's dtype.
 * C is read only when beta != 0. Arguments: A, B, D [, C, BIAS].
 * Non-finite inputs: IEEE arithmetic; a NaN in row i of op(A) makes row i of
 * D NaN, one in column j of op(B) or in bias[j] column j. M or N = 0:
 * nothing is written; K = 0: D = act(beta * C + bias).
 * CUDA: creating a large tensor-core GEMM (16-bit inputs or TF32, 2*M*N*K at
 * least 2^32 over the batch) times the library's top candidate algorithms
 * once per problem and process, on scratch memory it allocates and frees
 * (an estimated 15-200 ms, once); TOPS_GEMM_AUTOTUNE=0 turns this off, =1
 * extends it to every GEMM.
 */
typedef struct tops_gemm_desc {
    uint32_t struct_size; /**< sizeof(tops_gemm_desc_t) */
    tops_tensor_desc_t a;
    tops_tensor_desc_t b;
    tops_tensor_desc_t c;    /**< optional */
    tops_tensor_desc_t d;
    tops_tensor_desc_t bias; /**< optional */
    int32_t trans_a;         /**< nonzero: op(A) = A^T */
    int32_t trans_b;         /**< nonzero: op(B) = B^T */
    float alpha;
    float beta;
    tops_activation_t act;   /**< applied after bias */
    uint32_t flags;          /**< TOPS_GEMM_* */
} tops_gemm_desc_t;

/** A GEMM desc with struct_size set, alpha 1, beta 0, no transposes/epilogue. */
TOPS_API tops_gemm_desc_t tops_gemm_desc_default(void);

/** Create a GEMM op. */
TOPS_API tops_status_t tops_gemm_create(tops_context_t ctx, const tops_gemm_desc_t *desc, tops_op_t *op);

/* ------------------------------------------------------------------------ */
/* Attention                                                                 */
/* ------------------------------------------------------------------------ */

/** Attention flags. */
#define TOPS_ATTN_CAUSAL 1u /**< causal mask, aligned bottom-right when Sq != Sk */

/**
 * O = softmax(scale * Q K^T + mask) V per (batch, head), as FlashAttention-2.
 *
 * Padded layout: Q, O [B, Sq, H, D]; K, V [B, Sk, Hk, D] (any strides, so
 *   [B, H, S, D] storage works too); H % Hk == 0 (grouped-query attention).
 * Varlen (packed) layout: when cu_seqlens_q is present, Q, O are
 *   [total_q, H, D] and K, V [total_k, Hk, D]; cu_seqlens_q / cu_seqlens_k
 *   (i32 [B+1], both required) give each sequence's offsets, and
 *   max_seqlen_q / max_seqlen_k bound their lengths.
 * seqlens_k (optional, padded layout only): i32 [B] valid key lengths.
 * lse (optional f32 output): [B, H, Sq] padded, [H, total_q] varlen.
 * Causal masking keeps key j for query i when j <= i + Sk - Sq (per
 *   sequence); window_left/right >= 0 additionally keep only keys with
 *   i + Sk - Sq - left <= j <= i + Sk - Sq + right (-1 = unbounded).
 * A query row with no visible key gets O = 0 and LSE = -inf, never NaN.
 * Non-finite inputs: a NaN in Q row i makes row i of O NaN; a NaN in key j
 *   makes the O rows that see key j NaN; a NaN in V (key j, column c) makes
 *   column c of those rows NaN, and may reach column c of rows where key j
 *   is masked (0 * NaN). B = 0 or Sq = 0: nothing is written.
 * Dtypes: Q, K, V, O the same; CUDA f16/bf16, CPU f32/f16/bf16; f32 math.
 * Head dims: any on the CPU; on CUDA see tops_last_error() of a rejected create.
 * Arguments: Q, K, V, O [, LSE, SEQLENS_K, CU_SEQLENS_Q, CU_SEQLENS_K].
 */
typedef struct tops_attention_desc {
    uint32_t struct_size; /**< sizeof(tops_attention_desc_t) */
    tops_tensor_desc_t q;
    tops_tensor_desc_t k;
    tops_tensor_desc_t v;
    tops_tensor_desc_t o;
    tops_tensor_desc_t lse;          /**< optional output */
    tops_tensor_desc_t seqlens_k;    /**< optional */
    tops_tensor_desc_t cu_seqlens_q; /**< optional (varlen) */
    tops_tensor_desc_t cu_seqlens_k; /**< optional (varlen) */
    int32_t max_seqlen_q;            /**< varlen only */
    int32_t max_seqlen_k;            /**< varlen only */
    float scale;                     /**< 0 = 1 / sqrt(head_dim) */
    uint32_t flags;                  /**< TOPS_ATTN_* */
    int32_t window_left;             /**< -1 = unbounded */
    int32_t window_right;            /**< -1 = unbounded */
} tops_attention_desc_t;

/** An attention desc with struct_size set, default scale, no mask, windows -1. */
TOPS_API tops_attention_desc_t tops_attention_desc_default(void);

/** Create an attention op. */
TOPS_API tops_status_t tops_attention_create(tops_context_t ctx, const tops_attention_desc_t *desc,
                                             tops_op_t *op);

/* ------------------------------------------------------------------------ */
/* 2-D convolution                                                           */
/* ------------------------------------------------------------------------ */

/** Dims order of x, y and residual. Strides stay free (any layout in memory). */
typedef enum tops_conv_layout {
    TOPS_CONV_NCHW = 0, /**< [N, C, H, W] */
    TOPS_CONV_NHWC = 1  /**< [N, H, W, C] (channels last) */
} tops_conv_layout_t;

/** Dims order of the filter w. Strides stay free. */
typedef enum tops_conv_filter_layout {
    TOPS_CONV_FILTER_KCRS = 0, /**< [K, C / groups, R, S] */
    TOPS_CONV_FILTER_KRSC = 1  /**< [K, R, S, C / groups] */
} tops_conv_filter_layout_t;

/** Convolution flags. */
#define TOPS_CONV_ALLOW_TF32 1u /**< f32 inputs may use TF32 tensor cores (CUDA) */

/**
 * y = act(conv(x, w) + bias [+ residual]), cross-correlation as in cuDNN and
 * PyTorch, f32 accumulation:
 *   y[n, k, p, q] = sum_{c, r, s} x[n, g*C/G + c, p*stride_h - pad_top + r*dilation_h,
 *                                      q*stride_w - pad_left + s*dilation_w] * w[k, c, r, s]
 * with g = k / (K / G) the group of output channel k (G = groups) and taps
 * outside x reading 0. Output size:
 *   P = (H + pad_top + pad_bottom - dilation_h * (R - 1) - 1) / stride_h + 1
 *   Q = (W + pad_left + pad_right - dilation_w * (S - 1) - 1) / stride_w + 1
 * (tops_conv2d_output_dims computes it; both must be >= 1).
 *
 * x: [N, C, H, W] or [N, H, W, C] per layout; y and residual (optional):
 *   [N, K, P, Q] or [N, P, Q, K] in the same order. w: [K, C/G, R, S] or
 *   [K, R, S, C/G] per filter_layout. bias (optional): [K]. All tensors have
 *   one dtype (f32, f16, bf16) and any strides; dense channels-last (NHWC +
 *   KRSC) is the fast path on both backends. groups divides C and K
 *   (groups = C is a depthwise convolution). strides and dilations >= 1,
 *   paddings >= 0 (asymmetric allowed; padding may exceed the kernel).
 * y may be residual (same layout): each residual element is read right
 *   before the same y element is written. y must not overlap x, w or bias.
 * Arguments: X, W, Y [, BIAS, RESIDUAL]. Workspace: tops_op_workspace_size.
 * Non-finite inputs: IEEE arithmetic; a NaN in x reaches the outputs whose
 * window covers it (in every output channel of its group); padding taps
 * read 0, never NaN. N = 0: nothing is written. A request whose padded
 * staging exceeds int64 bytes fails with TOPS_ERROR_OUT_OF_MEMORY.
 * f32 on CUDA runs on tensor cores as 3xTF32: each operand is split into two
 *   TF32 parts, three of the four partial products are summed (the dropped
 *   one is below 2^-22 relative) and every 8-term step is rounded into an
 *   f32 accumulator, which keeps the error at f32 level (1-4e-7 relative to
 *   fp64 on ResNet layers); infinities and values near the f32 maximum give
 *   the IEEE f32 results. With TOPS_CONV_ALLOW_TF32 (PyTorch's default for
 *   convolutions) CUDA f32 rounds both operands to TF32 instead and takes
 *   one product per term (3e-4 relative error and 1.3-1.7x the speed of
 *   3xTF32 on ResNet 3x3 layers); the CPU backend stays exact.
 */
typedef struct tops_conv2d_desc {
    uint32_t struct_size;                    /**< sizeof(tops_conv2d_desc_t) */
    tops_conv_layout_t layout;               /**< dims order of x, y, residual */
    tops_conv_filter_layout_t filter_layout; /**< dims order of w */
    tops_tensor_desc_t x;
    tops_tensor_desc_t w;
    tops_tensor_desc_t bias;     /**< optional */
    tops_tensor_desc_t residual; /**< optional */
    tops_tensor_desc_t y;
    int32_t stride_h;      /**< >= 1 */
    int32_t stride_w;      /**< >= 1 */
    int32_t pad_top;       /**< >= 0 */
    int32_t pad_bottom;    /**< >= 0 */
    int32_t pad_left;      /**< >= 0 */
    int32_t pad_right;     /**< >= 0 */
    int32_t dilation_h;    /**< >= 1 */
    int32_t dilation_w;    /**< >= 1 */
    int32_t groups;        /**< >= 1 */
    tops_activation_t act; /**< after bias and residual */
    uint32_t flags;        /**< TOPS_CONV_* */
} tops_conv2d_desc_t;

/** A conv2d desc with struct_size set, NCHW / KCRS, strides, dilations and groups 1, no padding. */
TOPS_API tops_conv2d_desc_t tops_conv2d_desc_default(void);

/**
 * y's dims for desc's x, w, layouts, strides, paddings, dilations and groups
 * (desc->y, bias and residual are not read): dims[0..3] in desc->layout order.
 * Fails with the same status and message as tops_conv2d_create would.
 */
TOPS_API tops_status_t tops_conv2d_output_dims(const tops_conv2d_desc_t *desc, int64_t dims[4]);

/** Create a 2-D convolution op. */
TOPS_API tops_status_t tops_conv2d_create(tops_context_t ctx, const tops_conv2d_desc_t *desc, tops_op_t *op);

/* ------------------------------------------------------------------------ */
/* Padding removal (unpad / pad)                                             */
/* ------------------------------------------------------------------------ */

/**
 * Moves the valid tokens of a padded batch into a packed tensor and back, so
 * the ops between (GEMMs, norms, varlen attention) skip the padding.
 *
 * padded: [B, S, F...]; packed: [total, F...] with the same feature dims F...
 *   and dtype (any dtype: rows are copied bit for bit). The feature dims of
 *   each must collapse to one dim of a single stride; any other strides.
 * lengths (unpad): i32 [B], the valid tokens of each sequence; each is
 *   clamped to [0, S].
 * cu_seqlens: i32 [B+1], cu_seqlens[b] = sum of the (clamped) lengths before
 *   sequence b, also clamped to total (tokens past the packed capacity are
 *   dropped, never written out of bounds); cu_seqlens[0] = 0. The varlen
 *   attention takes it as cu_seqlens_q / cu_seqlens_k.
 *
 * unpad: packed[cu_seqlens[b] + s] = padded[b, s] for s < lengths[b], and
 *   cu_seqlens is written (computed on the device; no host synchronization).
 *   Packed rows from cu_seqlens[B] on are not written.
 *   Arguments: X (padded), Y (packed), LENGTHS, CU_SEQLENS (output).
 * pad: padded[b, s] = packed[cu_seqlens[b] + s] for s < n_b and 0 (all bits
 *   zero) for s >= n_b, where n_b = cu_seqlens[b + 1] - cu_seqlens[b]
 *   clamped to [0, S] (rows past total read as 0). lengths must be absent.
 *   Arguments: X (packed), Y (padded), CU_SEQLENS.
 * Outputs must not overlap the inputs. Non-finite values are copied as
 * any other bits. B = 0: no token row is written.
 */
typedef struct tops_pad_desc {
    uint32_t struct_size;          /**< sizeof(tops_pad_desc_t) */
    tops_tensor_desc_t padded;     /**< [B, S, F...] */
    tops_tensor_desc_t packed;     /**< [total, F...] */
    tops_tensor_desc_t lengths;    /**< i32 [B]; unpad only */
    tops_tensor_desc_t cu_seqlens; /**< i32 [B+1] */
} tops_pad_desc_t;

/** A pad desc with struct_size set and every tensor absent. */
TOPS_API tops_pad_desc_t tops_pad_desc_default(void);

/** Create an unpad op (padded -> packed, writes cu_seqlens). */
TOPS_API tops_status_t tops_unpad_create(tops_context_t ctx, const tops_pad_desc_t *desc, tops_op_t *op);

/** Create a pad op (packed -> padded, padding rows set to 0). */
TOPS_API tops_status_t tops_pad_create(tops_context_t ctx, const tops_pad_desc_t *desc, tops_op_t *op);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TOPS_TOPS_H */
