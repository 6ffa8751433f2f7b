// The BERT encoder example's model: sizes, the deterministic weights and
// inputs (the same generator is written in bench/bert_torch.py, so PyTorch
// rebuilds identical tensors from the seed), host-side dtype rounding, and
// the fp64 reference the CPU-only run verifies against.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tops/tops.h"

namespace bert {

struct Config {
    int64_t layers = 12;
    int64_t hidden = 768;
    int64_t heads = 12;
    int64_t ffn = 3072;
    int64_t batch = 32;
    int64_t seqlen = 128;
    int64_t min_len = 64;  // lengths uniform in [min_len, seqlen]
    uint64_t seed = 1;
    double ln_eps = 1e-12;  // BERT's LayerNorm epsilon
    int64_t head_dim() const { return hidden / heads; }
};

// ---------------------------------------------------------------- generator
// value(stream, i) = uniform in [-1, 1) with 24 random bits, from a
// counter-based hash (splitmix64's finalizer) of (seed, stream, i): any
// element can be produced independently, in any language, bit for bit.
inline uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

inline float uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    const uint64_t key = (seed << 48) ^ (stream << 32) ^ i;  // seed < 2^16, stream < 2^16, i < 2^32
    return float(double(mix64(key) >> 40) / double(1 << 23) - 1.0);
}

// Streams: 1 lengths, 2 input, 16 + 16 * layer + k for the k-th tensor of a layer.
constexpr uint64_t kStreamLengths = 1;
constexpr uint64_t kStreamInput = 2;
inline uint64_t layer_stream(int64_t layer, int k) { return 16 + 16 * uint64_t(layer) + uint64_t(k); }

// Weight scales: matrices uniform in [-0.04, 0.04) (std 0.023, about BERT's
// 0.02 initialization), the FFN down projection [-0.02, 0.02); biases and
// LayerNorm shifts [-0.1, 0.1); LayerNorm scales 1 + [-0.1, 0.1).
constexpr float kWeightScale = 0.04f;
constexpr float kDownScale = 0.02f;
constexpr float kBiasScale = 0.1f;

// Per-batch lengths: min_len + floor(u01 * (seqlen - min_len + 1)), u01 in [0, 1).
inline std::vector<int32_t> make_lengths(const Config& c) {
    std::vector<int32_t> len(size_t(c.batch));
    const int64_t span = c.seqlen - c.min_len + 1;
    for (int64_t b = 0; b < c.batch; ++b) {
        const double u01 = (double(uniform(c.seed, kStreamLengths, uint64_t(b))) + 1.0) * 0.5;
        int64_t l = c.min_len + int64_t(u01 * double(span));
        if (l > c.seqlen) l = c.seqlen;
        len[size_t(b)] = int32_t(l);
    }
    return len;
}

// ---------------------------------------------------------------- dtypes
// f32 -> f16 / bf16 bits, round to nearest even (what numpy and torch do).
inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

inline float bf16_to_f32(uint16_t h) {
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline uint16_t f32_to_f16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
    if (abs < 0x38800000u) {                                   // below 2^-14: subnormal or zero
        const int shift = 126 - int(abs >> 23);                // value in units of 2^-24 is mant >> shift
        if (shift > 24) return uint16_t(sign);
        const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t half_ulp = 1u << (shift - 1);
        uint32_t r = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1);
        if (rem > half_ulp || (rem == half_ulp && (r & 1u))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = abs - 0x38000000u;  // rebias the exponent (127 -> 15)
    r += 0xfffu + ((r >> 13) & 1u);
    return uint16_t(sign | (r >> 13));
}

inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    float f;
    if (exp == 0) {
        f = std::ldexp(float(mant), -24);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        u |= sign;
        std::memcpy(&f, &u, 4);
        return f;
    }
    const uint32_t u = sign | (exp == 31 ? 0x7f800000u | (mant << 13) : ((exp + 112) << 23) | (mant << 13));
    std::memcpy(&f, &u, 4);
    return f;
}

inline size_t dtype_bytes(tops_dtype_t dt) { return dt == TOPS_DTYPE_F32 ? 4 : 2; }

// Rounds every value to dtype in place and returns its storage bytes.
inline std::vector<uint8_t> to_storage(std::vector<float>& v, tops_dtype_t dt) {
    std::vector<uint8_t> out(v.size() * dtype_bytes(dt));
    for (size_t i = 0; i < v.size(); ++i) {
        if (dt == TOPS_DTYPE_F32) {
            std::memcpy(out.data() + 4 * i, &v[i], 4);
            continue;
        }
        const uint16_t h = dt == TOPS_DTYPE_F16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
        v[i] = dt == TOPS_DTYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);
        std::memcpy(out.data() + 2 * i, &h, 2);
    }
    return out;
}

inline std::vector<float> from_storage(const std::vector<uint8_t>& s, tops_dtype_t dt) {
    std::vector<float> v(s.size() / dtype_bytes(dt));
    for (size_t i = 0; i < v.size(); ++i) {
        if (dt == TOPS_DTYPE_F32) {
            std::memcpy(&v[i], s.data() + 4 * i, 4);
            continue;
        }
        uint16_t h;
        std::memcpy(&h, s.data() + 2 * i, 2);
        v[i] = dt == TOPS_DTYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    return v;
}

// ---------------------------------------------------------------- weights
// One layer in PyTorch's nn.Linear convention: a weight is [out, in] row-major.
enum TensorId : int {
    kWqkv,  // [3H, H]: rows Q (heads x head_dim), then K, then V
    kBqkv,  // [3H]
    kWo,    // [H, H]
    kBo,    // [H]
    kLn1G,  // [H]
    kLn1B,  // [H]
    kW1,    // [FFN, H]
    kB1,    // [FFN]
    kW2,    // [H, FFN]
    kB2,    // [H]
    kLn2G,  // [H]
    kLn2B,  // [H]
    kNumTensors
};

struct LayerWeights {
    std::vector<float> t[kNumTensors];
};

// kind: 0 matrix, 1 down matrix, 2 bias/shift, 3 LayerNorm scale.
inline std::vector<float> make_tensor(const Config& c, int64_t layer, int k, int64_t n, int kind) {
    std::vector<float> v(static_cast<size_t>(n));
    const uint64_t stream = layer_stream(layer, k);
    for (int64_t i = 0; i < n; ++i) {
        const float u = uniform(c.seed, stream, uint64_t(i));
        switch (kind) {
            case 0: v[size_t(i)] = u * kWeightScale; break;
            case 1: v[size_t(i)] = u * kDownScale; break;
            case 2: v[size_t(i)] = u * kBiasScale; break;
            default: v[size_t(i)] = 1.0f + u * kBiasScale; break;
        }
    }
    return v;
}

// Layer weights in f32, each value already rounded to dtype.
inline LayerWeights make_layer(const Config& c, int64_t layer, tops_dtype_t dt) {
    const int64_t H = c.hidden, F = c.ffn;
    LayerWeights w;
    const struct {
        int64_t n;
        int kind;
    } spec[kNumTensors] = {{3 * H * H, 0}, {3 * H, 2}, {H * H, 0}, {H, 2}, {H, 3}, {H, 2},
                  {F * H, 0},     {F, 2},     {H * F, 1}, {H, 2}, {H, 3}, {H, 2}};
    for (int k = 0; k < kNumTensors; ++k) {
        w.t[k] = make_tensor(c, layer, k, spec[k].n, spec[k].kind);
        to_storage(w.t[k], dt);
    }
    return w;
}

// The padded input [B, S, H], rounded to dtype.
inline std::vector<float> make_input(const Config& c, tops_dtype_t dt) {
    std::vector<float> x(size_t(c.batch * c.seqlen * c.hidden));
    for (size_t i = 0; i < x.size(); ++i) x[i] = uniform(c.seed, kStreamInput, uint64_t(i));
    to_storage(x, dt);
    return x;
}

// fp64 reference of the encoder on one sequence: x is [len, H] (dtype-rounded
// values), weights as above; returns [len, H]. f64 math throughout.
std::vector<double> reference_sequence(const Config& c, const std::vector<LayerWeights>& layers,
                                       const std::vector<double>& x, int64_t len);

}  // namespace bert
