#pragma once
/// \file algorithms/step_timeline.hpp
/// `step_timeline(order)`: reads a step layout (an order in which slot t of every rank is step t:
/// the output of `add_spacing` or of `simulate_steps`) as a timeline in which every action lasts
/// one unit from its step. The pictures (`io/svg.hpp`), traces and text timelines then draw
/// PyTorch's visualizer layout with the same code as a timed simulation.

#include <array>
#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/simulation.hpp"

namespace ppsched {

/// The step layout `rows` as a `simulation` with one time unit per step: the action in slot t
/// runs from t to t + 1 on its stream (compute, comm or p2p, as `simulate` assigns them); idle
/// slots are gaps. The summary is computed as `simulate` computes it, counting one unit per
/// compute action for `busy` and per UNSHARD, RESHARD or REDUCE_GRAD for `comm_busy`; memory
/// uses one unit of activation per microbatch (an `F` holds it until its `B`, or its `W`; `I`
/// frees nothing) and no parameters. Nothing is checked but the shape: lay the order out with
/// `add_spacing` or `simulate_steps` first, which check dependencies.
/// Requires: one row per rank of `cfg` (else `config_error`).
/// Complexity: linear in the slots.
template <order_range R>
[[nodiscard]] constexpr simulation step_timeline(const R& rows, const config& cfg) {
    check(cfg);
    simulation out;
    int r = 0;
    for (const auto& row : rows) {
        rank_summary sum;
        sum.rank = r;
        double memory = 0;
        int i = 0;
        for (const auto& s : row) {
            const action* a = detail::slot_action(s);
            if (a) {
                timed_action t;
                t.act = *a;
                t.rank = r;
                t.slot = i;
                t.on = stream_of(a->kind());
                t.ran = true;
                t.start = i;
                t.end = i + 1;
                if (t.on == stream::compute) sum.busy += 1;
                if (t.on == stream::comm) sum.comm_busy += 1;
                if (t.on == stream::p2p) out.lowered = true;
                std::array<action, 2> parts;
                const int n = a->parts(parts);
                // As `simulate` counts: a forward allocates at its start, a backward frees at its
                // end, so in an OVERLAP_F_B both microbatches are held at once.
                for (int k = 0; k < n; ++k)
                    if (parts[static_cast<std::size_t>(k)].kind() == action_kind::forward)
                        memory += 1;
                if (memory > sum.peak_activations) {
                    sum.peak_activations = memory;
                    sum.peak_activations_at = t.start;
                }
                for (int k = 0; k < n; ++k) {
                    const action_kind kind = parts[static_cast<std::size_t>(k)].kind();
                    if (kind == action_kind::full_backward || kind == action_kind::backward_weight)
                        memory -= 1;
                }
                sum.end = t.end;
                out.timeline.push_back(t);
            }
            ++i;
        }
        if (sum.end > out.makespan) out.makespan = sum.end;
        out.ranks.push_back(sum);
        ++r;
    }
    PPSCHED_EXPECTS(r == cfg.ranks, "ppsched::step_timeline: the order has ", r,
                    " rows but the configuration has ", cfg.ranks, " ranks");
    detail::summarize_ranks(out);
    return out;
}

/// `step_timeline(o, o.cfg())`.
[[nodiscard]] constexpr simulation step_timeline(const order& o) {
    return step_timeline(o, o.cfg());
}

} // namespace ppsched
