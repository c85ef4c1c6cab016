#pragma once
/// \file plan/split.hpp
/// From a split of a model's layers into stages to what the scheduler reads: the per-stage
/// `cost_model` (`stage_costs_of`), the `tune_problem` (`split_problem`), the memory a split
/// needs at least (`least_rank_memory`), and the split a user gets by default
/// (`default_split`: equal decoder layers per stage, everything before them on the first
/// stage, everything after them on the last).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"
#include "ppsched/plan/model.hpp"
#include "ppsched/tune/problem.hpp"

namespace ppsched {

/// The cost model of `m` split into stages of `stage_layers[s]` consecutive layers: each
/// stage's F, I, W (or B), activation and parameters are the sums over its layers (an empty
/// stage costs nothing). Every message between ranks costs the link's latency plus the
/// largest tensor sent across a stage boundary over the bandwidth (one message time for all:
/// the cost model's messages are uniform). Requires the sizes to sum to the layer count.
[[nodiscard]] inline cost_model stage_costs_of(const model_description& m,
                                               std::span<const int> stage_layers) {
    cost_model c;
    const bool split = m.splits();
    std::size_t at = 0;
    double largest_send = 0;
    for (std::size_t s = 0; s < stage_layers.size(); ++s) {
        const int count = stage_layers[s];
        PPSCHED_EXPECTS(count >= 0 && at + static_cast<std::size_t>(count) <= m.layers.size(),
                        "ppsched::stage_costs_of: the stage sizes exceed the model's ",
                        m.layers.size(), " layers");
        double f = 0, i = 0, w = 0, b = 0, act = 0, params = 0;
        for (int k = 0; k < count; ++k, ++at) {
            const model_layer& l = m.layers[at];
            f += l.forward;
            b += l.full_backward;
            if (split) {
                i += *l.backward_input;
                w += *l.backward_weight;
            }
            act += l.activation;
            params += l.parameters;
        }
        if (count > 0 && s + 1 < stage_layers.size())
            largest_send = std::max(largest_send, m.layers[at - 1].send);
        stage_costs sc;
        sc.forward = f;
        if (split) {
            sc.backward_input = i;
            sc.backward_weight = w;
        } else {
            sc.full_backward = b;
        }
        sc.activation = act;
        sc.parameters = params;
        c.per_stage.push_back(sc);
    }
    PPSCHED_EXPECTS(at == m.layers.size(), "ppsched::stage_costs_of: the stages hold ", at,
                    " layers but the model has ", m.layers.size());
    c.p2p_latency = m.p2p_latency;
    c.p2p_transfer = m.p2p_bandwidth > 0 ? largest_send / m.p2p_bandwidth : 0;
    PPSCHED_EXPECTS(std::isfinite(c.p2p_transfer) && c.p2p_transfer <= 1e300,
                    "ppsched::stage_costs_of: a message's time, the largest 'send' across a "
                    "stage boundary (",
                    largest_send, " MB) over 'p2p_bandwidth' (", m.p2p_bandwidth,
                    " GB/s), is too large");
    return c;
}

/// The scheduling problem of a split: `ranks` x `stages_per_rank` stages placed by
/// `placement`, the split's costs, the model's memory capacity as the limit, and a split
/// backward when every layer gives I and W.
[[nodiscard]] inline tune_problem split_problem(const model_description& m,
                                                std::span<const int> stage_layers, int ranks,
                                                int microbatches, int stages_per_rank,
                                                stage_placement placement) {
    PPSCHED_EXPECTS(static_cast<long long>(stage_layers.size()) ==
                        static_cast<long long>(ranks) * stages_per_rank,
                    "ppsched::split_problem: ", stage_layers.size(), " stages but ", ranks,
                    " ranks x ", stages_per_rank, " stages per rank");
    tune_problem p;
    p.ranks = ranks;
    p.microbatches = microbatches;
    p.stages_per_rank = stages_per_rank;
    p.placement = placement;
    p.costs = stage_costs_of(m, stage_layers);
    p.memory_limit = m.memory_capacity;
    p.backward = m.splits() ? backward_mode::split : backward_mode::fused;
    return p;
}

/// The least peak memory any order of the split needs on each rank: the rank's parameters
/// plus one microbatch's activations on each of its stages (tune's `least_memory`).
[[nodiscard]] inline std::vector<double> least_rank_memory(const model_description& m,
                                                           std::span<const int> stage_layers,
                                                           const config& cfg) {
    std::vector<double> out(static_cast<std::size_t>(cfg.ranks), 0);
    std::size_t at = 0;
    for (std::size_t s = 0; s < stage_layers.size(); ++s) {
        double need = 0;
        for (int k = 0; k < stage_layers[s]; ++k, ++at)
            need += m.layers[at].parameters + m.layers[at].activation;
        out[static_cast<std::size_t>(cfg.stage_to_rank(static_cast<int>(s)))] += need;
    }
    return out;
}

/// The split a user gets by default for `stages` stages: the decoder layers in equal runs
/// (the first `decoders % stages` stages one more), the layers before the first decoder on
/// the first stage and those after the last decoder on the last stage (Megatron's and
/// torchtitan's default: embedding first, head and loss last). Stages may be empty when there
/// are fewer decoders than stages. Requires `stages >= 1`.
[[nodiscard]] inline std::vector<int> default_split(const model_description& m, int stages) {
    PPSCHED_EXPECTS(stages >= 1, "ppsched::default_split: stages must be >= 1 (got ", stages, ")");
    const int n = static_cast<int>(m.layers.size());
    int first = n, last = -1;
    for (int i = 0; i < n; ++i)
        if (m.layers[static_cast<std::size_t>(i)].kind == layer_kind::decoder) {
            first = std::min(first, i);
            last = std::max(last, i);
        }
    std::vector<int> sizes(static_cast<std::size_t>(stages), 0);
    if (last < 0) { // no decoder: everything on the first stage
        sizes[0] = n;
        return sizes;
    }
    const int decoders = last - first + 1;
    for (int s = 0; s < stages; ++s)
        sizes[static_cast<std::size_t>(s)] = decoders / stages + (s < decoders % stages ? 1 : 0);
    sizes.front() += first;
    sizes.back() += n - 1 - last;
    return sizes;
}

} // namespace ppsched
