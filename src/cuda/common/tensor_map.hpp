// Host side of TMA: the driver's cuTensorMapEncodeTiled (looked up once
// through the runtime, so the plugin does not link libcuda), one encoder of
// tiled tensor maps, and its 128-byte-swizzled 16-bit form the sm_90a
// wgmma kernels load and store through.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "common/status.hpp"
#include "tops/tops.h"

namespace tops::cuda {

// TMA takes global addresses aligned to 16 bytes.
constexpr uintptr_t kTmaAddressAlign = 16;
inline bool tma_aligned(std::initializer_list<const void*> ptrs) {
    for (const void* p : ptrs) {
        if (reinterpret_cast<uintptr_t>(p) % kTmaAddressAlign != 0) return false;
    }
    return true;
}

// A 16-byte aligned address that is never read: plans encode their tensor
// maps with it at creation, so strides TMA cannot take show before execute.
inline const void* tma_stand_in_address() {
    alignas(kTmaAddressAlign) static const unsigned char stand_in[kTmaAddressAlign] = {};
    return stand_in;
}

// Byte strides, for cuTensorMapEncodeTiled, of the n outer dims (extent[i],
// element stride stride[i]) of a 16-bit tensor whose innermost dim of
// inner_extent elements has unit stride. A dim of one element gets a packed
// stride (its stride does not matter, and TMA needs one it can take); false
// when a stride is not a positive multiple of 16 bytes.
inline bool tma_outer_strides_16bit(int64_t inner_extent, int n, const int64_t* extent, const int64_t* stride,
                                    cuuint64_t* out) {
    constexpr int64_t kElemBytes = 2;
    int64_t packed = inner_extent;
    for (int i = 0; i < n; ++i) {
        const int64_t s = extent[i] <= 1 ? packed : stride[i];
        if (s <= 0 || (s * kElemBytes) % int64_t(kTmaAddressAlign) != 0) return false;
        out[i] = cuuint64_t(s * kElemBytes);
        packed = s * extent[i];
    }
    return true;
}

inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
        }
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }();
    return fn;
}

// Tensor maps are at most 5-D.
constexpr int kTmaMaxRank = 5;

// A rank-`rank` tensor of `type` (dims innermost first, unit innermost
// stride, strides[i] in bytes for dim i + 1) -> tensor map of `box` boxes
// with `swizzle`; `what` names the caller in the error.
inline Status encode_tensor_map(CUtensorMap* map, CUtensorMapDataType type, const void* ptr, int rank,
                                const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                CUtensorMapSwizzle swizzle, const char* what) {
    const cuuint32_t elem_strides[kTmaMaxRank] = {1, 1, 1, 1, 1};
    const CUresult r = tensor_map_encoder()(map, type, cuuint32_t(rank), const_cast<void*>(ptr), dims, strides, box,
                                            elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return Status(TOPS_ERROR_DEVICE, fmt(what, ": cuTensorMapEncodeTiled failed (", int(r), ")"));
    return Status::ok();
}

// The 128-byte-swizzled f16 / bf16 maps the wgmma kernels load and store through.
inline Status encode_tensor_map_sw128(CUtensorMap* map, tops_dtype_t dtype, const void* ptr, int rank,
                                      const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                      const char* what) {
    return encode_tensor_map(map,
                             dtype == TOPS_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                             ptr, rank, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B, what);
}

}  // namespace tops::cuda
