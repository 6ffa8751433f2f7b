// Plain fp64 attention: every visible score, a max-shifted softmax, then the
// weighted sum of V rows. Written for clarity, not speed.
#include "reference/attention_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tops_ref {

AttentionResult attention(const AttentionProblem& p) {
    const int64_t H = p.heads, D = p.head_dim;
    const int64_t group = H / p.kv_heads;
    const int64_t right = p.causal ? 0 : p.window_right;
    AttentionResult r;
    r.o.assign(size_t(p.q_tokens * H * D), 0.0);
    r.lse.assign(size_t(H * p.q_tokens), 0.0);
    std::vector<double> s;
    std::vector<char> visible;
    for (size_t b = 0; b < p.q_start.size(); ++b) {
        const int64_t sq = p.q_len[b], sk = p.k_len[b];
        for (int64_t h = 0; h < H; ++h) {
            const int64_t hk = h / group;
            for (int64_t i = 0; i < sq; ++i) {
                const int64_t qt = p.q_start[b] + i;
                const double* q = &p.q[size_t((qt * H + h) * D)];
                s.assign(size_t(sk), 0.0);
                visible.assign(size_t(sk), 0);
                double m = -std::numeric_limits<double>::infinity();
                for (int64_t j = 0; j < sk; ++j) {
                    const int64_t diag = i + sk - sq;
                    if (right >= 0 && j > diag + right) continue;
                    if (p.window_left >= 0 && j < diag - p.window_left) continue;
                    const double* k = &p.k[size_t(((p.k_start[b] + j) * p.kv_heads + hk) * D)];
                    double dot = 0.0;
                    for (int64_t d = 0; d < D; ++d) dot += q[d] * k[d];
                    s[size_t(j)] = p.scale * dot;
                    visible[size_t(j)] = 1;
                    m = std::max(m, s[size_t(j)]);
                }
                double* o = &r.o[size_t((qt * H + h) * D)];
                double& lse = r.lse[size_t(h * p.q_tokens + qt)];
                if (m == -std::numeric_limits<double>::infinity()) {
                    lse = -std::numeric_limits<double>::infinity();
                    continue;
                }
                double l = 0.0;
                for (int64_t j = 0; j < sk; ++j) {
                    if (!visible[size_t(j)]) continue;
                    const double w = std::exp(s[size_t(j)] - m);
                    l += w;
                    const double* v = &p.v[size_t(((p.k_start[b] + j) * p.kv_heads + hk) * D)];
                    for (int64_t d = 0; d < D; ++d) o[d] += w * v[d];
                }
                for (int64_t d = 0; d < D; ++d) o[d] /= l;
                lse = m + std::log(l);
            }
        }
    }
    return r;
}

}  // namespace tops_ref
