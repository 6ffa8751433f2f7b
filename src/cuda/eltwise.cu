// Fused elementwise ops on CUDA (bias + activation, PReLU, weighted sum of
// up to 8 inputs) for f32, f16 and bf16 storage with f32 math.
//
// The plan drops size-1 dims of y and merges neighbouring dims that every
// tensor continues, then classifies each input against a dense y:
//   dense    the input has y's layout: element i is at i;
//   const    one element broadcast everywhere;
//   row_vec  a row-broadcast vector (bias [1, N]): element i is at i % N,
//            and 16-byte loads work because N is a multiple of the vector;
//   run      one varying dim whose inner extent is a multiple of the vector
//            (per-channel slope [1, C, 1, 1] over NCHW, a column bias
//            [M, 1]): a whole vector of y sees one input element;
//   gather   one varying dim otherwise: per-element index math.
// A dense y with classified inputs takes the vector kernel (VEC = 1 when an
// input is gathered, a pointer is misaligned, or x of bias + activation or
// PReLU is not dense), grid-stride over a
// one-wave persistent grid sized from the SM count. Bias + activation and
// PReLU take 4 16-byte vectors of y per thread and step, issue every load
// of the step first and keep them packed until the math (bytes in flight
// without the registers of their f32 copies); where the bias / slope is the
// same vector at every step of a thread (hoisted) or absent (an activation
// alone), the next step's loads are issued before this step's math (on an
// H200, f16 bias + GELU 16384x4096 from 72% to 86% of copy); weighted sums
// of 2-4 inputs whose inputs all load by vectors take one vector per input
// and step with the next step's loads in flight (3 f16 inputs 16384x4096:
// 78% -> 98% of copy on the H200), other weighted sums fold one input at a
// time over 16 elements per step.
// f16 / bf16 convert in pairs, and the activation's accuracy tier follows the
// storage type (activation.cuh: GELU erf is ~17 instructions for 16-bit
// storage, so the f16 passes stay memory-bound: on the H100 that took f16
// bias + GELU 16384x4096 from 72% to 89% of copy, docs/performance.md).
// Anything else (a strided y, inputs varying along several dims) takes the general kernel,
// which decomposes each element index over the merged dims. Every element
// is read and written by the same thread, so y may alias an input exactly.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>

#include "common/env.hpp"
#include "common/int_math.hpp"
#include "cuda/common/activation.cuh"
#include "cuda/common/device.cuh"
#include "cuda/norm_reduce_eltwise.hpp"
#include "cuda/vec_convert.cuh"

namespace tops::cuda {
namespace {

constexpr int kThreads = 256;
// At least this many blocks per SM (caps registers at 64 per thread, so
// enough loads are in flight to cover memory latency).
constexpr int kMinBlocksPerSm = 4;
// Vectors of each input a thread has in flight per step: bias + activation
// and PReLU (two inputs) load 4 16-byte vectors of each (16 f32 or 32 f16 /
// bf16 elements) and keep them packed until their step's math; weighted sums
// (up to 8 inputs, folded one input at a time) take 16 elements per step.
// The VEC = 1 kernel takes 16 elements per step either way.
constexpr int kVecsPerStep = 4;
constexpr int kWsumElemsPerStep = 16;
constexpr int kScalarsPerStep = 16;
constexpr size_t kVecBytes = 16;

enum class Mode : int { dense, konst, row_vec, run, gather };

struct EltInput {
    const void* ptr = nullptr;
    Mode mode = Mode::dense;
    FastDivmod inner;  // row_vec / run / gather: elements of y per step of the varying dim
    FastDivmod size;   // size of the varying dim
    int64_t stride = 0;
};

// The one parameter struct of every elementwise kernel (passed by value).
struct EltwiseKernelParams {
    void* y = nullptr;
    int64_t n = 0;
    int num_inputs = 0;
    // The grid's stride (in vectors) is a multiple of every non-dense input's
    // period, so a thread's vectors of such an input are all the same: the
    // packed path loads them once, before its loop (no index math per step).
    bool hoist_periodic = false;
    float coefs[kMaxEltwiseInputs] = {};
    EltInput in[kMaxEltwiseInputs];
    // General kernel: merged dims (outermost first) and strides of y and the inputs.
    int ndim = 0;
    FastDivmod dims[kMaxRank];
    int64_t ys[kMaxRank] = {};
    int64_t is[kMaxEltwiseInputs][kMaxRank] = {};
};

// ---------------------------------------------------------------- math
// Folds input k into the running value.
template <EltwiseKind K>
__device__ __forceinline__ float fold(int k, float acc, float in, float coef) {
    if constexpr (K == EltwiseKind::weighted_sum) return k == 0 ? coef * in : fmaf(coef, in, acc);
    if constexpr (K == EltwiseKind::prelu) return k == 0 ? in : (acc > 0.0f ? acc : in * acc);
    return k == 0 ? in : acc + in;  // bias_act: x + bias
}

// The activation's accuracy tier follows the storage type T (activation.cuh).
template <class T, EltwiseKind K, Activation A>
__device__ __forceinline__ float finish(float v) {
    if constexpr (K == EltwiseKind::bias_act) return activate<A, T>(v);
    return v;
}

// Element offset of y-element i in a one-varying-dim input.
__device__ __forceinline__ int64_t periodic_offset(const EltInput& in, int64_t i) {
    uint64_t q, r, q2, r2;
    in.inner.divmod(uint64_t(i), &q, &r);
    in.size.divmod(q, &q2, &r2);
    return int64_t(r2) * in.stride;
}

template <class T>
__device__ __forceinline__ float load_one(const EltInput& in, int64_t i) {
    const T* p = static_cast<const T*>(in.ptr);
    switch (in.mode) {
        case Mode::dense: return ElemTraits<T>::to_float(p[i]);
        case Mode::konst: return ElemTraits<T>::to_float(p[0]);
        default: return ElemTraits<T>::to_float(p[periodic_offset(in, i)]);
    }
}

// VEC elements of an input for y elements [i, i + VEC), i a multiple of VEC.
// VEC > 1 only for dense, row_vec, konst and run inputs (checked at plan time).
template <class T, int VEC>
__device__ __forceinline__ void load_vec(const EltInput& in, int64_t i, float (&v)[VEC]) {
    if constexpr (VEC == 1) {
        v[0] = load_one<T>(in, i);
    } else if (in.mode == Mode::dense || in.mode == Mode::row_vec) {
        int64_t off = i;
        if (in.mode == Mode::row_vec) {
            uint64_t q, r;
            in.size.divmod(uint64_t(i), &q, &r);
            off = int64_t(r);
        }
        load_vec_f32<T, VEC>(static_cast<const T*>(in.ptr) + off, v);
    } else {
        const float s = load_one<T>(in, i);
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[j] = s;
    }
}

// The same, as the 16 packed bytes (converted at the step's math, which
// halves the registers a 16-bit vector in flight takes; kept as uint4, as
// arrays of bf16 vectors went through local memory).
template <class T, int VEC>
__device__ __forceinline__ uint4 load_packed(const EltInput& in, int64_t i) {
    static_assert(VEC * sizeof(T) == sizeof(uint4), "packed loads are whole 16-byte vectors");
    const T* p = static_cast<const T*>(in.ptr);
    if (in.mode == Mode::dense || in.mode == Mode::row_vec) {
        int64_t off = i;
        if (in.mode == Mode::row_vec) {
            uint64_t q, rem;
            in.size.divmod(uint64_t(i), &q, &rem);
            off = int64_t(rem);
        }
        return *reinterpret_cast<const uint4*>(p + off);
    }
    Vec<T, VEC> r;
    const T s = in.mode == Mode::konst ? p[0] : p[periodic_offset(in, i)];
#pragma unroll
    for (int j = 0; j < VEC; ++j) r.v[j] = s;
    uint4 b;
    memcpy(&b, &r, sizeof(b));
    return b;
}

template <class T, int VEC>
__device__ __forceinline__ void packed_to_f32(const uint4& b, float (&v)[VEC]) {
    Vec<T, VEC> t;
    memcpy(&t, &b, sizeof(b));
    vec_to_f32<T, VEC>(t, v);
}

// Inputs a kind can have: two for bias + activation and PReLU.
template <EltwiseKind K>
constexpr int kInputsOf = K == EltwiseKind::weighted_sum ? kMaxEltwiseInputs : 2;

// The packed step of the two-input kinds: every load of kUnroll vectors per
// input first ((inputs, kUnroll) vectors, 16 bytes each), converted at the
// math. Input 0 (x) is dense (the plan gives these kernels no other), so its
// loads are plain 16-byte loads with no run-time choice of mode around each
// one (H200, hoisted bias + ReLU f32 8192x8192 149.0 -> 135.5 us, a copy of the
// same bytes 129.6; f32 4096x3072 32.5 -> 28.8, copy 28.4). HOIST1: input 1
// is absent (an activation alone) or the same vector at every step (fixed1),
// so it takes no registers per vector.
template <class T, int VEC, int kUnroll, bool HOIST1>
struct PackedStep {
    uint4 raw[HOIST1 ? 1 : 2][kUnroll];

    __device__ __forceinline__ void load(const EltwiseKernelParams& p, int64_t v0, int64_t gstride, int64_t nvec,
                                         bool hoisted1, const uint4& fixed1) {
#pragma unroll
        for (int k = 0; k < (HOIST1 ? 1 : 2); ++k) {
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const int64_t v = v0 + int64_t(u) * gstride;
                raw[k][u] = uint4{};
                if (v < nvec) {
                    if (k == 0) {
                        raw[0][u] = static_cast<const uint4*>(p.in[0].ptr)[v];
                    } else if (p.num_inputs > 1) {
                        raw[k][u] = hoisted1 ? fixed1 : load_packed<T, VEC>(p.in[1], v * VEC);
                    }
                }
            }
        }
    }

    template <EltwiseKind K, Activation A>
    __device__ __forceinline__ void finish_and_store(const EltwiseKernelParams& p, T* y, int64_t v0, int64_t gstride,
                                                     int64_t nvec, const uint4& fixed1) const {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int64_t v = v0 + int64_t(u) * gstride;
            if (v < nvec) {
                float acc[VEC], in[VEC];
                packed_to_f32<T, VEC>(raw[0][u], acc);
                packed_to_f32<T, VEC>(HOIST1 ? fixed1 : raw[HOIST1 ? 0 : 1][u], in);
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    if (p.num_inputs > 1) acc[j] = fold<K>(1, acc[j], in[j], 0.0f);
                    acc[j] = finish<T, K, A>(acc[j]);
                }
                store_vec_f32<T, VEC>(y + v * VEC, acc);
            }
        }
    }
};

// ---------------------------------------------------------------- dense y
// y contiguous (n elements); inputs by class. Full vectors first, then the
// n % VEC tail element by element. HOIST1 (packed kinds whose input 1 is
// absent or hoisted: a row bias or channel slope loaded once, before the
// loop) frees that input's registers per vector, and they go to a second
// step in flight: the next step's loads are issued before this step's math
// (the registers of both fit the 64 of kMinBlocksPerSm; two steps of both
// inputs would spill).
template <class T, EltwiseKind K, Activation A, int VEC, bool HOIST1 = false>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    eltwise_dense_kernel(const __grid_constant__ EltwiseKernelParams p) {
    static_assert(VEC * sizeof(T) <= kVecBytes, "vectors are at most 16 bytes");
    // Two-input kinds with vectors keep a step's loads packed until its math.
    constexpr bool kPacked = K != EltwiseKind::weighted_sum && VEC > 1;
    constexpr int kUnroll = VEC == 1 ? kScalarsPerStep : kPacked ? kVecsPerStep : kWsumElemsPerStep / VEC;
    static_assert(!HOIST1 || kPacked, "only the packed kinds hoist input 1 at compile time");
    static_assert(kUnroll >= 1, "a step is whole vectors");
    T* y = static_cast<T*>(p.y);
    const int64_t nvec = p.n / VEC;
    const int64_t gstride = int64_t(gridDim.x) * blockDim.x;
    const int64_t gtid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    // Packed kinds: input 1's vector is fixed1 at every step (hoisted1), or loaded per step.
    bool hoisted1 = false;
    uint4 fixed1 = {};
    if constexpr (kPacked) {
        hoisted1 = p.hoist_periodic && p.num_inputs > 1 && p.in[1].mode != Mode::dense && gtid < nvec;
        if (hoisted1) fixed1 = load_packed<T, VEC>(p.in[1], gtid * VEC);
    }
    if constexpr (HOIST1) {
        const int64_t step = int64_t(kUnroll) * gstride;
        PackedStep<T, VEC, kUnroll, HOIST1> cur, nxt{};  // nxt zeroed: copied after the last step too
        if (gtid < nvec) cur.load(p, gtid, gstride, nvec, hoisted1, fixed1);
        for (int64_t v0 = gtid; v0 < nvec; v0 += step) {
            if (v0 + step < nvec) nxt.load(p, v0 + step, gstride, nvec, hoisted1, fixed1);
            cur.template finish_and_store<K, A>(p, y, v0, gstride, nvec, fixed1);
            cur = nxt;
        }
    }
    for (int64_t v0 = gtid; !HOIST1 && v0 < nvec; v0 += int64_t(kUnroll) * gstride) {
        if constexpr (kPacked) {
            PackedStep<T, VEC, kUnroll, HOIST1> st;
            st.load(p, v0, gstride, nvec, hoisted1, fixed1);
            st.template finish_and_store<K, A>(p, y, v0, gstride, nvec, fixed1);
        } else {
            float acc[kUnroll][VEC] = {};  // (kUnroll, VEC)
#pragma unroll
            for (int k = 0; k < kInputsOf<K>; ++k) {
                if (k < p.num_inputs) {
                    float in[kUnroll][VEC];
#pragma unroll
                    for (int u = 0; u < kUnroll; ++u) {
                        const int64_t v = v0 + int64_t(u) * gstride;
                        if (v < nvec) load_vec<T, VEC>(p.in[k], v * VEC, in[u]);
                    }
#pragma unroll
                    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
                        for (int j = 0; j < VEC; ++j) acc[u][j] = fold<K>(k, acc[u][j], in[u][j], p.coefs[k]);
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const int64_t v = v0 + int64_t(u) * gstride;
                if (v < nvec) {
                    float out[VEC];
#pragma unroll
                    for (int j = 0; j < VEC; ++j) out[j] = finish<T, K, A>(acc[u][j]);
                    store_vec_f32<T, VEC>(y + v * VEC, out);
                }
            }
        }
    }
    const int64_t i = nvec * VEC + gtid;
    if (i < p.n) {
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < kInputsOf<K>; ++k) {
            if (k < p.num_inputs) acc = fold<K>(k, acc, load_one<T>(p.in[k], i), p.coefs[k]);
        }
        y[i] = ElemTraits<T>::from_float(finish<T, K, A>(acc));
    }
}

// ---------------------------------------------------------------- weighted sums, pipelined
// N inputs (2..kMaxPipelinedInputs), each by 16-byte vectors (dense, row_vec,
// konst or run), y dense: one packed vector per input and step, the next
// step's loads issued before this step's math; inputs folded in order, as the
// general kernel does (the same bits). Two vectors per input and step were
// slower (and spill from 3 inputs): H200, 3 f16 inputs 16384x4096 146.8 us
// against 131.8, docs/performance.md.
constexpr int kMaxPipelinedInputs = 4;  // 5 inputs: 40 registers of packed vectors alone

template <class T, int VEC, int N>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    eltwise_wsum_pipelined_kernel(const __grid_constant__ EltwiseKernelParams p) {
    static_assert(VEC * sizeof(T) == kVecBytes, "whole 16-byte vectors");
    static_assert(N >= 2 && N <= kMaxPipelinedInputs, "inputs of a pipelined weighted sum");
    T* y = static_cast<T*>(p.y);
    const int64_t nvec = p.n / VEC;
    const int64_t gstride = int64_t(gridDim.x) * blockDim.x;
    const int64_t gtid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    uint4 cur[N], nxt[N] = {};  // (inputs) packed vectors; nxt zeroed: copied after the last step too
    if (gtid < nvec) {
#pragma unroll
        for (int k = 0; k < N; ++k) cur[k] = load_packed<T, VEC>(p.in[k], gtid * VEC);
    }
    for (int64_t v = gtid; v < nvec; v += gstride) {
        if (v + gstride < nvec) {
#pragma unroll
            for (int k = 0; k < N; ++k) nxt[k] = load_packed<T, VEC>(p.in[k], (v + gstride) * VEC);
        }
        float acc[VEC], in[VEC];
#pragma unroll
        for (int k = 0; k < N; ++k) {
            packed_to_f32<T, VEC>(cur[k], in);
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[j] = fold<EltwiseKind::weighted_sum>(k, acc[j], in[j], p.coefs[k]);
        }
        store_vec_f32<T, VEC>(y + v * VEC, acc);
#pragma unroll
        for (int k = 0; k < N; ++k) cur[k] = nxt[k];
    }
    const int64_t i = nvec * VEC + gtid;
    if (i < p.n) {
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < N; ++k) acc = fold<EltwiseKind::weighted_sum>(k, acc, load_one<T>(p.in[k], i), p.coefs[k]);
        y[i] = ElemTraits<T>::from_float(acc);
    }
}

// ---------------------------------------------------------------- general
// Any strides: each element index is decomposed over the merged dims.
template <class T, EltwiseKind K, Activation A>
__global__ void __launch_bounds__(kThreads)
    eltwise_strided_kernel(const __grid_constant__ EltwiseKernelParams p) {
    T* y = static_cast<T*>(p.y);
    const int64_t gstride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < p.n; e += gstride) {
        int64_t yo = 0;
        int64_t io[kInputsOf<K>] = {};
        uint64_t r = uint64_t(e);
#pragma unroll
        for (int d = kMaxRank - 1; d >= 0; --d) {
            if (d < p.ndim) {
                uint64_t q = r, idx = r;
                if (d > 0) p.dims[d].divmod(r, &q, &idx);
                yo += int64_t(idx) * p.ys[d];
#pragma unroll
                for (int k = 0; k < kInputsOf<K>; ++k) {
                    if (k < p.num_inputs) io[k] += int64_t(idx) * p.is[k][d];
                }
                r = q;
            }
        }
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < kInputsOf<K>; ++k) {
            if (k < p.num_inputs) {
                const float v = ElemTraits<T>::to_float(static_cast<const T*>(p.in[k].ptr)[io[k]]);
                acc = fold<K>(k, acc, v, p.coefs[k]);
            }
        }
        y[yo] = ElemTraits<T>::from_float(finish<T, K, A>(acc));
    }
}

// ---------------------------------------------------------------- instantiation list
enum class Path { kDense, kStrided };

struct KernelEntry {
    Path path;
    tops_dtype_t dtype;
    EltwiseKind kind;
    Activation act;
    int vec;
    const void* fn;
    const char* name;
    bool hoist1 = false;  // eltwise_dense_kernel's HOIST1
    int inputs = 0;       // pipelined weighted sums: N (0: any number)
};

#define TOPS_ELT_ENTRIES(T, DT, NAME, VM, K, A, OPNAME)                                                    \
    {Path::kDense, DT, EltwiseKind::K, Activation::A, VM,                                                  \
     reinterpret_cast<const void*>(&eltwise_dense_kernel<T, EltwiseKind::K, Activation::A, VM>),           \
     OPNAME "_" NAME "_dense_v" #VM "_cuda"},                                                              \
    {Path::kDense, DT, EltwiseKind::K, Activation::A, 1,                                                   \
     reinterpret_cast<const void*>(&eltwise_dense_kernel<T, EltwiseKind::K, Activation::A, 1>),            \
     OPNAME "_" NAME "_dense_v1_cuda"},                                                                    \
    {Path::kStrided, DT, EltwiseKind::K, Activation::A, 1,                                                 \
     reinterpret_cast<const void*>(&eltwise_strided_kernel<T, EltwiseKind::K, Activation::A>),             \
     OPNAME "_" NAME "_strided_cuda"}
// The packed kinds also take the hoisted-input-1 kernel.
#define TOPS_ELT_PACKED_ENTRIES(T, DT, NAME, VM, K, A, OPNAME)                                             \
    TOPS_ELT_ENTRIES(T, DT, NAME, VM, K, A, OPNAME),                                                       \
    {Path::kDense, DT, EltwiseKind::K, Activation::A, VM,                                                  \
     reinterpret_cast<const void*>(&eltwise_dense_kernel<T, EltwiseKind::K, Activation::A, VM, true>),     \
     OPNAME "_" NAME "_dense_hoisted_v" #VM "_cuda", true}
// Pipelined weighted sums of N inputs (KernelEntry::inputs = N).
#define TOPS_ELT_WSUM_ENTRY(T, DT, NAME, VM, N)                                                             \
    {Path::kDense, DT, EltwiseKind::weighted_sum, Activation::none, VM,                                      \
     reinterpret_cast<const void*>(&eltwise_wsum_pipelined_kernel<T, VM, N>),                                \
     "weighted_sum" #N "_" NAME "_pipelined_v" #VM "_cuda", false, N}
#define TOPS_ELT_DTYPE(T, DT, NAME, VM)                                                \
    TOPS_ELT_PACKED_ENTRIES(T, DT, NAME, VM, bias_act, none, "bias"),                  \
    TOPS_ELT_PACKED_ENTRIES(T, DT, NAME, VM, bias_act, relu, "bias_relu"),             \
    TOPS_ELT_PACKED_ENTRIES(T, DT, NAME, VM, bias_act, gelu_erf, "bias_gelu_erf"),     \
    TOPS_ELT_PACKED_ENTRIES(T, DT, NAME, VM, bias_act, gelu_tanh, "bias_gelu_tanh"),   \
    TOPS_ELT_PACKED_ENTRIES(T, DT, NAME, VM, bias_act, silu, "bias_silu"),             \
    TOPS_ELT_PACKED_ENTRIES(T, DT, NAME, VM, prelu, none, "prelu"),                    \
    TOPS_ELT_ENTRIES(T, DT, NAME, VM, weighted_sum, none, "weighted_sum"),             \
    TOPS_ELT_WSUM_ENTRY(T, DT, NAME, VM, 2), TOPS_ELT_WSUM_ENTRY(T, DT, NAME, VM, 3),  \
    TOPS_ELT_WSUM_ENTRY(T, DT, NAME, VM, 4)

const KernelEntry kKernels[] = {
    TOPS_ELT_DTYPE(float, TOPS_DTYPE_F32, "f32", 4),
    TOPS_ELT_DTYPE(__half, TOPS_DTYPE_F16, "f16", 8),
    TOPS_ELT_DTYPE(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16", 8),
};

#undef TOPS_ELT_DTYPE
#undef TOPS_ELT_PACKED_ENTRIES
#undef TOPS_ELT_WSUM_ENTRY
#undef TOPS_ELT_ENTRIES

const KernelEntry* find_wsum_kernel(tops_dtype_t dt, int inputs) {
    for (const KernelEntry& e : kKernels) {
        if (e.dtype == dt && e.inputs == inputs) return &e;
    }
    return nullptr;
}

const KernelEntry* find_kernel(Path path, tops_dtype_t dt, EltwiseKind k, Activation a, int vec,
                               bool hoist1 = false) {
    for (const KernelEntry& e : kKernels) {
        if (e.path == path && e.dtype == dt && e.kind == k && e.act == a && e.vec == vec && e.hoist1 == hoist1 &&
            e.inputs == 0) {
            return &e;
        }
    }
    return nullptr;
}

// ---------------------------------------------------------------- planning
struct Launch {
    const KernelEntry* kernel = nullptr;
    int grid = 0;
};

Status make_launch(const KernelEntry* k, int64_t work_threads, const DeviceInfo& dev, Launch* out) {
    if (!k) return Status(TOPS_ERROR_INTERNAL, "elementwise: no CUDA kernel instantiated for this case");
    int per_sm = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k->fn, kThreads, 0),
                                     "elementwise: cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    if (per_sm < 1) return Status(TOPS_ERROR_INTERNAL, fmt("elementwise: ", k->name, " cannot be resident"));
    const int64_t needed = (work_threads + kThreads - 1) / kThreads;
    out->kernel = k;
    out->grid = int(std::max<int64_t>(1, std::min<int64_t>(needed, int64_t(per_sm) * dev.sm_count)));
    return Status::ok();
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

class EltwisePlanCuda final : public OpPlan {
public:
    EltwisePlanCuda(EltwiseKind kind, const EltwiseKernelParams& base, const Launch& vec_launch,
                    const Launch& fallback, int device, std::string why)
        : kind_(kind), base_(base), vec_(vec_launch), fallback_(fallback), device_(device), why_(std::move(why)) {}

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (base_.n == 0) return Status::ok();
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        EltwiseKernelParams p = base_;
        p.y = args.out(TOPS_ARG_Y);
        for (int k = 0; k < p.num_inputs; ++k) p.in[k].ptr = args.in(arg_kind(k));
        bool use_vec = vec_.kernel && aligned(p.y, kVecBytes);
        for (int k = 0; k < p.num_inputs; ++k) {
            const bool vector_loads = p.in[k].mode == Mode::dense || p.in[k].mode == Mode::row_vec;
            if (vector_loads && !aligned(p.in[k].ptr, kVecBytes)) use_vec = false;
        }
        const Launch& l = use_vec ? vec_ : fallback_;
        void* kargs[] = {&p};
        const cudaError_t err = cudaLaunchKernel(l.kernel->fn, dim3(l.grid), dim3(kThreads), kargs, 0,
                                                 static_cast<cudaStream_t>(ctx.stream));
        if (err != cudaSuccess) return cuda_status(err, l.kernel->name, TOPS_ERROR_DEVICE_LAUNCH);
        return launch_status(l.kernel->name);
    }

    const char* kernel_name() const override { return (vec_.kernel ? vec_ : fallback_).kernel->name; }
    std::string reason() const override { return why_; }

private:
    // Argument slot of input k: X then BIAS / SLOPE, or INPUT0 + k for weighted sums.
    tops_arg_kind_t arg_kind(int k) const {
        if (kind_ == EltwiseKind::weighted_sum) return tops_arg_kind_t(TOPS_ARG_INPUT0 + k);
        if (k == 0) return TOPS_ARG_X;
        return kind_ == EltwiseKind::prelu ? TOPS_ARG_SLOPE : TOPS_ARG_BIAS;
    }

    EltwiseKind kind_;
    EltwiseKernelParams base_;
    Launch vec_;       // kernel == nullptr unless y is dense and every input classified
    Launch fallback_;  // dense VEC = 1 or strided: always valid
    int device_;
    std::string why_;
};

// Classifies one input (merged dims, y dense) for vectors of vm elements;
// *period: after how many vectors of y its vectors repeat (0: never).
bool classify(const int64_t* dims, const int64_t* ys, const int64_t* s, int nd, int vm, EltInput* in,
              int64_t* period) {
    *period = 0;
    bool dense = true;
    int varying = -1, nvarying = 0;
    for (int d = 0; d < nd; ++d) {
        if (s[d] != ys[d]) dense = false;
        if (s[d] != 0) {
            varying = d;
            ++nvarying;
        }
    }
    if (dense) {
        in->mode = Mode::dense;
        return true;
    }
    if (nvarying == 0) {
        in->mode = Mode::konst;
        *period = 1;
        return true;
    }
    if (nvarying > 1) return false;
    const int64_t inner = ys[varying];  // y dense: the stride of a dim is its inner extent
    in->inner = FastDivmod(uint64_t(inner));
    in->size = FastDivmod(uint64_t(dims[varying]));
    in->stride = s[varying];
    if (inner == 1 && s[varying] == 1 && dims[varying] % vm == 0) {
        in->mode = Mode::row_vec;
        *period = dims[varying] / vm;
    } else if (inner % vm == 0) {
        in->mode = Mode::run;
        *period = inner / vm * dims[varying];
    } else {
        in->mode = Mode::gather;
    }
    return true;
}

// Trims l's grid to a multiple of the non-dense inputs' periods (vectors) and
// of kThreads, so those inputs are loaded once per thread
// (EltwiseKernelParams::hoist_periodic), unless that leaves fewer than
// min_share of the threads. TOPS_ELTWISE_HOIST=0 keeps the grid; =1 trims it
// to any share that keeps a whole unit.
// H200, compare_torch, hoisted vs not: bias + GELU f16 4096x3072 21.8 vs 23.1
// us, f32 36.3 vs 37.6, f16 16384x4096 87.8 vs 93.9; PReLU 32x64x56x56 f32
// (slope period 50176 vectors, 74% of the grid kept) 21.6-21.7 vs 21.4-21.5,
// hence kMinHoistedShare for the general vector kernel. The pipelined kernel
// (HOIST1) gains more from the hoisting: PReLU per channel with 74% of the
// grid kept, against the full grid without it, f32 32x64x56x56 20.8-20.9 vs
// 21.8 us, f32 32x256x14x14 8.5-8.6 vs 8.7, f32 64x128x28x28 and f16
// 32x64x56x56 within 0.1 us, so it takes kMinHoistedSharePipelined.
constexpr double kMinHoistedShare = 0.9;
constexpr double kMinHoistedSharePipelined = 0.7;
void hoist_periodic_inputs(const int64_t* periods, int ni, double min_share, Launch* l, EltwiseKernelParams* p) {
    const char hoist = env_flag("TOPS_ELTWISE_HOIST");
    if (hoist == '0') return;
    if (hoist == '1') min_share = 0.0;
    const int64_t threads = int64_t(l->grid) * kThreads;
    int64_t unit = kThreads;
    bool any = false;
    for (int k = 0; k < ni; ++k) {
        if (periods[k] == 0) continue;
        if (periods[k] > threads) return;  // the lcm is at least the period (and stays < 2^63 below)
        unit = std::lcm(unit, periods[k]);
        if (unit > threads) return;
        any = true;
    }
    const int64_t kept = threads / unit * unit;
    if (!any || double(kept) < min_share * double(threads)) return;
    l->grid = int(kept / kThreads);
    p->hoist_periodic = true;
}

}  // namespace

// The one dispatch point: merged layout -> dense vector kernel or strided kernel.
Status plan_eltwise(const EltwiseParams& ep, const DeviceInfo& dev, PlanPtr* out) {
    const int ni = ep.num_inputs;
    // Drop size-1 dims, then merge neighbours that every tensor continues.
    int64_t dims[kMaxRank], ys[kMaxRank], is[kMaxEltwiseInputs][kMaxRank];
    int nd = 0;
    // An empty y launches nothing; its other dims may multiply past int64, so they are not merged.
    const int y_rank = ep.y.numel() == 0 ? 0 : ep.y.rank;
    for (int i = 0; i < y_rank; ++i) {
        if (ep.y.dims[i] == 1) continue;
        const int64_t d = ep.y.dims[i];
        bool merge = nd > 0 && product_equals(ep.y.strides[i], d, ys[nd - 1]);
        for (int k = 0; k < ni && merge; ++k) merge = product_equals(ep.in[k].strides[i], d, is[k][nd - 1]);
        if (merge) {
            dims[nd - 1] *= d;
            ys[nd - 1] = ep.y.strides[i];
            for (int k = 0; k < ni; ++k) is[k][nd - 1] = ep.in[k].strides[i];
            continue;
        }
        dims[nd] = d;
        ys[nd] = ep.y.strides[i];
        for (int k = 0; k < ni; ++k) is[k][nd] = ep.in[k].strides[i];
        ++nd;
    }
    EltwiseKernelParams base;
    base.n = ep.y.numel();
    base.num_inputs = ni;
    for (int k = 0; k < ni; ++k) base.coefs[k] = ep.coefs[k];
    base.ndim = nd;
    for (int d = 0; d < nd; ++d) {
        base.dims[d] = FastDivmod(uint64_t(dims[d]));
        base.ys[d] = ys[d];
        for (int k = 0; k < ni; ++k) base.is[k][d] = is[k][d];
    }
    const tops_dtype_t dt = ep.y.dtype;
    const int vm = int(kVecBytes / dtype_size(dt));
    // Dense y: strides are the row-major extents of the merged dims.
    int64_t dense[kMaxRank];
    bool y_dense = true;
    for (int d = nd - 1, e = 1; d >= 0; --d) {
        dense[d] = e;
        if (ys[d] != e) y_dense = false;
        e *= dims[d];
    }
    bool classified = y_dense;
    int64_t periods[kMaxEltwiseInputs] = {};
    for (int k = 0; k < ni && classified; ++k) {
        classified = classify(dims, dense, is[k], nd, vm, &base.in[k], &periods[k]);
    }
    DeviceScope scope(dev.ordinal);
    TOPS_RETURN_IF_ERROR(scope.status());
    Launch vec_l, fallback_l;
    const char* path;
    bool gather = false;
    for (int k = 0; k < ni && classified; ++k) gather = gather || base.in[k].mode == Mode::gather;
    if (classified) {
        // A gathered input needs per-element index math: the VEC = 1 kernel.
        if (!gather) {
            // TOPS_ELTWISE_PIPELINE=0 keeps the general vector kernels (for comparisons).
            const bool pipeline = !env_switched_off("TOPS_ELTWISE_PIPELINE");
            if (ep.kind == EltwiseKind::weighted_sum) {
                // 2-4 inputs: the pipelined kernel. H200, compare_torch's timer, against the
                // general vector kernel: 3 f16 inputs 16384x4096 165.0 -> 131.8 us, 2 inputs
                // 125.6 -> 101.2, 4 f16 inputs 4096x3072 49.3 -> 37.4, 3 f32 inputs 8192x8192
                // 258.2 -> 254.8 (docs/performance.md).
                const bool piped = pipeline && ni >= 2 && ni <= kMaxPipelinedInputs;
                const KernelEntry* k =
                    piped ? find_wsum_kernel(dt, ni) : find_kernel(Path::kDense, dt, ep.kind, ep.act, vm);
                TOPS_RETURN_IF_ERROR(make_launch(k, base.n / (piped ? vm : kWsumElemsPerStep) + 1, dev, &vec_l));
            } else if (base.in[0].mode == Mode::dense) {
                // The packed kernels load x as dense vectors (a broadcast view of x: VEC = 1).
                TOPS_RETURN_IF_ERROR(make_launch(find_kernel(Path::kDense, dt, ep.kind, ep.act, vm),
                                                 base.n / (vm * kVecsPerStep) + 1, dev, &vec_l));
                // Input 1 hoisted: the kernel that keeps it out of the step's registers and
                // pipelines its steps. H200, compare_torch's timer, bias + GELU erf against the
                // same hoisting without it: f16 16384x4096 89.3 -> 75.2 us, f16 4096x3072 22.4
                // -> 18.4, f32 4096x3072 37.3 -> 35.4, f32 8192x8192 165.4 -> 160.0; without the
                // pipelining (the registers only) 76.2, 19.7, 36.4, 161.6; with x's loads plain
                // (no mode choice) 73.2, 18.0, 31.7, 141.9 (docs/performance.md).
                // An activation alone (no bias) takes it too: H200, against the general vector
                // kernel, GELU erf f16 16384x4096 74.4-75.2 -> 72.9-73.5 us, f16 4096x3072
                // 18.6-19.1 -> 17.7-18.3, f32 4096x3072 30.9-31.7 -> 29.7-30.4, f32 8192x8192
                // 140.7-141.1 -> 138.6-139.3 (ReLU there 136.5-137.3 -> 137.2-137.8).
                const bool alone = ni == 1;
                const bool piped = pipeline && (alone || (ni == 2 && periods[1] != 0));
                hoist_periodic_inputs(periods, ni, piped ? kMinHoistedSharePipelined : kMinHoistedShare, &vec_l,
                                      &base);
                // Input 1 absent, or loaded once per thread: nothing of it in the step's registers.
                if (piped && (alone || base.hoist_periodic)) {
                    // Same launch bounds: the trimmed grid (a multiple of the period) stays.
                    vec_l.kernel = find_kernel(Path::kDense, dt, ep.kind, ep.act, vm, true);
                    if (!vec_l.kernel) return Status(TOPS_ERROR_INTERNAL, "elementwise: no hoisted CUDA kernel");
                }
            }
        }
        TOPS_RETURN_IF_ERROR(make_launch(find_kernel(Path::kDense, dt, ep.kind, ep.act, 1),
                                         base.n / kScalarsPerStep + 1, dev, &fallback_l));
        path = "dense y, classified inputs";
    } else {
        TOPS_RETURN_IF_ERROR(make_launch(find_kernel(Path::kStrided, dt, ep.kind, ep.act, 1), base.n, dev,
                                         &fallback_l));
        path = y_dense ? "an input varies along several dims: strided" : "strided y";
    }
    static const char* const modes[] = {"dense", "const", "row_vec", "run", "gather"};
    std::string inputs;
    for (int k = 0; k < ni && classified; ++k) inputs += fmt(k ? "," : " inputs=", modes[int(base.in[k].mode)]);
    std::string why = fmt(path, " n=", base.n, " merged_dims=", nd, inputs, " grid=",
                          (vec_l.kernel ? vec_l : fallback_l).grid,
                          base.hoist_periodic ? " (a multiple of the inputs' periods: loaded once per thread)" : "");
    out->reset(new EltwisePlanCuda(ep.kind, base, vec_l, fallback_l, dev.ordinal, std::move(why)));
    return Status::ok();
}

}  // namespace tops::cuda
