// How GEMM op creation chooses among cuBLASLt's candidate algorithms once
// they can be timed (gemm.cpp supplies the timing on scratch buffers).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tops::cuda {

struct AutotuneRules {
    int warmup;        // untimed calls per candidate and round
    int reps;          // timed calls per candidate and round (their median counts)
    int rounds;        // a candidate's best round counts
    int confirm_reps;  // calls each when a challenger is timed against candidate 0
    float min_gain;    // a challenger must be this much faster than candidate 0
};

// Picks among n candidates, 0 being the heuristic's own choice. run(i) is an
// untimed call of candidate i (false: it cannot run); time_one(i, rep, &ms)
// times one call after evicting L2. Candidate 0 stays unless another beats
// it by min_gain, and beats it again timed call by call against it (who goes
// first alternating): candidates timed one after another see different
// clocks. Returns the pick (-1 when none ran) and its time in *pick_ms.
template <class Run, class TimeOne>
int autotune_pick(int n, const AutotuneRules& rules, Run run, TimeOne time_one, float* pick_ms) {
    auto median = [](std::vector<float> v) {
        std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
        return v[v.size() / 2];
    };
    std::vector<float> ms(size_t(n), -1.0f);
    for (int round = 0; round < rules.rounds; ++round) {
        for (int i = 0; i < n; ++i) {
            if (round > 0 && ms[size_t(i)] < 0) continue;
            bool ok = true;
            for (int w = 0; w < rules.warmup && ok; ++w) ok = run(i);
            if (!ok) continue;
            std::vector<float> reps(size_t(rules.reps));
            for (int r = 0; r < rules.reps && ok; ++r) ok = time_one(i, r, &reps[size_t(r)]);
            float& best = ms[size_t(i)];
            best = !ok ? -1.0f : best < 0 ? median(reps) : std::min(best, median(reps));
        }
    }
    int pick = -1;
    for (int i = 0; i < n; ++i) {
        if (ms[size_t(i)] >= 0 && (pick < 0 || ms[size_t(i)] < ms[size_t(pick)])) pick = i;
    }
    if (pick > 0 && ms[0] >= 0 && ms[size_t(pick)] > ms[0] * (1.0f - rules.min_gain)) pick = 0;
    if (pick > 0 && ms[0] >= 0) {
        std::vector<float> first(size_t(rules.confirm_reps)), challenger(size_t(rules.confirm_reps));
        bool ok = true;
        for (int r = 0; r < rules.confirm_reps && ok; ++r) {
            float *a = &first[size_t(r)], *b = &challenger[size_t(r)];
            ok = r % 2 == 0 ? time_one(0, r, a) && time_one(pick, r, b) : time_one(pick, r, b) && time_one(0, r, a);
        }
        if (!ok || median(challenger) > median(first) * (1.0f - rules.min_gain)) pick = 0;
    }
    if (pick >= 0) *pick_ms = ms[size_t(pick)];
    return pick;
}

}  // namespace tops::cuda
