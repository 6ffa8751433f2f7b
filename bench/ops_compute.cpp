// tops-bench op entries of the compute-bound ops (reported as TFLOP/s, not %
// of copy): GEMM here; conv2d joins this file when the op lands. Each entry
// is a create function (dense row-major tensors + the created op, FLOPs in
// OpInstance::flops) and a check that recomputes sampled outputs in fp64.
#include <cmath>
#include <random>
#include <sstream>

#include "bench.hpp"

namespace bench {

namespace {

constexpr int kGemmCheckSamples = 512;  // elements of D recomputed in fp64

// Tolerance of one element of D relative to sum_k |a_ik b_kj|: f32 accumulation
// over K, TF32 inputs (10-bit mantissa), f16 / bf16 rounding of the stored D.
double gemm_tolerance(tops_dtype_t dtype, bool tf32) {
    if (dtype == TOPS_DTYPE_F32) return tf32 ? 2e-3 : 2e-5;
    return dtype == TOPS_DTYPE_F16 ? 2e-3 : 1.6e-2;
}

// gemm: --shape M,N,K; D[M,N] = A[M,K] @ B[K,N], row-major, beta 0, no epilogue.
tops_status_t gemm_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    if (c.shape.size() != 3) {
        *err = "gemm: --shape must be M,N,K";
        return TOPS_ERROR_BAD_RANK;
    }
    const int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
    out->tensors.push_back({"a", TOPS_ARG_A, c.dtype, {m, k}, false, Fill::uniform});
    out->tensors.push_back({"b", TOPS_ARG_B, c.dtype, {k, n}, false, Fill::uniform});
    out->tensors.push_back({"d", TOPS_ARG_D, c.dtype, {m, n}, true, Fill::none});
    out->flops = 2.0 * double(m) * double(n) * double(k);
    std::ostringstream a;
    a << "MxNxK, NN" << (c.tf32 ? ", tf32" : "") << " GFLOP/call=" << out->flops / 1e9;
    out->args = a.str();
    tops_gemm_desc_t d = tops_gemm_desc_default();
    d.flags = c.tf32 ? TOPS_GEMM_ALLOW_TF32 : 0u;
    tops_tensor_desc_t* descs[] = {&d.a, &d.b, &d.d};
    for (size_t i = 0; i < 3; ++i) {
        const TensorSpec& t = out->tensors[i];
        const tops_status_t s = tops_tensor_desc_init(descs[i], t.dtype, 2, t.dims.data(), nullptr);
        if (s != TOPS_SUCCESS) {
            *err = tops_last_error();
            return s;
        }
    }
    const tops_status_t s = tops_gemm_create(ctx, &d, &out->op);
    if (s != TOPS_SUCCESS) *err = tops_last_error();
    return s;
}

std::string gemm_check(const Case& c, const OpInstance&, const HostTensors& host) {
    const int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
    if (m * n == 0) return "";
    const double tol = gemm_tolerance(c.dtype, c.tf32);
    std::mt19937_64 rng(19);
    for (int s = 0; s < kGemmCheckSamples; ++s) {
        const int64_t i = int64_t(rng() % uint64_t(m)), j = int64_t(rng() % uint64_t(n));
        double want = 0, scale = 0;
        for (int64_t p = 0; p < k; ++p) {
            const double prod = load_element(host[0].data(), c.dtype, i * k + p) *
                                load_element(host[1].data(), c.dtype, p * n + j);
            want += prod;
            scale += std::fabs(prod);
        }
        const double got = load_element(host[2].data(), c.dtype, i * n + j);
        if (!(std::fabs(got - want) <= tol * scale)) {
            std::ostringstream msg;
            msg << "gemm d[" << i << "," << j << "] = " << got << ", fp64 " << want;
            return msg.str();
        }
    }
    return "";
}

}  // namespace

std::vector<OpEntry> compute_op_entries() {
    return {
        {"gemm", "D = A @ B row-major, --shape M,N,K (--tf32 for f32 on tensor cores)", gemm_create, gemm_check},
    };
}

}  // namespace bench
