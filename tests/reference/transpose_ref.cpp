// Reference transpose: one element copy per output multi-index.
#include <cstring>

#include "reference/reference.hpp"

namespace tops_ref {

void transpose(const void* x, const std::vector<int64_t>& x_dims, const std::vector<int64_t>& x_strides,
               void* y, const std::vector<int64_t>& y_strides, const std::vector<int>& perm,
               size_t elem_size) {
    const size_t rank = x_dims.size();
    std::vector<int64_t> y_dims(rank);
    for (size_t k = 0; k < rank; ++k) {
        y_dims[k] = x_dims[size_t(perm[k])];
        if (y_dims[k] == 0) return;
    }
    const auto* src = static_cast<const unsigned char*>(x);
    auto* dst = static_cast<unsigned char*>(y);
    std::vector<int64_t> i(rank, 0);  // index into y
    for (;;) {
        int64_t x_off = 0, y_off = 0;
        for (size_t k = 0; k < rank; ++k) {
            x_off += i[k] * x_strides[size_t(perm[k])];  // j[perm[k]] = i[k]
            y_off += i[k] * y_strides[k];
        }
        std::memcpy(dst + size_t(y_off) * elem_size, src + size_t(x_off) * elem_size, elem_size);
        size_t k = rank;
        while (k > 0) {
            --k;
            if (++i[k] < y_dims[k]) break;
            i[k] = 0;
            if (k == 0) return;
        }
        if (rank == 0) return;
    }
}

}  // namespace tops_ref
