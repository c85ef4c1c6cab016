#pragma once
/// \file schedules/detail/dualpipe_steps.hpp
/// The eight steps of DeepSeek's `DualPipe.step()` / `DualPipeV.step()` for one rank, shared by
/// `dualpipe` and `dualpipe_v`: both run the same procedure on a rank's two stages ("phases"),
/// and differ only in which stage is which phase, which microbatch ids each phase runs, and the
/// size of the pipeline the rank sits in.

#include <array>
#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// What one rank runs in the eight steps.
struct dualpipe_rank_plan {
    /// The stage of phase 0 (the pipeline whose forwards start on this rank first) and of
    /// phase 1.
    std::array<int, 2> stage{};
    /// The first microbatch id of each phase (ids of a phase are consecutive).
    std::array<int, 2> first_microbatch{};
    /// Microbatches each phase runs (DualPipeV: all; DualPipe: a direction's half).
    int microbatches = 0;
    /// Ranks from the end of the pipeline to its turn (DualPipeV: ranks; DualPipe: ranks / 2).
    int half = 0;
    /// The rank's distance from the outer end (DualPipeV: the rank; DualPipe: the distance to
    /// the nearer edge); `half - 1` is the middle of the pipeline.
    int position = 0;
};

/// Appends one rank's order to `row`: its phase-0 forwards fill the pipeline, the phases then
/// alternate, the steady state pairs a forward of one phase with the full backward of the other
/// in one `OVERLAP_F_B`, and backwards split into `I` + deferred `W` (a FIFO, DeepSeek's
/// `WeightGradStore`) where a bubble would otherwise be. Requires
/// `plan.microbatches >= 2 * plan.half - plan.position - 1` (the steady state is not empty).
/// Complexity: linear in `plan.microbatches`.
constexpr void dualpipe_rank_steps(rank_slots& row, const dualpipe_rank_plan& plan) {
    const int n = plan.microbatches, R = plan.half, q = plan.position;
    const bool middle = q == R - 1;
    // The exact number of slots the steps below append (so the row is allocated once, 16
    // bytes per action): with A = R - q - 1 and S = n - 2R + q + 1 steady iterations,
    // steps 1-2: 2A + 2(q+1); 3: 3A; 4: 2S (+1 for the middle rank's plain first pair);
    // 5: 2A; 6: 2(q+1); 7: 2A; 8: q+1 weight gradients (step 6 splits q+1 backwards).
    {
        const long long A = R - q - 1, S = n - 2LL * R + q + 1;
        const long long slots = 9 * A + 5 * (q + 1LL) + 2 * S + ((middle && S > 0) ? 1 : 0);
        row.reserve(row.size() + static_cast<std::size_t>(slots > 0 ? slots : 0));
    }
    // Next microbatch (counted from the phase's first) per phase for forwards and backwards.
    std::array<int, 2> next_f{0, 0}, next_b{0, 0};
    // Input gradients whose weight gradient is pending, (stage, microbatch), oldest first.
    std::vector<std::array<int, 2>> pending_w;
    std::size_t w_head = 0;
    pending_w.reserve(static_cast<std::size_t>(2 * n));

    auto mb = [&](std::array<int, 2>& counter, int ph) {
        const auto i = static_cast<std::size_t>(ph);
        return plan.first_microbatch[i] + counter[i]++;
    };
    auto stage = [&](int ph) { return plan.stage[static_cast<std::size_t>(ph)]; };
    auto fwd = [&](int ph) { return action::forward(stage(ph), mb(next_f, ph)); };
    auto full_bwd = [&](int ph) { return action::full_backward(stage(ph), mb(next_b, ph)); };
    auto input_bwd = [&](int ph) {
        const action a = action::backward_input(stage(ph), mb(next_b, ph));
        pending_w.push_back({a.stage(), a.microbatch()});
        return a;
    };
    auto bwd = [&](int ph, bool split) { return split ? input_bwd(ph) : full_bwd(ph); };
    auto weight = [&] {
        if (w_head == pending_w.size()) return; // never happens for a valid plan
        const auto [s, k] = pending_w[w_head++];
        row.push_back(action::backward_weight(s, k));
    };
    // The forward is written first, as DeepSeek's overlapped chunk runs it first.
    auto overlapped = [&](int f_ph, int b_ph) {
        const action f = fwd(f_ph);
        row.push_back(action::overlap(f, full_bwd(b_ph)));
    };

    // 1-2: fill the pipeline, then alternate the phases.
    for (int i = 0; i < 2 * (R - q - 1); ++i) row.push_back(fwd(0));
    for (int i = 0; i <= q; ++i) {
        row.push_back(fwd(0));
        row.push_back(fwd(1));
    }
    // 3: phase-1 backwards start; their weight gradients lag one step.
    for (int i = 0; i < R - q - 1; ++i) {
        row.push_back(input_bwd(1));
        weight();
        row.push_back(fwd(1));
    }
    // 4: steady state, every slot overlapped (DeepSeek leaves the middle rank's first pair
    // plain, so that the backward it feeds starts without waiting for the forward).
    for (int i = 0; i < n - 2 * R + q + 1; ++i) {
        if (i == 0 && middle) {
            row.push_back(fwd(0));
            row.push_back(full_bwd(1));
        } else {
            overlapped(0, 1);
        }
        overlapped(1, 0);
    }
    // 5: phase-0 forwards are done.
    for (int i = 0; i < R - q - 1; ++i) {
        row.push_back(full_bwd(1));
        overlapped(1, 0);
    }
    // 6: drain both phases, switching to split backwards half way through.
    bool split = false;
    for (int i = 0; i <= q; ++i) {
        if (i == (q + 1) / 2 && q % 2 == 1) split = true;
        row.push_back(bwd(1, split));
        if (i == (q + 1) / 2 && q % 2 == 0) split = true;
        row.push_back(bwd(0, split));
    }
    // 7-8: the deferred weight gradients fill the tail.
    for (int i = 0; i < R - q - 1; ++i) {
        weight();
        row.push_back(input_bwd(0));
    }
    for (int i = 0; i <= q; ++i) weight();
}

} // namespace ppsched::detail
