// The EdgeTest fixture and its helpers, shared by test_edge_cases.cpp and
// test_edge_cases_gemm_conv.cpp (one fixture type, one instantiation: in
// test_edge_cases.cpp).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"

namespace edge_cases {

using namespace tops_test;

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

class EdgeTest : public ::testing::TestWithParam<tops_backend_t> {};

inline Tensor filled(tops_dtype_t dt, const std::vector<int64_t>& dims, double base) {
    Tensor t = Tensor::make(dt, dims, Layout::Dense);
    for (int64_t i = 0; i < t.slots(); ++i) t.set_value(i, base + 0.125 * double(i % 7));
    return t;
}

inline Tensor poisoned(tops_dtype_t dt, const std::vector<int64_t>& dims) {
    Tensor t = Tensor::make(dt, dims, Layout::Dense);
    t.poison();
    return t;
}

inline CreateFn softmax_creator(const Tensor& x, const Tensor& y, float scale = 1.0f) {
    tops_softmax_desc_t d = tops_softmax_desc_default();
    d.x = x.desc();
    d.y = y.desc();
    d.scale = scale;
    return [d](tops_context_t ctx, tops_op_t* op) { return tops_softmax_create(ctx, &d, op); };
}

inline CreateFn reduce_creator(const Tensor& x, const Tensor& y, tops_reduce_op_t kind, uint32_t axes) {
    tops_reduce_desc_t d = tops_reduce_desc_default();
    d.op = kind;
    d.x = x.desc();
    d.y = y.desc();
    d.axes = axes;
    return [d](tops_context_t ctx, tops_op_t* op) { return tops_reduce_create(ctx, &d, op); };
}

inline CreateFn norm_creator(const Tensor& x, const Tensor& y) {
    tops_norm_desc_t d = tops_norm_desc_default();
    d.x = x.desc();
    d.y = y.desc();
    return [d](tops_context_t ctx, tops_op_t* op) { return tops_norm_create(ctx, &d, op); };
}

inline CreateFn bias_act_creator(const Tensor& x, const Tensor& y, tops_activation_t act) {
    tops_bias_act_desc_t d = tops_bias_act_desc_default();
    d.x = x.desc();
    d.y = y.desc();
    d.act = act;
    return [d](tops_context_t ctx, tops_op_t* op) { return tops_bias_act_create(ctx, &d, op); };
}

inline CreateFn gemm_creator(const Tensor& a, const Tensor& b, const Tensor* c, const Tensor* bias, const Tensor& dd,
                      float beta) {
    tops_gemm_desc_t d = tops_gemm_desc_default();
    d.a = a.desc();
    d.b = b.desc();
    if (c) d.c = c->desc();
    if (bias) d.bias = bias->desc();
    d.d = dd.desc();
    d.beta = beta;
    return [d](tops_context_t ctx, tops_op_t* op) { return tops_gemm_create(ctx, &d, op); };
}

inline CreateFn attention_creator(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o) {
    tops_attention_desc_t d = tops_attention_desc_default();
    d.q = q.desc();
    d.k = k.desc();
    d.v = v.desc();
    d.o = o.desc();
    return [d](tops_context_t ctx, tops_op_t* op) { return tops_attention_create(ctx, &d, op); };
}

// The float dtypes the backend computes in for every op.
inline tops_dtype_t float_dtype(tops_backend_t backend) {
    return backend == TOPS_BACKEND_CUDA ? TOPS_DTYPE_F16 : TOPS_DTYPE_F32;
}

}  // namespace edge_cases
