#pragma once
/// \file schedules/detail/zb_handcrafted.hpp
/// The handcrafted zero-bubble schedules ZB-H1 and ZB-H2 (Qi et al., ICLR 2024, section 3),
/// which differ only in how many forwards a rank runs before its first input gradient.

#include <cstddef>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// The order of ZB-H`depth` (1 or 2) for `cfg` (one stage per rank, microbatches >= 2 *
/// ranks, checked by the policies). Rank r runs `depth * (ranks - 1 - r)` warm-up forwards;
/// then, per microbatch i, the next forward (while any is left), I(i), and, once rank r is
/// `depth * r` input gradients behind the first rank's warm-up, the oldest pending W. The W it
/// holds back fill the bubbles of the drain; each held-back W keeps one activation alive,
/// which is where ZB-H2's extra memory goes.
/// Complexity: linear in the actions.
[[nodiscard]] constexpr order zb_handcrafted_order(const config& cfg, int depth) {
    const int p = cfg.ranks, m = cfg.microbatches;
    order o(cfg);
    for (int r = 0; r < p; ++r) {
        const int stage = cfg.rank_to_stage(r, 0);
        o.rank(r).reserve(3 * static_cast<std::size_t>(m));
        const int warmup = depth * (p - 1 - r);
        // Rank 0 emits a W right after each I once its warm-up is done; rank r lags it by the
        // difference of warm-ups, so its first W lands in the slot rank 0's bubble leaves.
        const int lag = depth * (p - 1);
        int f = 0, w = 0;
        while (f < warmup) o.push(r, action::forward(stage, f++));
        for (int i = 0; i < m; ++i) {
            if (f < m) o.push(r, action::forward(stage, f++));
            o.push(r, action::backward_input(stage, i));
            if (warmup + i >= lag) o.push(r, action::backward_weight(stage, w++));
        }
        while (w < m) o.push(r, action::backward_weight(stage, w++));
    }
    return o;
}

} // namespace ppsched::detail
