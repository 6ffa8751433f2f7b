// Tensor descriptor helpers and the validation rules every op shares.
#include <sstream>

#include "capi/internal.hpp"
#include "common/int_math.hpp"

namespace tops::capi {

const char* dtype_name(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F32: return "f32";
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        case TOPS_DTYPE_I32: return "i32";
        case TOPS_DTYPE_I8: return "i8";
        case TOPS_DTYPE_U8: return "u8";
        default: return "invalid";
    }
}

Status check_struct_size(const char* op, uint32_t got, size_t oldest) {
    if (got < oldest) {
        return Status(TOPS_ERROR_BAD_STRUCT_SIZE,
                      fmt(op, ": desc.struct_size ", got, " is smaller than the oldest known size ",
                          oldest, " (set it to sizeof the desc struct)"));
    }
    return Status::ok();
}

Status check_tensor(const std::string& what, const tops_tensor_desc_t& d) {
    if (dtype_size(d.dtype) == 0) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt(what, ".dtype ", int(d.dtype), " is not a valid dtype"));
    }
    if (d.rank < 0 || d.rank > kMaxRank) {
        return Status(TOPS_ERROR_BAD_RANK,
                      fmt(what, ".rank ", d.rank, " is outside [0, ", kMaxRank, "]"));
    }
    int64_t numel = 1;
    int64_t max_offset = 0;
    // Sum of dims[i] * strides[i] (elements), for every dim even when the
    // tensor is empty: backends form stride * dim products when they merge
    // dims, which so never overflow.
    int64_t full_extent = 0;
    for (int i = 0; i < d.rank; ++i) {
        if (d.dims[i] < 0) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt(what, ".dims[", i, "] = ", d.dims[i], " is negative"));
        }
        if (d.strides[i] < 0) {
            return Status(TOPS_ERROR_BAD_STRIDE,
                          fmt(what, ".strides[", i, "] = ", d.strides[i], " is negative"));
        }
        if (__builtin_mul_overflow(numel, d.dims[i], &numel)) {
            return Status(TOPS_ERROR_BAD_SHAPE,
                          fmt(what, ": element count overflows int64 at dims[", i, "] = ", d.dims[i]));
        }
    }
    for (int i = 0; i < d.rank; ++i) {
        int64_t full = 0;
        if (__builtin_mul_overflow(d.dims[i], d.strides[i], &full) ||
            __builtin_add_overflow(full_extent, full, &full_extent)) {
            return Status(TOPS_ERROR_BAD_STRIDE, fmt(what, ": element offset overflows int64 at dims[", i, "] = ",
                                                     d.dims[i], " (strides[", i, "] = ", d.strides[i], ")"));
        }
    }
    if (numel > 0) {
        for (int i = 0; i < d.rank; ++i) {
            int64_t span = 0;
            if (__builtin_mul_overflow(d.dims[i] - 1, d.strides[i], &span) ||
                __builtin_add_overflow(max_offset, span, &max_offset)) {
                return Status(TOPS_ERROR_BAD_STRIDE,
                              fmt(what, ": largest element offset overflows int64 at dims[", i, "]"));
            }
        }
        int64_t bytes = 0;
        if (__builtin_add_overflow(max_offset, int64_t{1}, &bytes) ||
            __builtin_mul_overflow(bytes, int64_t(dtype_size(d.dtype)), &bytes)) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt(what, ": byte extent overflows int64"));
        }
    }
    return Status::ok();
}

Status check_no_self_overlap(const std::string& what, const TensorLayout& t) {
    if (t.numel() == 0) return Status::ok();
    int order[kMaxRank];
    int n = 0;
    for (int i = 0; i < t.rank; ++i) {
        if (t.dims[i] > 1) order[n++] = i;
    }
    for (int k = 1; k < n; ++k) {  // insertion sort by stride (n <= 8)
        for (int j = k; j > 0 && t.strides[order[j]] < t.strides[order[j - 1]]; --j) {
            const int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    }
    int64_t extent = 0;  // offsets [0, extent] are used by the dims seen so far
    for (int k = 0; k < n; ++k) {
        const int i = order[k];
        if (t.strides[i] <= extent) {
            return Status(TOPS_ERROR_BAD_STRIDE,
                          fmt(what, ": strides[", i, "] = ", t.strides[i],
                              " makes the output overlap itself (", describe(t), ")"));
        }
        extent += (t.dims[i] - 1) * t.strides[i];
    }
    return Status::ok();
}

int64_t byte_extent(const TensorLayout& t) {
    for (int i = 0; i < t.rank; ++i) {
        if (t.dims[i] == 0) return 0;  // (numel() of an expanded layout may overflow)
    }
    int64_t max_offset = 0;
    for (int i = 0; i < t.rank; ++i) max_offset += (t.dims[i] - 1) * t.strides[i];
    return (max_offset + 1) * int64_t(dtype_size(t.dtype));
}

Status expand_broadcast(const std::string& what, const TensorLayout& x, int fixed_one_axis,
                        TensorLayout* t) {
    if (t->rank != x.rank) {
        return Status(TOPS_ERROR_BAD_RANK, fmt(what, ".rank ", t->rank, " must equal x.rank ", x.rank));
    }
    for (int i = 0; i < x.rank; ++i) {
        if (i == fixed_one_axis) {
            if (t->dims[i] != 1) {
                return Status(TOPS_ERROR_BAD_SHAPE,
                              fmt(what, ".dims[", i, "] = ", t->dims[i], " must be 1 (the softmax axis)"));
            }
            t->dims[i] = x.dims[i];
            t->strides[i] = 0;
            continue;
        }
        if (t->dims[i] == x.dims[i]) continue;
        if (t->dims[i] != 1) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt(what, ".dims[", i, "] = ", t->dims[i],
                                                    " is neither 1 nor x.dims[", i, "] = ", x.dims[i]));
        }
        t->dims[i] = x.dims[i];
        t->strides[i] = 0;
    }
    return Status::ok();
}

Collapse collapse_dims(const TensorLayout& t, int begin, int end, int64_t* size, int64_t* stride) {
    int64_t n = 1;
    int inner = -1;  // the innermost dim of size > 1 seen so far
    int last = -1;   // the last (outermost so far) dim of size > 1 seen
    bool strides_differ = false;
    for (int i = end - 1; i >= begin; --i) {
        if (__builtin_mul_overflow(n, t.dims[i], &n)) return Collapse::too_large;
        if (t.dims[i] == 1) continue;
        if (inner < 0) inner = i;
        else if (!product_equals(t.strides[last], t.dims[last], t.strides[i])) strides_differ = true;
        last = i;
    }
    if (strides_differ) return Collapse::strides_differ;
    *size = n;
    *stride = inner < 0 ? 1 : t.strides[inner];
    return Collapse::ok;
}

Status check_same_dims(const std::string& what, const TensorLayout& t, const std::string& ref_name,
                       const TensorLayout& ref) {
    if (t.rank != ref.rank) {
        return Status(TOPS_ERROR_BAD_RANK, fmt(what, ".rank ", t.rank, " differs from ", ref_name, ".rank ", ref.rank));
    }
    for (int i = 0; i < t.rank; ++i) {
        if (t.dims[i] != ref.dims[i]) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt(what, ".dims[", i, "] = ", t.dims[i], " differs from ", ref_name,
                                                    ".dims[", i, "] = ", ref.dims[i]));
        }
    }
    return Status::ok();
}

std::string describe(const TensorLayout& t) {
    std::ostringstream os;
    os << dtype_name(t.dtype) << '[';
    for (int i = 0; i < t.rank; ++i) os << (i ? "," : "") << t.dims[i];
    os << "]{";
    for (int i = 0; i < t.rank; ++i) os << (i ? "," : "") << t.strides[i];
    os << '}';
    return os.str();
}

}  // namespace tops::capi

using tops::Status;

extern "C" {

TOPS_API size_t tops_dtype_size(tops_dtype_t dtype) { return tops::dtype_size(dtype); }

TOPS_API const char* tops_dtype_name(tops_dtype_t dtype) { return tops::capi::dtype_name(dtype); }

TOPS_API tops_status_t tops_tensor_desc_init(tops_tensor_desc_t* desc, tops_dtype_t dtype, int32_t rank,
                                             const int64_t* dims, const int64_t* strides) {
    TOPS_CAPI_GUARD({
        if (!desc) return tops::capi::report(Status(TOPS_ERROR_NULL_POINTER, "tops_tensor_desc_init: desc is NULL"));
        if (rank < 0 || rank > TOPS_MAX_RANK) {
            return tops::capi::report(Status(TOPS_ERROR_BAD_RANK,
                tops::fmt("tops_tensor_desc_init: rank ", rank, " is outside [0, ", TOPS_MAX_RANK, "]")));
        }
        if (rank > 0 && !dims) {
            return tops::capi::report(Status(TOPS_ERROR_NULL_POINTER, "tops_tensor_desc_init: dims is NULL"));
        }
        tops_tensor_desc_t d{};
        d.dtype = dtype;
        d.rank = rank;
        int64_t stride = 1;
        for (int i = rank - 1; i >= 0; --i) {
            d.dims[i] = dims[i];
            if (strides) {
                d.strides[i] = strides[i];
            } else {
                d.strides[i] = stride;
                if (dims[i] > 0 && __builtin_mul_overflow(stride, dims[i], &stride)) stride = 0;
            }
        }
        Status st = tops::capi::check_tensor("tops_tensor_desc_init: desc", d);
        if (!st.is_ok()) return tops::capi::report(st);
        *desc = d;
        return tops::capi::success();
    })
}

}  // extern "C"
