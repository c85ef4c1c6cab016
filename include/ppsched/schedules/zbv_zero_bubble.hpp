#pragma once
/// \file schedules/zbv_zero_bubble.hpp
/// ZB-V: the zero-bubble schedule on the V placement (Qi et al., "Zero Bubble Pipeline
/// Parallelism", ICLR 2024, arXiv:2401.10241, section "ZB-V"; see also Qi et al., "Pipeline
/// Parallelism with Controllable Memory", NeurIPS 2024, arXiv:2405.15362).

#include <cstddef>
#include <string_view>

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// ZB-V (PyTorch `ScheduleZBVZeroBubble`): two stages per rank in a V (rank r holds stages r
/// and 2 * ranks - 1 - r, so the first and last stage share rank 0 and the loss needs no
/// communication). Backwards are split into `I` and `W`; the handcrafted order warms up
/// chunk 0, runs chunk 1 forward-I-W triples, then a steady state that alternates the two
/// chunks, and fills the drain with the delayed `W`. With equal F, I, W times its bubble is
/// close to zero while peak activation memory stays that of 1F1B.
///
/// The pattern is built for max(microbatches, 2 * ranks - 1) microbatches; when there are
/// fewer, the surplus ones become idle slots (as in PyTorch), so rows may end in idle slots.
struct zbv_zero_bubble {
    static constexpr std::string_view name = "zbv_zero_bubble";
    static constexpr std::string_view pytorch_name = "ZBVZeroBubble";
    static constexpr stage_placement placement = stage_placement::v;

    /// Requires: exactly two stages per rank.
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 2, "zbv_zero_bubble: stages_per_rank (",
                        cfg.stages_per_rank,
                        ") must be 2 (the V placement holds two stages per rank)");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 2 (V placement)";
    }
    /// Complexity: linear in the slots produced.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        const int p = cfg.ranks, m = cfg.microbatches;
        // The pattern needs 2p - 1 microbatches to fill the V; surplus ones are blanked below.
        const int n = m > 2 * p - 1 ? m : 2 * p - 1;
        order o(cfg);
        for (int r = 0; r < p; ++r) {
            auto& row = o.rank(r);
            row.reserve(static_cast<std::size_t>(6 * n + r));
            const int c0 = cfg.rank_to_stage(r, 0), c1 = cfg.rank_to_stage(r, 1);
            auto emit = [&row, m](const action& a) {
                row.push_back(a.microbatch() < m ? slot(a) : slot{});
            };
            auto fwd = [&](int stage, int& mb) { emit(action::forward(stage, mb++)); };
            auto input_and_weight = [&](int stage, int& mb) {
                emit(action::backward_input(stage, mb));
                emit(action::backward_weight(stage, mb));
                ++mb;
            };
            int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
            for (int i = 0; i < r; ++i) row.push_back(slot{});
            for (int i = 0; i < 2 * (p - r) - 1; ++i) fwd(c0, f0);
            for (int i = 0; i < r; ++i) {
                fwd(c1, f1);
                fwd(c0, f0);
            }
            for (int i = 0; i < p - r; ++i) {
                fwd(c1, f1);
                input_and_weight(c1, b1);
            }
            // Steady state: the two chunks alternate, each backward with its weight gradient.
            while (f1 < f0 || f0 < n) {
                if (f0 < n) fwd(c0, f0);
                input_and_weight(c0, b0);
                fwd(c1, f1);
                input_and_weight(c1, b1);
            }
            // Drain: input gradients first, the weight gradients fill in behind them.
            int w0 = b0, w1 = b1;
            for (int i = 0; i < r; ++i) {
                emit(action::backward_input(c0, b0++));
                emit(action::backward_input(c1, b1++));
            }
            for (int i = 0; i < p - r; ++i) {
                emit(action::backward_input(c0, b0++));
                emit(action::backward_weight(c0, w0++));
            }
            while (w1 < b1) emit(action::backward_weight(c1, w1++));
            while (w0 < b0) emit(action::backward_weight(c0, w0++));
        }
        return o;
    }
};
static_assert(schedule<zbv_zero_bubble>);

} // namespace ppsched
