// Shape and stride math shared by capi and the backends. A TensorLayout is a
// validated copy of a tops_tensor_desc_t (dims >= 0, strides >= 0).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tops/tops.h"

namespace tops {

constexpr int kMaxRank = TOPS_MAX_RANK;

struct TensorLayout {
    tops_dtype_t dtype = TOPS_DTYPE_INVALID;
    int rank = 0;
    int64_t dims[kMaxRank] = {};
    int64_t strides[kMaxRank] = {};

    bool present() const { return dtype != TOPS_DTYPE_INVALID; }

    // 0 for an empty tensor without forming the product: the other dims of
    // an empty tensor may multiply past int64 (validation bounds only
    // non-empty extents).
    int64_t numel() const {
        for (int i = 0; i < rank; ++i) {
            if (dims[i] == 0) return 0;
        }
        int64_t n = 1;
        for (int i = 0; i < rank; ++i) n *= dims[i];
        return n;
    }

    // Dense row-major (strides of size-1 dims are ignored).
    bool is_contiguous() const {
        int64_t expect = 1;
        for (int i = rank - 1; i >= 0; --i) {
            if (dims[i] != 1 && strides[i] != expect) return false;
            expect *= dims[i];
        }
        return true;
    }

    // Element offset of a multi-index.
    int64_t offset(const int64_t* idx) const {
        int64_t off = 0;
        for (int i = 0; i < rank; ++i) off += idx[i] * strides[i];
        return off;
    }
};

inline TensorLayout layout_from_desc(const tops_tensor_desc_t& d) {
    TensorLayout t;
    t.dtype = d.dtype;
    t.rank = d.rank;
    for (int i = 0; i < d.rank && i < kMaxRank; ++i) {
        t.dims[i] = d.dims[i];
        t.strides[i] = d.strides[i];
    }
    return t;
}

inline size_t dtype_size(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F32: return 4;
        case TOPS_DTYPE_F16: return 2;
        case TOPS_DTYPE_BF16: return 2;
        case TOPS_DTYPE_I32: return 4;
        case TOPS_DTYPE_I8: return 1;
        case TOPS_DTYPE_U8: return 1;
        default: return 0;
    }
}

inline bool is_float_dtype(tops_dtype_t dt) {
    return dt == TOPS_DTYPE_F32 || dt == TOPS_DTYPE_F16 || dt == TOPS_DTYPE_BF16;
}

}  // namespace tops
