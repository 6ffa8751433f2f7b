// fp64 references for the fused elementwise ops. Every input is given with
// its own dims (same rank as y, each dim y's or 1: broadcast) and row-major
// values.
#pragma once

#include <cstdint>
#include <vector>

namespace tops_ref {

enum class Act { none, relu, gelu_erf, gelu_tanh, silu };

struct BroadcastInput {
    std::vector<int64_t> dims;
    std::vector<double> values;
};

double activation(Act act, double v);

// y = act(x + bias); bias.dims empty = no bias.
std::vector<double> bias_act(const std::vector<int64_t>& y_dims, const BroadcastInput& x,
                             const BroadcastInput& bias, Act act);
// y = x > 0 ? x : slope * x.
std::vector<double> prelu(const std::vector<int64_t>& y_dims, const BroadcastInput& x,
                          const BroadcastInput& slope);
// y = sum_i coefs[i] * inputs[i].
std::vector<double> weighted_sum(const std::vector<int64_t>& y_dims, const std::vector<BroadcastInput>& inputs,
                                 const std::vector<double>& coefs);

}  // namespace tops_ref
