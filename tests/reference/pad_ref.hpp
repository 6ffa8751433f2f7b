// Reference unpad / pad: element-by-element copies over strided storages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tops_ref {

// A strided tensor in raw storage (strides in elements).
struct StridedView {
    void* data = nullptr;
    std::vector<int64_t> dims;
    std::vector<int64_t> strides;
};

// cu[0] = 0, cu[b + 1] = min(cu[b] + clamp(lengths[b], 0, seqlen), total).
std::vector<int32_t> pad_cu_seqlens(const std::vector<int32_t>& lengths, int64_t seqlen, int64_t total);

// packed[cu[b] + s, f...] = padded[b, s, f...] for s < cu[b + 1] - cu[b].
void unpad(const StridedView& padded, const StridedView& packed, const std::vector<int32_t>& cu, size_t elem_size);

// padded[b, s, f...] = packed[start + s, f...] when s < n and start + s < total,
// else all-zero bits; start = clamp(cu[b], 0, total), n = clamp(cu[b + 1] - start, 0, S).
void pad(const StridedView& packed, const StridedView& padded, const std::vector<int32_t>& cu, size_t elem_size);

}  // namespace tops_ref
