// tops.hpp - header-only C++17 RAII wrapper over the tops C API (optional).
// Errors become tops::Error exceptions in the caller's code; the C ABI
// underneath never throws.
#ifndef TOPS_TOPS_HPP
#define TOPS_TOPS_HPP

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tops/tops.h"

namespace tops {

class Error : public std::runtime_error {
public:
    Error(tops_status_t status, const std::string& message)
        : std::runtime_error(std::string(tops_status_string(status)) + ": " + message), status_(status) {}
    tops_status_t status() const noexcept { return status_; }

private:
    tops_status_t status_;
};

inline void check(tops_status_t s) {
    if (s != TOPS_SUCCESS) throw Error(s, tops_last_error());
}

// Dense row-major descriptor (strides empty) or explicit strides, in elements.
inline tops_tensor_desc_t tensor(tops_dtype_t dtype, std::initializer_list<int64_t> dims,
                                 std::initializer_list<int64_t> strides = {}) {
    tops_tensor_desc_t d;
    const std::vector<int64_t> dv(dims), sv(strides);
    check(tops_tensor_desc_init(&d, dtype, int32_t(dv.size()), dv.data(), sv.empty() ? nullptr : sv.data()));
    return d;
}

class Context {
public:
    explicit Context(tops_backend_t backend = TOPS_BACKEND_DEFAULT, int device = 0) {
        check(tops_context_create(backend, device, &ctx_));
    }
    ~Context() { tops_context_destroy(ctx_); }
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;
    Context(Context&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
    Context& operator=(Context&& o) noexcept {
        std::swap(ctx_, o.ctx_);
        return *this;
    }

    tops_backend_t backend() const {
        tops_backend_t b;
        check(tops_context_get_backend(ctx_, &b));
        return b;
    }
    void set_stream(void* stream) { check(tops_context_set_stream(ctx_, stream)); }
    void set_num_threads(int n) { check(tops_context_set_num_threads(ctx_, n)); }
    tops_context_t get() const { return ctx_; }

private:
    tops_context_t ctx_ = nullptr;
};

class Op {
public:
    Op() = default;
    explicit Op(tops_op_t op) : op_(op) {}
    ~Op() { tops_op_destroy(op_); }
    Op(const Op&) = delete;
    Op& operator=(const Op&) = delete;
    Op(Op&& o) noexcept : op_(std::exchange(o.op_, nullptr)) {}
    Op& operator=(Op&& o) noexcept {
        std::swap(op_, o.op_);
        return *this;
    }

    static Op softmax(const Context& ctx, const tops_softmax_desc_t& d) {
        tops_op_t op = nullptr;
        check(tops_softmax_create(ctx.get(), &d, &op));
        return Op(op);
    }
    static Op transpose(const Context& ctx, const tops_transpose_desc_t& d) {
        tops_op_t op = nullptr;
        check(tops_transpose_create(ctx.get(), &d, &op));
        return Op(op);
    }
    static Op conv2d(const Context& ctx, const tops_conv2d_desc_t& d) {
        tops_op_t op = nullptr;
        check(tops_conv2d_create(ctx.get(), &d, &op));
        return Op(op);
    }
    static Op unpad(const Context& ctx, const tops_pad_desc_t& d) {
        tops_op_t op = nullptr;
        check(tops_unpad_create(ctx.get(), &d, &op));
        return Op(op);
    }
    static Op pad(const Context& ctx, const tops_pad_desc_t& d) {
        tops_op_t op = nullptr;
        check(tops_pad_create(ctx.get(), &d, &op));
        return Op(op);
    }

    size_t workspace_size() const {
        size_t n = 0;
        check(tops_op_workspace_size(op_, &n));
        return n;
    }
    const char* kernel_name() const { return tops_op_kernel_name(op_); }
    void execute(const Context& ctx, std::initializer_list<tops_arg_t> args, void* workspace = nullptr,
                 size_t workspace_bytes = 0) const {
        const std::vector<tops_arg_t> a(args);
        check(tops_op_execute(ctx.get(), op_, a.data(), a.size(), workspace, workspace_bytes));
    }
    tops_op_t get() const { return op_; }

private:
    tops_op_t op_ = nullptr;
};

}  // namespace tops

#endif  // TOPS_TOPS_HPP
