// tops-bench oneDNN baselines (optional, built when CMake finds oneDNN, which
// defines TOPS_BENCH_ONEDNN): softmax / log-softmax forward along the same axis,
// and transpose as a reorder between a permuted-stride source descriptor and
// a dense destination. They run on the very buffers tops used, with the same
// OpenMP thread count (oneDNN's OMP runtime follows omp_set_num_threads).
// Cases oneDNN has no primitive for (mask, lengths, scale) report why instead.
#include "bench.hpp"

#ifdef TOPS_BENCH_ONEDNN

#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

namespace bench {

namespace {

dnnl::memory::data_type dnnl_type(tops_dtype_t t) {
    switch (t) {
    case TOPS_DTYPE_F32: return dnnl::memory::data_type::f32;
    case TOPS_DTYPE_F16: return dnnl::memory::data_type::f16;
    case TOPS_DTYPE_BF16: return dnnl::memory::data_type::bf16;
    case TOPS_DTYPE_I32: return dnnl::memory::data_type::s32;
    case TOPS_DTYPE_U8: return dnnl::memory::data_type::u8;
    default: return dnnl::memory::data_type::undef;
    }
}

dnnl::engine& cpu_engine() {
    static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    return eng;
}

// One primitive with its src/dst memories; run() rebinds them to a buffer set.
class DnnlBaseline final : public Baseline {
public:
    DnnlBaseline(dnnl::primitive prim, const dnnl::memory::desc& src_md, const dnnl::memory::desc& dst_md,
                 std::string impl)
        : prim_(std::move(prim)),
          src_(src_md, cpu_engine(), DNNL_MEMORY_NONE),
          dst_(dst_md, cpu_engine(), DNNL_MEMORY_NONE),
          stream_(cpu_engine()),
          impl_(std::move(impl)) {}

    void run(const std::vector<void*>& buffers) override {
        src_.set_data_handle(buffers[0]);
        dst_.set_data_handle(buffers[1]);
        prim_.execute(stream_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
        stream_.wait();
    }
    std::string impl() const override { return impl_; }

private:
    dnnl::primitive prim_;
    dnnl::memory src_, dst_;
    dnnl::stream stream_;
    std::string impl_;
};

std::unique_ptr<Baseline> prepare_softmax(const Case& c, const OpInstance& inst, std::string* why) {
    if (c.mask || c.lengths) {
        *why = "oneDNN softmax has no mask/lengths input";
        return nullptr;
    }
    if (c.scale != 1.0f) {
        *why = "oneDNN 2.6 softmax has no input scale";
        return nullptr;
    }
    const dnnl::memory::dims dims = inst.tensors[0].dims;
    dnnl::memory::dims strides(dims.size());
    int64_t s = 1;
    for (size_t d = dims.size(); d-- > 0;) {
        strides[d] = s;
        s *= dims[d];
    }
    const dnnl::memory::desc data(dims, dnnl_type(c.dtype), strides);
    const int axis = normalize_axis(c.axis, int(dims.size()));
    if (c.log) {
        dnnl::logsoftmax_forward::primitive_desc pd(
            {dnnl::prop_kind::forward_inference, data, axis}, cpu_engine());
        return std::make_unique<DnnlBaseline>(dnnl::logsoftmax_forward(pd), data, data, pd.impl_info_str());
    }
    dnnl::softmax_forward::primitive_desc pd({dnnl::prop_kind::forward_inference, data, axis}, cpu_engine());
    return std::make_unique<DnnlBaseline>(dnnl::softmax_forward(pd), data, data, pd.impl_info_str());
}

std::unique_ptr<Baseline> prepare_transpose(const Case& c, const OpInstance& inst, std::string* why) {
    // Logical dims are y's: y[i] = x[j] with j[perm[k]] = i[k], so the source
    // descriptor walks x with stride x_strides[perm[k]] along logical dim k.
    const dnnl::memory::dims xdims = inst.tensors[0].dims;
    const dnnl::memory::dims ydims = inst.tensors[1].dims;
    const size_t rank = xdims.size();
    dnnl::memory::dims xstrides(rank), ystrides(rank), src_strides(rank);
    int64_t sx = 1, sy = 1;
    for (size_t d = rank; d-- > 0;) {
        xstrides[d] = sx;
        sx *= xdims[d];
        ystrides[d] = sy;
        sy *= ydims[d];
    }
    for (size_t k = 0; k < rank; ++k) {
        const int p = c.perm.empty() ? int(rank - 1 - k) : c.perm[k];
        src_strides[k] = xstrides[p];
    }
    const dnnl::memory::desc src(ydims, dnnl_type(c.dtype), src_strides);
    const dnnl::memory::desc dst(ydims, dnnl_type(c.dtype), ystrides);
    dnnl::reorder::primitive_desc pd(cpu_engine(), src, cpu_engine(), dst);
    return std::make_unique<DnnlBaseline>(dnnl::reorder(pd), src, dst, pd.impl_info_str());
}

// A primitive bound to several tensors of the case: (DNNL arg, index into
// OpInstance::tensors, descriptor) each.
class DnnlMultiBaseline final : public Baseline {
public:
    struct Binding {
        int arg;
        size_t tensor;
        dnnl::memory::desc md;
    };
    DnnlMultiBaseline(dnnl::primitive prim, std::vector<Binding> bindings, std::string impl)
        : prim_(std::move(prim)), stream_(cpu_engine()), impl_(std::move(impl)) {
        for (const Binding& b : bindings) {
            bindings_.push_back({b.arg, b.tensor, dnnl::memory(b.md, cpu_engine(), DNNL_MEMORY_NONE)});
        }
    }
    void run(const std::vector<void*>& buffers) override {
        std::unordered_map<int, dnnl::memory> args;
        for (Bound& b : bindings_) {
            b.mem.set_data_handle(buffers[b.tensor]);
            args.insert({b.arg, b.mem});
        }
        prim_.execute(stream_, args);
        stream_.wait();
    }
    std::string impl() const override { return impl_; }

private:
    struct Bound {
        int arg;
        size_t tensor;
        dnnl::memory mem;
    };
    dnnl::primitive prim_;
    std::vector<Bound> bindings_;
    dnnl::stream stream_;
    std::string impl_;
};

dnnl::memory::desc dense_md(const TensorSpec& t) {
    dnnl::memory::dims strides(t.dims.size());
    int64_t s = 1;
    for (size_t d = t.dims.size(); d-- > 0;) {
        strides[d] = s;
        s *= t.dims[d];
    }
    return dnnl::memory::desc(t.dims, dnnl_type(t.dtype), strides);
}

// layer_normalization forward inference with f32 scale and shift (tensors x, y, gamma, beta).
std::unique_ptr<Baseline> prepare_layernorm(const Case& c, const OpInstance& inst, std::string* why) {
    if (c.op != "layernorm") {
        *why = "oneDNN 2.6 has no " + c.op;
        return nullptr;
    }
    const dnnl::memory::desc data = dense_md(inst.tensors[0]);
    dnnl::layer_normalization_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, data, 1e-5f,
         dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift},
        cpu_engine());
    return std::make_unique<DnnlMultiBaseline>(
        dnnl::layer_normalization_forward(pd),
        std::vector<DnnlMultiBaseline::Binding>{{DNNL_ARG_SRC, 0, data},
                                                {DNNL_ARG_DST, 1, dense_md(inst.tensors[1])},
                                                {DNNL_ARG_SCALE, 2, dense_md(inst.tensors[2])},
                                                {DNNL_ARG_SHIFT, 3, dense_md(inst.tensors[3])}},
        pd.impl_info_str());
}

// reduction sum / max / mean from x to keepdims y.
std::unique_ptr<Baseline> prepare_reduce(const Case& c, const OpInstance& inst, std::string*) {
    const dnnl::algorithm alg = c.op == "reduce_max" ? dnnl::algorithm::reduction_max
                              : c.op == "global_avg_pool" ? dnnl::algorithm::reduction_mean
                                                          : dnnl::algorithm::reduction_sum;
    const dnnl::memory::desc src = dense_md(inst.tensors[0]), dst = dense_md(inst.tensors[1]);
    dnnl::reduction::primitive_desc pd({alg, src, dst, 0.0f, 0.0f}, cpu_engine());
    return std::make_unique<DnnlBaseline>(dnnl::reduction(pd), src, dst, pd.impl_info_str());
}

// conv2d (tensors x, w, y of bench/ops_compute.cpp; symmetric stride and
// padding): forward inference with src and dst in the case's own plain layout
// (nchw / nhwc), so neither side reorders activations. Weights: oneDNN's
// preferred format (`any`), reordered from the plain user filter inside every
// timed call, because tops also receives the plain filter on every call and
// packs it; TOPS_BENCH_CONV_WEIGHTS=plain gives oneDNN the plain filter
// (oihw / ohwi) instead, with no reorder at all. The impl string says which.
class DnnlConvBaseline final : public Baseline {
public:
    DnnlConvBaseline(const dnnl::convolution_forward::primitive_desc& pd, const dnnl::memory::desc& user_w,
                     bool reorder)
        : conv_(pd),
          src_(pd.src_desc(), cpu_engine(), DNNL_MEMORY_NONE),
          dst_(pd.dst_desc(), cpu_engine(), DNNL_MEMORY_NONE),
          user_w_(user_w, cpu_engine(), DNNL_MEMORY_NONE),
          stream_(cpu_engine()),
          impl_(pd.impl_info_str()) {
        if (reorder) {
            w_ = dnnl::memory(pd.weights_desc(), cpu_engine());
            reorder_ = dnnl::reorder(user_w_, w_);
            impl_ += ", weights " + std::string("reordered per call");
        } else {
            impl_ += ", plain weights, no reorders";
        }
    }
    void run(const std::vector<void*>& buffers) override {
        src_.set_data_handle(buffers[0]);
        user_w_.set_data_handle(buffers[1]);
        dst_.set_data_handle(buffers[2]);
        if (reorder_) reorder_.execute(stream_, user_w_, w_);
        conv_.execute(stream_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, reorder_ ? w_ : user_w_}, {DNNL_ARG_DST, dst_}});
        stream_.wait();
    }
    std::string impl() const override { return impl_; }

private:
    dnnl::convolution_forward conv_;
    dnnl::memory src_, dst_, user_w_, w_;
    dnnl::reorder reorder_;
    dnnl::stream stream_;
    std::string impl_;
};

std::unique_ptr<Baseline> prepare_conv(const Case& c, const OpInstance& inst, std::string* why) {
    if (c.shape.size() != 9 || inst.tensors.size() != 3) {
        *why = "conv2d: expected --shape N,C,H,W,K,R,S,stride,pad and tensors x, w, y";
        return nullptr;
    }
    const int64_t n = c.shape[0], ch = c.shape[1], h = c.shape[2], w = c.shape[3], k = c.shape[4];
    const int64_t r = c.shape[5], s = c.shape[6], stride = c.shape[7], pad = c.shape[8];
    // Layouts as in bench/ops_compute.cpp: f32 NCHW / KCRS unless the op is conv2d_nhwc.
    const bool nhwc = c.dtype != TOPS_DTYPE_F32 || c.op == "conv2d_nhwc";
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::data_type dt = dnnl_type(c.dtype);
    const int64_t p = inst.tensors[2].dims[nhwc ? 1 : 2], q = inst.tensors[2].dims[nhwc ? 2 : 3];
    const dnnl::memory::desc src({n, ch, h, w}, dt, nhwc ? tag::nhwc : tag::nchw);
    const dnnl::memory::desc dst({n, k, p, q}, dt, nhwc ? tag::nhwc : tag::nchw);
    const dnnl::memory::desc user_w({k, ch, r, s}, dt, nhwc ? tag::ohwi : tag::oihw);
    const char* env = std::getenv("TOPS_BENCH_CONV_WEIGHTS");
    const bool plain = env && std::string(env) == "plain";
    const dnnl::memory::desc wmd = plain ? user_w : dnnl::memory::desc({k, ch, r, s}, dt, tag::any);
    dnnl::convolution_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, wmd, dst, {stride, stride},
         {pad, pad}, {pad, pad}},
        cpu_engine());
    if (pd.src_desc() != src || pd.dst_desc() != dst) {
        *why = "oneDNN conv changed the activation layout";
        return nullptr;
    }
    return std::make_unique<DnnlConvBaseline>(pd, user_w, !plain && pd.weights_desc() != user_w);
}

}  // namespace

bool onednn_compiled() { return true; }

std::string onednn_version() {
    const dnnl_version_t* v = dnnl::version();
    std::ostringstream s;
    s << v->major << "." << v->minor << "." << v->patch;
    return s.str();
}

std::unique_ptr<Baseline> onednn_prepare(const Case& c, const OpInstance& inst, std::string* why) {
    try {
        if (c.op == "softmax") return prepare_softmax(c, inst, why);
        if (c.op == "transpose") return prepare_transpose(c, inst, why);
        if (c.op == "conv2d" || c.op == "conv2d_nhwc") return prepare_conv(c, inst, why);
        if (c.op == "layernorm" || c.op == "rmsnorm" || c.op == "layernorm_residual") {
            return prepare_layernorm(c, inst, why);
        }
        if (c.op == "reduce_sum" || c.op == "reduce_max" || c.op == "global_avg_pool") {
            return prepare_reduce(c, inst, why);
        }
        *why = "no oneDNN equivalent for " + c.op;
    } catch (const dnnl::error& e) {
        *why = std::string("oneDNN: ") + e.what() + " (status " + std::to_string(int(e.status)) + ")";
    }
    return nullptr;
}

}  // namespace bench

#else  // !TOPS_BENCH_ONEDNN

namespace bench {

bool onednn_compiled() { return false; }
std::string onednn_version() { return ""; }
std::unique_ptr<Baseline> onednn_prepare(const Case&, const OpInstance&, std::string* why) {
    *why = "tops-bench built without oneDNN";
    return nullptr;
}

}  // namespace bench

#endif
