#pragma once
/// \file algorithms/memory_timeline.hpp
/// `memory_timeline(sim, costs)`: each rank's activation memory over time, from a simulated
/// timeline, by the simulator's own rule (a forward allocates its stage's activation when it
/// starts; `B` frees it when it ends, `I` frees the part `input_grad_frees`, `W` the rest). Its
/// maximum on a rank is the simulation's `rank_summary::peak_activations`. For pictures.

#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/simulation.hpp"

namespace ppsched {

/// One step of a memory curve: from `time` on, the rank holds `activations`.
struct memory_point {
    double time = 0;        ///< when the value changes
    double activations = 0; ///< activation memory held from then on

    friend constexpr bool operator==(const memory_point&, const memory_point&) noexcept = default;
};

/// Each rank's memory curve, by rank.
using memory_curves = std::vector<std::vector<memory_point>>;

/// Each rank's activation memory as a step function: `result[r]` starts with `{0, 0}` and has
/// one point per memory change on rank `r` (a forward's start, a backward's end), in time order
/// (several may share a time).
/// Computed in the rank's order with the simulator's arithmetic, so the largest `activations`
/// of `result[r]` equals `sim.ranks[r].peak_activations` exactly. Actions that did not run are
/// left out. Requires `sim` to have its timeline (`simulate_options::timeline`) and `costs` to
/// be the costs it was simulated with. Complexity: O(actions).
[[nodiscard]] constexpr memory_curves memory_timeline(const simulation& sim,
                                                      const cost_model& costs) {
    memory_curves out(sim.ranks.size());
    for (auto& curve : out) curve.push_back({0, 0});
    std::vector<double> held(sim.ranks.size(), 0.0);
    const double frees_by_i = costs.input_grad_frees;
    for (const timed_action& t : sim.timeline) {
        if (!t.ran || t.on != stream::compute || t.rank < 0 ||
            static_cast<std::size_t>(t.rank) >= out.size())
            continue;
        const auto r = static_cast<std::size_t>(t.rank);
        // The same sequence of additions as the simulator's, so the peaks agree to the bit.
        auto apply = [&](const action& part, double when) {
            const double act = costs.at(part.stage()).activation;
            switch (part.kind()) {
            case action_kind::forward:
                held[r] += act;
                break;
            case action_kind::full_backward:
                held[r] -= act;
                break;
            case action_kind::backward_input:
                held[r] -= act * frees_by_i;
                break;
            default: // W
                held[r] -= act * (1 - frees_by_i);
            }
            // Not merged with a point at the same time: a zero-length spike is still a peak.
            out[r].push_back({when, held[r]});
        };
        if (t.act.is_overlap()) {
            apply(t.act.forward_part(), t.start);
            apply(t.act.backward_part(), t.end);
        } else {
            apply(t.act, t.act.kind() == action_kind::forward ? t.start : t.end);
        }
    }
    return out;
}

} // namespace ppsched
