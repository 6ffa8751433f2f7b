// Host cost of the tensor maps the sm_90 kernels take per execute: the
// attention's four 4-D 128-byte-swizzled f16 maps encoded whole
// (cuTensorMapEncodeTiled, what execute does now) against a copy of maps
// encoded once with cuTensorMapReplaceAddress on each (what a plan holding
// encoded maps would do). Median of 21 rounds of 20000 iterations, ns per
// set of four maps. The maps of both forms are compared byte for byte.
// Build: g++ -O2 -std=c++17 -I include -I src -I /usr/local/cuda/include \
//        bench/tensor_map_encode_probe.cpp -L /usr/local/cuda/lib64 -lcudart
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cuda/common/tensor_map.hpp"

namespace {

using PFN_replace = CUresult (*)(CUtensorMap*, void*);
constexpr int kMaps = 4;
constexpr int kIters = 20000;
constexpr int kRounds = 21;

bool encode_set(CUtensorMap (&maps)[kMaps], void* const (&ptrs)[kMaps]) {
    // (D=64, S=2048, H=16, B=4), f16, box (64, 128, 1, 1): the attention's Q / K / V / O maps.
    const cuuint64_t dims[4] = {64, 2048, 16, 4};
    const cuuint64_t strides[3] = {64 * 2 * 16, 64 * 2, 64 * 2 * 16 * 2048};
    const cuuint32_t box[4] = {64, 128, 1, 1};
    for (int m = 0; m < kMaps; ++m) {
        if (!tops::cuda::encode_tensor_map_sw128(&maps[m], TOPS_DTYPE_F16, ptrs[m], 4, dims, strides, box, "probe")
                 .is_ok()) {
            return false;
        }
    }
    return true;
}

template <class F>
double median_ns(F&& body) {
    std::vector<double> t;
    for (int r = 0; r < kRounds; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kIters; ++i) body(i);
        const auto t1 = std::chrono::steady_clock::now();
        t.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kIters);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

}  // namespace

int main() {
    if (!tops::cuda::tensor_map_encoder()) return std::puts("no encoder"), 1;
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapReplaceAddress", &f, 12000, cudaEnableDefault, &q) !=
            cudaSuccess || q != cudaDriverEntryPointSuccess) {
        return std::puts("no cuTensorMapReplaceAddress"), 1;
    }
    const auto replace = reinterpret_cast<PFN_replace>(f);
    void* base = nullptr;
    if (cudaMalloc(&base, 1 << 20) != cudaSuccess) return std::puts("cudaMalloc failed"), 1;
    char* b = static_cast<char*>(base);
    void* const ptrs_a[kMaps] = {b, b + 4096, b + 8192, b + 12288};
    void* const ptrs_b[kMaps] = {b + 256, b + 4352, b + 8448, b + 12544};
    CUtensorMap tmpl[kMaps], enc[kMaps], rep[kMaps];
    if (!encode_set(tmpl, ptrs_a)) return std::puts("encode failed"), 1;
    // Correctness: the template with b's addresses swapped in equals b's maps encoded whole.
    std::memcpy(rep, tmpl, sizeof(rep));
    for (int m = 0; m < kMaps; ++m) replace(&rep[m], ptrs_b[m]);
    encode_set(enc, ptrs_b);
    std::printf("replaced maps equal encoded maps: %s\n", std::memcmp(rep, enc, sizeof(rep)) == 0 ? "yes" : "NO");
    volatile unsigned sink = 0;
    const double t_enc = median_ns([&](int i) {
        encode_set(enc, i & 1 ? ptrs_b : ptrs_a);
        sink = sink + reinterpret_cast<const unsigned char*>(enc)[i % sizeof(enc)];
    });
    const double t_rep = median_ns([&](int i) {
        std::memcpy(rep, tmpl, sizeof(rep));
        const auto& p = i & 1 ? ptrs_b : ptrs_a;
        for (int m = 0; m < kMaps; ++m) replace(&rep[m], p[m]);
        sink = sink + reinterpret_cast<const unsigned char*>(rep)[i % sizeof(rep)];
    });
    std::printf("four maps: encoded whole %.0f ns, copied + address replaced %.0f ns\n", t_enc, t_rep);
    cudaFree(base);
    return 0;
}
