// tops-bench op entries of padding removal: unpad (padded [B, S, F] -> packed
// [total, F] + cu_seqlens) and pad (back, padding rows zeroed). Memory-bound.
// The valid lengths are a fixed ramp from S down to S / 2 (ramp_length), so
// the bytes each call moves are exact: unpad reads and writes only the valid
// rows; pad reads the valid rows and writes every padded row (zeros too).
// The checks compare sampled rows bit for bit and cu_seqlens exactly.
#include <cstring>
#include <random>
#include <sstream>

#include "bench.hpp"

namespace bench {

namespace {

constexpr int kPadCheckRows = 256;  // padded rows compared

struct PadGeometry {
    int64_t batch, seq, features, total;  // total = sum of the ramp lengths
};

PadGeometry pad_geometry(const Case& c) {
    PadGeometry g{c.shape[0], c.shape[1], c.shape[2], 0};
    for (int64_t b = 0; b < g.batch; ++b) g.total += ramp_length(b, g.batch, g.seq);
    return g;
}

// --shape B,S,F. unpad: X padded, Y packed [B*S, F] (capacity; rows from total
// on are left alone), LENGTHS, CU_SEQLENS out. pad: X packed [total, F],
// CU_SEQLENS in, Y padded.
tops_status_t pad_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    if (c.shape.size() != 3) {
        *err = c.op + ": --shape must be B,S,F";
        return TOPS_ERROR_BAD_RANK;
    }
    const PadGeometry g = pad_geometry(c);
    const bool unpad = c.op == "unpad";
    const std::vector<int64_t> padded = {g.batch, g.seq, g.features};
    const std::vector<int64_t> packed = {unpad ? g.batch * g.seq : g.total, g.features};
    const std::vector<int64_t> lens = {g.batch}, cu = {g.batch + 1};
    if (unpad) {
        out->tensors.push_back({"padded", TOPS_ARG_X, c.dtype, padded, false, Fill::uniform});
        out->tensors.push_back({"packed", TOPS_ARG_Y, c.dtype, packed, true, Fill::none});
        out->tensors.push_back({"lengths", TOPS_ARG_LENGTHS, TOPS_DTYPE_I32, lens, false, Fill::ramp_lengths, g.seq});
        out->tensors.push_back({"cu_seqlens", TOPS_ARG_CU_SEQLENS, TOPS_DTYPE_I32, cu, true, Fill::none});
    } else {
        out->tensors.push_back({"packed", TOPS_ARG_X, c.dtype, packed, false, Fill::uniform});
        out->tensors.push_back({"padded", TOPS_ARG_Y, c.dtype, padded, true, Fill::none});
        out->tensors.push_back(
            {"cu_seqlens", TOPS_ARG_CU_SEQLENS, TOPS_DTYPE_I32, cu, false, Fill::ramp_cu_seqlens, g.seq});
    }
    const double row = double(g.features) * double(tops_dtype_size(c.dtype));
    const double index_bytes = 4.0 * double(g.batch + 1) + (unpad ? 4.0 * double(g.batch) : 0.0);
    out->bytes = row * double(g.total) + row * double(unpad ? g.total : g.batch * g.seq) + index_bytes;
    std::ostringstream a;
    a << "lengths S..S/2, " << g.total << " of " << g.batch * g.seq << " rows valid";
    out->args = a.str();

    tops_pad_desc_t d = tops_pad_desc_default();
    for (const TensorSpec& t : out->tensors) {
        tops_tensor_desc_t* dst = t.name == std::string("padded") ? &d.padded
                                : t.name == std::string("packed") ? &d.packed
                                : t.name == std::string("lengths") ? &d.lengths : &d.cu_seqlens;
        const tops_status_t s =
            tops_tensor_desc_init(dst, t.dtype, int32_t(t.dims.size()), t.dims.data(), nullptr);
        if (s != TOPS_SUCCESS) {
            *err = tops_last_error();
            return s;
        }
    }
    const tops_status_t s = unpad ? tops_unpad_create(ctx, &d, &out->op) : tops_pad_create(ctx, &d, &out->op);
    if (s != TOPS_SUCCESS) *err = tops_last_error();
    return s;
}

std::string pad_check(const Case& c, const OpInstance& inst, const HostTensors& host) {
    const PadGeometry g = pad_geometry(c);
    const bool unpad = c.op == "unpad";
    const size_t row = size_t(g.features) * tops_dtype_size(c.dtype);
    const unsigned char* padded = host[unpad ? 0 : 1].data();
    const unsigned char* packed = host[unpad ? 1 : 0].data();
    const unsigned char* cu_raw = host[unpad ? 3 : 2].data();
    std::vector<int32_t> cu(size_t(g.batch + 1));
    std::memcpy(cu.data(), cu_raw, cu.size() * 4);
    int64_t sum = 0;
    for (int64_t b = 0; b <= g.batch; ++b) {
        if (cu[size_t(b)] != sum) {
            return c.op + ": cu_seqlens[" + std::to_string(b) + "] = " + std::to_string(cu[size_t(b)]) +
                   ", expected " + std::to_string(sum);
        }
        if (b < g.batch) sum += ramp_length(b, g.batch, g.seq);
    }
    if (inst.tensors.empty() || g.batch * g.seq == 0) return "";
    const std::vector<unsigned char> zeros(row, 0);
    std::mt19937_64 rng(29);
    for (int k = 0; k < kPadCheckRows; ++k) {
        const int64_t b = int64_t(rng() % uint64_t(g.batch)), s = int64_t(rng() % uint64_t(g.seq));
        const bool valid = s < ramp_length(b, g.batch, g.seq);
        if (unpad && !valid) continue;  // padding rows are not copied
        const unsigned char* got =
            unpad ? packed + size_t(cu[size_t(b)] + s) * row : padded + size_t(b * g.seq + s) * row;
        const unsigned char* want = !valid ? zeros.data()
                                  : unpad ? padded + size_t(b * g.seq + s) * row
                                          : packed + size_t(cu[size_t(b)] + s) * row;
        if (std::memcmp(got, want, row) != 0) {
            return c.op + ": row (b " + std::to_string(b) + ", s " + std::to_string(s) + ") differs" +
                   (valid ? "" : " (padding row not zero)");
        }
    }
    return "";
}

}  // namespace

std::vector<OpEntry> pad_op_entries() {
    return {
        {"unpad", "padded [B,S,F] -> packed rows + cu_seqlens, --shape B,S,F (lengths S..S/2)", pad_create,
         pad_check},
        {"pad", "packed rows -> padded [B,S,F], padding zeroed, --shape B,S,F (lengths S..S/2)", pad_create,
         pad_check},
    };
}

}  // namespace bench
