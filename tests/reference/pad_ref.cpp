// Reference unpad / pad: one element copy (or zero) per padded element.
#include "reference/pad_ref.hpp"

#include <algorithm>
#include <cstring>

namespace tops_ref {
namespace {

// Calls f(feature offset in a, in b) for every feature multi-index; a's
// feature dims start at a_first, b's at b_first.
template <class F>
void for_each_feature(const StridedView& a, size_t a_first, const StridedView& b, size_t b_first, F&& f) {
    const size_t nf = a.dims.size() - a_first;
    std::vector<int64_t> idx(nf, 0);
    for (size_t k = 0; k < nf; ++k) {
        if (a.dims[a_first + k] == 0) return;
    }
    for (;;) {
        int64_t ao = 0, bo = 0;
        for (size_t k = 0; k < nf; ++k) {
            ao += idx[k] * a.strides[a_first + k];
            bo += idx[k] * b.strides[b_first + k];
        }
        f(ao, bo);
        size_t k = nf;
        for (;;) {
            if (k == 0) return;
            --k;
            if (++idx[k] < a.dims[a_first + k]) break;
            idx[k] = 0;
        }
    }
}

}  // namespace

std::vector<int32_t> pad_cu_seqlens(const std::vector<int32_t>& lengths, int64_t seqlen, int64_t total) {
    std::vector<int32_t> cu(lengths.size() + 1, 0);
    int64_t acc = 0;
    for (size_t b = 0; b < lengths.size(); ++b) {
        acc = std::min(acc + std::clamp<int64_t>(lengths[b], 0, seqlen), total);
        cu[b + 1] = int32_t(acc);
    }
    return cu;
}

void unpad(const StridedView& padded, const StridedView& packed, const std::vector<int32_t>& cu, size_t elem_size) {
    auto* src = static_cast<const unsigned char*>(padded.data);
    auto* dst = static_cast<unsigned char*>(packed.data);
    for (int64_t b = 0; b < padded.dims[0]; ++b) {
        for (int64_t s = 0; s < cu[size_t(b) + 1] - cu[size_t(b)]; ++s) {
            const int64_t so = b * padded.strides[0] + s * padded.strides[1];
            const int64_t d0 = (cu[size_t(b)] + s) * packed.strides[0];
            for_each_feature(padded, 2, packed, 1, [&](int64_t a, int64_t c) {
                std::memcpy(dst + size_t(d0 + c) * elem_size, src + size_t(so + a) * elem_size, elem_size);
            });
        }
    }
}

void pad(const StridedView& packed, const StridedView& padded, const std::vector<int32_t>& cu, size_t elem_size) {
    auto* src = static_cast<const unsigned char*>(packed.data);
    auto* dst = static_cast<unsigned char*>(padded.data);
    const int64_t total = packed.dims[0], seqlen = padded.dims[1];
    for (int64_t b = 0; b < padded.dims[0]; ++b) {
        const int64_t start = std::clamp<int64_t>(cu[size_t(b)], 0, total);
        const int64_t n = std::clamp<int64_t>(int64_t(cu[size_t(b) + 1]) - start, 0, seqlen);
        for (int64_t s = 0; s < seqlen; ++s) {
            const bool valid = s < n && start + s < total;
            const int64_t d0 = b * padded.strides[0] + s * padded.strides[1];
            const int64_t s0 = (start + s) * packed.strides[0];
            for_each_feature(padded, 2, packed, 1, [&](int64_t a, int64_t c) {
                unsigned char* out = dst + size_t(d0 + a) * elem_size;
                if (valid) {
                    std::memcpy(out, src + size_t(s0 + c) * elem_size, elem_size);
                } else {
                    std::memset(out, 0, elem_size);
                }
            });
        }
    }
}

}  // namespace tops_ref
