// Flash attention forward on the CPU (attention_<dtype>_flash_<rows>x<nv*lanes>_<isa>).
//
// Strategy: one work item is (batch, query head, tile of BQ queries). The
// item's queries are packed once, transposed and pre-scaled, into Q^T
// (head_dim, BQ); the keys are then streamed in tiles of BK with the online
// softmax (running max m and sum l per query, O rescaled by exp(m_old - m_new)
// before each P V update), so the Sq x Sk score matrix never exists: all that
// a thread holds is Q^T, O^T (head_dim, BQ) and one S^T tile (BK, BQ).
//
// Scores are computed transposed, S^T = K Q^T, with query lanes along the SIMD
// vectors. That choice removes every transpose from the inner loops:
//   S^T = K Q^T:    a register tile of `rows` keys x nv vectors of queries; per
//                   head-dim step, one broadcast per key row (K read in place,
//                   row by row, any row stride) and nv aligned Q^T loads;
//   softmax:        per query lane, elementwise over key rows (max, exp2, sum),
//                   no horizontal reductions; the tile max is folded into the
//                   S^T store;
//   O^T += V^T P^T: a register tile of `rows` head-dim rows x nv vectors of
//                   queries; per key step one broadcast per head-dim row (V
//                   row k read in place: the rows are contiguous in memory)
//                   and nv aligned P^T loads; the rescale by exp2(m_old - m_new)
//                   happens when the accumulators are loaded.
// K and V are read where they are when they are f32 with a unit head-dim
// stride; otherwise each tile is converted (f16 / bf16 -> f32) into the
// thread's scratch. O is written once per item (O^T / l, transposed back).
//
// Masking: causal is a window with right bound 0 (bottom-right aligned). Key
// tiles outside the band of the whole query tile are never visited; tiles
// inside the band of every query skip the mask; only edge tiles compare key
// and query indices. log2(e) is folded into the Q scale so the exponentials
// are exp2 (exp_simd.hpp: a degree-7 polynomial on the reduced argument).
//
// Threads take items dynamically (causal items differ in cost); items of one
// (batch, head) are adjacent, so concurrently running threads share K/V in
// cache, and each head's last query tiles (the most keys when causal) go
// first.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/int_math.hpp"
#include "cpu/attention_kernels.hpp"
#include "cpu/isa_arch.hpp"
#include "cpu/kernels/exp_simd.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

constexpr AttentionTile kTile = attention_tile(kIsa);
constexpr int kRows = kTile.rows;
constexpr int kNv = kTile.nv;
constexpr int kBq = kTile.bq;
constexpr int kBk = kTile.bk;
constexpr int kBlockQ = kNv * kLanes;      // queries of one register tile
constexpr int kQBlocks = kBq / kBlockQ;    // register tiles across an item's queries
constexpr int kQVecs = kBq / kLanes;       // vectors across an item's queries
static_assert(kTile.lanes == kLanes, "tile traits assume this ISA's f32 lanes");
static_assert(kBq % kBlockQ == 0, "the query tile is a whole number of register tiles");
static_assert(kRows * kNv + kNv + 1 <= kVectorRegisters, "register tile exceeds the register file");

constexpr float kLn2 = 0.69314718055994531f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

#define TOPS_ATTN_INLINE inline __attribute__((always_inline))

int32_t clamp_i32(int64_t v) {
    return int32_t(std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}

// One thread's scratch (see AttentionWorkspaceLayout).
struct Scratch {
    float* qt;     // (head_dim, BQ)
    float* ot;     // (head_dim, BQ)
    float* st;     // (BK, BQ)
    float* m;      // (BQ) running max, log2 units
    float* l;      // (BQ) running sum
    float* kpack;  // (BK, head_dim)
    float* vpack;  // (BK, head_dim)
};

Scratch scratch_for(const AttentionArgs& a, int tid) {
    unsigned char* base = a.ws + a.ws_layout.per_thread * size_t(tid);
    Scratch s;
    s.qt = reinterpret_cast<float*>(base + a.ws_layout.qt);
    s.ot = reinterpret_cast<float*>(base + a.ws_layout.ot);
    s.st = reinterpret_cast<float*>(base + a.ws_layout.st);
    s.m = reinterpret_cast<float*>(base + a.ws_layout.stats);
    s.l = s.m + kBq;
    s.kpack = reinterpret_cast<float*>(base + a.ws_layout.kpack);
    s.vpack = reinterpret_cast<float*>(base + a.ws_layout.vpack);
    return s;
}

// Which (key - query) offsets are visible on an edge tile: key j is visible
// to query i when lo <= j - i <= hi.
struct Band {
    int32_t lo, hi;
};

// ------------------------------------------------------------------ packing

// Rows [i0, i0 + nq) of Q (row stride rs, head-dim stride ds) -> Q^T
// (head_dim, BQ) times qscale; columns past nq are 0.
template <tops_dtype_t DT>
void pack_qt(const storage_t<DT>* q, int64_t rs, int64_t ds, int64_t nq, int64_t dim, float qscale, float* qt) {
    for (int64_t d = 0; d < dim; ++d) {
        float* dst = qt + d * kBq;
        for (int64_t i = 0; i < nq; ++i) dst[i] = to_float<DT>(q[i * rs + d * ds]) * qscale;
        for (int64_t i = nq; i < kBq; ++i) dst[i] = 0.0f;
    }
}

// kb rows of K or V (row stride rs, head-dim stride ds) -> (kb, head_dim) f32.
template <tops_dtype_t DT>
void pack_rows(const storage_t<DT>* src, int64_t rs, int64_t ds, int64_t kb, int64_t dim, float* dst) {
    for (int64_t k = 0; k < kb; ++k) {
        const storage_t<DT>* row = src + k * rs;
        float* out = dst + k * dim;
        if (ds == 1) {
            int64_t d = 0;
            for (; d + kLanes <= dim; d += kLanes) load<DT>(row + d).store_unaligned(out + d);
            for (; d < dim; ++d) out[d] = to_float<DT>(row[d]);
        } else {
            for (int64_t d = 0; d < dim; ++d) out[d] = to_float<DT>(row[d * ds]);
        }
    }
}

// ------------------------------------------------------------------ S^T = K Q^T

// R key rows (k, row stride k_rs) x the item's queries: S^T rows and the
// running tile max per query vector. MASKED compares key and query indices
// (key_pos is the first row's key index minus the item's first query index).
template <int R, bool MASKED>
TOPS_ATTN_INLINE void scores_rows(const float* __restrict k, int64_t k_rs, const float* __restrict qt, int64_t dim,
                                  float* __restrict st, VecF* tile_max, int64_t key_pos, Band band) {
    static_assert(R >= 1 && R <= kRows, "register rows");
    const float* kr[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) kr[r] = k + r * k_rs;
    for (int qb = 0; qb < kQBlocks; ++qb) {
        VecF acc[R][kNv];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
            for (int v = 0; v < kNv; ++v) acc[r][v] = VecF(0.0f);
        }
        const float* b = qt + qb * kBlockQ;
        for (int64_t d = 0; d < dim; ++d) {
            VecF bv[kNv];
#pragma GCC unroll 8
            for (int v = 0; v < kNv; ++v) bv[v] = VecF::load_aligned(b + d * kBq + v * kLanes);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const VecF ar(kr[r][d]);
#pragma GCC unroll 8
                for (int v = 0; v < kNv; ++v) acc[r][v] = xsimd::fma(ar, bv[v], acc[r][v]);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
            for (int v = 0; v < kNv; ++v) {
                VecF s = acc[r][v];
                if constexpr (MASKED) {
                    alignas(64) int32_t iota[kLanes];
                    for (int i = 0; i < kLanes; ++i) iota[i] = i;
                    // j - i for the lanes of this vector
                    const VecI diff = VecI(int32_t(key_pos + r - qb * kBlockQ - v * kLanes)) - VecI::load_aligned(iota);
                    const BoolF visible = xsimd::bool_cast((diff >= VecI(band.lo)) & (diff <= VecI(band.hi)));
                    s = xsimd::select(visible, s, VecF(kNegInf));
                }
                s.store_aligned(st + r * kBq + qb * kBlockQ + v * kLanes);
                tile_max[qb * kNv + v] = xsimd::max(tile_max[qb * kNv + v], s);
            }
        }
    }
}

template <bool MASKED>
void scores_tile(const float* k, int64_t k_rs, const float* qt, int64_t dim, int64_t kb, float* st, VecF* tile_max,
                 int64_t key_pos, Band band) {
    int64_t r0 = 0;
    for (; r0 + kRows <= kb; r0 += kRows) {
        scores_rows<kRows, MASKED>(k + r0 * k_rs, k_rs, qt, dim, st + r0 * kBq, tile_max, key_pos + r0, band);
    }
    const int rest = int(kb - r0);
    const float* kk = k + r0 * k_rs;
    float* ss = st + r0 * kBq;
    switch (rest) {
        case 0: break;
        case 1: scores_rows<1, MASKED>(kk, k_rs, qt, dim, ss, tile_max, key_pos + r0, band); break;
        case 2: scores_rows<2 < kRows ? 2 : 1, MASKED>(kk, k_rs, qt, dim, ss, tile_max, key_pos + r0, band); break;
        case 3: scores_rows<3 < kRows ? 3 : 1, MASKED>(kk, k_rs, qt, dim, ss, tile_max, key_pos + r0, band); break;
        case 4: scores_rows<4 < kRows ? 4 : 1, MASKED>(kk, k_rs, qt, dim, ss, tile_max, key_pos + r0, band); break;
        default: scores_rows<5 < kRows ? 5 : 1, MASKED>(kk, k_rs, qt, dim, ss, tile_max, key_pos + r0, band); break;
    }
}
static_assert(kRows <= 6, "scores_tile / pv_tile handle at most 5 leftover rows");

// ------------------------------------------------------------------ O^T = alpha O^T + V^T P^T

// R head-dim rows starting at v (row k of V at v + k * v_rs) over kb keys.
template <int R>
TOPS_ATTN_INLINE void pv_rows(const float* __restrict v, int64_t v_rs, const float* __restrict pt, int64_t kb,
                              const VecF* alpha, float* __restrict ot) {
    static_assert(R >= 1 && R <= kRows, "register rows");
    for (int qb = 0; qb < kQBlocks; ++qb) {
        VecF acc[R][kNv];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
            for (int c = 0; c < kNv; ++c) {
                acc[r][c] = VecF::load_aligned(ot + r * kBq + qb * kBlockQ + c * kLanes) * alpha[qb * kNv + c];
            }
        }
        const float* b = pt + qb * kBlockQ;
        const float* vr = v;
        for (int64_t k = 0; k < kb; ++k) {
            VecF bv[kNv];
#pragma GCC unroll 8
            for (int c = 0; c < kNv; ++c) bv[c] = VecF::load_aligned(b + k * kBq + c * kLanes);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const VecF ar(vr[r]);
#pragma GCC unroll 8
                for (int c = 0; c < kNv; ++c) acc[r][c] = xsimd::fma(ar, bv[c], acc[r][c]);
            }
            vr += v_rs;
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
            for (int c = 0; c < kNv; ++c) acc[r][c].store_aligned(ot + r * kBq + qb * kBlockQ + c * kLanes);
        }
    }
}

void pv_tile(const float* v, int64_t v_rs, const float* pt, int64_t kb, int64_t dim, const VecF* alpha, float* ot) {
    int64_t d0 = 0;
    for (; d0 + kRows <= dim; d0 += kRows) pv_rows<kRows>(v + d0, v_rs, pt, kb, alpha, ot + d0 * kBq);
    const int rest = int(dim - d0);
    switch (rest) {
        case 0: break;
        case 1: pv_rows<1>(v + d0, v_rs, pt, kb, alpha, ot + d0 * kBq); break;
        case 2: pv_rows<2 < kRows ? 2 : 1>(v + d0, v_rs, pt, kb, alpha, ot + d0 * kBq); break;
        case 3: pv_rows<3 < kRows ? 3 : 1>(v + d0, v_rs, pt, kb, alpha, ot + d0 * kBq); break;
        case 4: pv_rows<4 < kRows ? 4 : 1>(v + d0, v_rs, pt, kb, alpha, ot + d0 * kBq); break;
        default: pv_rows<5 < kRows ? 5 : 1>(v + d0, v_rs, pt, kb, alpha, ot + d0 * kBq); break;
    }
}

// ------------------------------------------------------------------ online softmax

// After S^T of a tile: new running max, the rescale factor alpha of the old
// state, P^T = exp2(S^T - m) in place and the running sums.
void softmax_tile(float* st, int64_t kb, const VecF* tile_max, float* m, float* l, VecF* alpha) {
    VecF m_use[kQVecs], lsum[kQVecs];
    for (int c = 0; c < kQVecs; ++c) {
        const VecF m_old = VecF::load_aligned(m + c * kLanes);
        const VecF m_new = xsimd::max(m_old, tile_max[c]);
        // A query with no visible key so far keeps m = -inf; exponentiate
        // against 0 so -inf scores give 0, never NaN.
        m_use[c] = xsimd::select(m_new == VecF(kNegInf), VecF(0.0f), m_new);
        alpha[c] = exp2_nonpositive(m_old - m_use[c]);
        m_new.store_aligned(m + c * kLanes);
        lsum[c] = VecF(0.0f);
    }
    for (int64_t k = 0; k < kb; ++k) {
        float* row = st + k * kBq;
#pragma GCC unroll 16
        for (int c = 0; c < kQVecs; ++c) {
            const VecF p = exp2_nonpositive(VecF::load_aligned(row + c * kLanes) - m_use[c]);
            p.store_aligned(row + c * kLanes);
            lsum[c] += p;
        }
    }
    for (int c = 0; c < kQVecs; ++c) {
        xsimd::fma(VecF::load_aligned(l + c * kLanes), alpha[c], lsum[c]).store_aligned(l + c * kLanes);
    }
}

// ------------------------------------------------------------------ one item

template <tops_dtype_t DT>
void run_item(const AttentionArgs& a, const Scratch& s, int64_t b, int64_t h, int64_t tile) {
    using T = storage_t<DT>;
    int64_t q_row0 = 0, k_row0 = 0, sq = a.seqlen_q, sk = a.seqlen_k;
    if (a.cu_seqlens_q) {
        q_row0 = a.cu_seqlens_q[b];
        sq = a.cu_seqlens_q[b + 1] - q_row0;
        k_row0 = a.cu_seqlens_k[b];
        sk = a.cu_seqlens_k[b + 1] - k_row0;
    } else if (a.seqlens_k) {
        sk = std::clamp<int64_t>(a.seqlens_k[b], 0, a.seqlen_k);
    }
    const int64_t i0 = tile * kBq;
    if (i0 >= sq) return;
    const int64_t nq = std::min<int64_t>(kBq, sq - i0);
    const int64_t dim = a.head_dim;
    const int64_t hk = h / (a.heads / a.kv_heads);
    const T* q = static_cast<const T*>(a.q) + b * a.q_bs + (q_row0 + i0) * a.q_ss + h * a.q_hs;
    const T* k = static_cast<const T*>(a.k) + b * a.k_bs + k_row0 * a.k_ss + hk * a.k_hs;
    const T* v = static_cast<const T*>(a.v) + b * a.v_bs + k_row0 * a.v_ss + hk * a.v_hs;

    // Visible keys of query i: off + i - left <= j <= off + i + right.
    const int64_t off = sk - sq;
    const bool has_left = a.window_left >= 0, has_right = a.window_right >= 0;
    const int64_t i_last = i0 + nq - 1;
    const int64_t j_begin = has_left ? std::max<int64_t>(0, off + i0 - a.window_left) : 0;
    const int64_t j_end = has_right ? std::min<int64_t>(sk, off + i_last + a.window_right + 1) : sk;
    const Band band{has_left ? clamp_i32(off - a.window_left) : std::numeric_limits<int32_t>::min(),
                    has_right ? clamp_i32(off + a.window_right) : std::numeric_limits<int32_t>::max()};

    pack_qt<DT>(q, a.q_ss, a.q_ds, nq, dim, a.scale * kLog2e, s.qt);
    for (int64_t e = 0; e < dim * kBq; e += kLanes) VecF(0.0f).store_aligned(s.ot + e);
    for (int c = 0; c < kQVecs; ++c) {
        VecF(kNegInf).store_aligned(s.m + c * kLanes);
        VecF(0.0f).store_aligned(s.l + c * kLanes);
    }
    constexpr bool kF32 = DT == TOPS_DTYPE_F32;
    const bool k_direct = kF32 && a.k_ds == 1;
    const bool v_direct = kF32 && a.v_ds == 1;

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kBk) {
        const int64_t kb = std::min<int64_t>(kBk, j_end - j0);
        // Every key of [j0, j0 + kb) visible to every query of the item?
        const bool inside = (!has_left || j0 >= off + i_last - a.window_left) &&
                            (!has_right || j0 + kb - 1 <= off + i0 + a.window_right);
        const float* kt;
        int64_t k_rs;
        if (k_direct) {
            kt = reinterpret_cast<const float*>(k + j0 * a.k_ss);
            k_rs = a.k_ss;
        } else {
            pack_rows<DT>(k + j0 * a.k_ss, a.k_ss, a.k_ds, kb, dim, s.kpack);
            kt = s.kpack;
            k_rs = dim;
        }
        VecF tile_max[kQVecs];
        for (VecF& t : tile_max) t = VecF(kNegInf);
        if (inside) {
            scores_tile<false>(kt, k_rs, s.qt, dim, kb, s.st, tile_max, j0 - i0, band);
        } else {
            scores_tile<true>(kt, k_rs, s.qt, dim, kb, s.st, tile_max, j0 - i0, band);
        }
        VecF alpha[kQVecs];
        softmax_tile(s.st, kb, tile_max, s.m, s.l, alpha);
        const float* vt;
        int64_t v_rs;
        if (v_direct) {
            vt = reinterpret_cast<const float*>(v + j0 * a.v_ss);
            v_rs = a.v_ss;
        } else {
            pack_rows<DT>(v + j0 * a.v_ss, a.v_ss, a.v_ds, kb, dim, s.vpack);
            vt = s.vpack;
            v_rs = dim;
        }
        pv_tile(vt, v_rs, s.st, kb, dim, alpha, s.ot);
    }

    // O = O^T / l transposed back; no visible key: O = 0, LSE = -inf.
    T* o = static_cast<T*>(a.o) + b * a.o_bs + (q_row0 + i0) * a.o_ss + h * a.o_hs;
    for (int64_t i = 0; i < nq; ++i) {
        const float li = s.l[i];
        const float inv = li == 0.0f ? 0.0f : 1.0f / li;  // NaN l: NaN row
        T* row = o + i * a.o_ss;
        for (int64_t d = 0; d < dim; ++d) row[d * a.o_ds] = from_float<DT>(s.ot[d * kBq + i] * inv);
        if (a.lse) {
            a.lse[b * a.lse_bs + h * a.lse_hs + (q_row0 + i0 + i) * a.lse_ss] =
                li == 0.0f ? kNegInf : s.m[i] * kLn2 + std::log(li);
        }
    }
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <tops_dtype_t DT>
template <class A>
void AttentionFlashKernel<DT>::operator()(A, AttentionArgs a) const {
    const int64_t q_tiles = ceil_div(a.seqlen_q, TOPS_ISA_NS::kBq);
    const int64_t items = a.batch * a.heads * q_tiles;
    if (items == 0) return;
    const int threads = int(std::max<int64_t>(1, std::min<int64_t>(a.threads, items)));
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        const TOPS_ISA_NS::Scratch s = TOPS_ISA_NS::scratch_for(a, omp_get_thread_num());
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; ++it) {
            const int64_t bh = it / q_tiles;
            const int64_t tile = q_tiles - 1 - it % q_tiles;
            TOPS_ISA_NS::run_item<DT>(a, s, bh / a.heads, bh % a.heads, tile);
        }
    }
}

template void AttentionFlashKernel<TOPS_DTYPE_F32>::operator()<Arch>(Arch, AttentionArgs) const;
template void AttentionFlashKernel<TOPS_DTYPE_F16>::operator()<Arch>(Arch, AttentionArgs) const;
template void AttentionFlashKernel<TOPS_DTYPE_BF16>::operator()<Arch>(Arch, AttentionArgs) const;

}  // namespace tops::cpu
