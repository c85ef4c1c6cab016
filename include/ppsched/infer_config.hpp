#pragma once
/// \file infer_config.hpp
/// Recovering a configuration from the actions of an order (for orders read from files).

#include <array>
#include <cstddef>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/order.hpp"

namespace ppsched {
namespace detail {
/// How many action parts of `rows` (an OVERLAP_F_B has two) sit off the rank `cfg` puts their
/// stage on or name a microbatch their stage does not run. Linear in the number of slots.
template <order_range R>
[[nodiscard]] constexpr long long misplaced_parts(const R& rows, const config& cfg) {
    long long misplaced = 0;
    int r = 0;
    for (const auto& row : rows) {
        for (const auto& s : row) {
            const action* a = slot_action(s);
            if (!a) continue;
            std::array<action, 2> parts;
            const int n = a->parts(parts);
            for (int i = 0; i < n; ++i) {
                const action& p = parts[static_cast<std::size_t>(i)];
                if (cfg.stage_to_rank(p.stage()) != r ||
                    (p.has_microbatch() && !cfg.stage_runs_microbatch(p.stage(), p.microbatch())))
                    ++misplaced;
            }
        }
        ++r;
    }
    return misplaced;
}

/// Whether every action of `rows` sits on the rank `cfg` puts its stage on and names a
/// microbatch its stage runs. Linear in the number of slots.
template <order_range R>
[[nodiscard]] constexpr bool fits_placement(const R& rows, const config& cfg) {
    return misplaced_parts(rows, cfg) == 0;
}

/// Sets `cfg.placement` (its sizes kept) to the placement that misplaces the fewest action
/// parts of `rows` (`misplaced_parts`), at a tie `loop`, then `dual` (only with an even
/// stages_per_rank), then `v`: the placement an order fits, and for an order with a stray
/// action (a typo, a pasted row) the one its other actions fit, so that `validate` blames
/// the stray action and not every action of a rank. Linear in the number of slots.
template <order_range R>
constexpr void choose_placement(const R& rows, config& cfg) {
    config best = cfg;
    best.placement = stage_placement::loop;
    long long fewest = misplaced_parts(rows, best);
    const auto consider = [&](stage_placement p) {
        if (fewest == 0) return;
        config c = cfg;
        c.placement = p;
        if (const long long n = misplaced_parts(rows, c); n < fewest) {
            fewest = n;
            best = c;
        }
    };
    if (cfg.stages_per_rank % 2 == 0) consider(stage_placement::dual);
    consider(stage_placement::v);
    cfg = best;
}
} // namespace detail

/// The configuration an order makes obvious: ranks = number of rows, stages = highest stage + 1
/// (rounded up to a multiple of the ranks), microbatches = highest microbatch + 1, and the
/// placement its actions fit (`loop`, else `dual` (two pipelines, DualPipe: every stage where
/// `dual` puts it and running only its direction's microbatches, with even stages per rank),
/// else `v`); for an order that fits none, the one that misplaces the fewest actions
/// (`detail::choose_placement`). Complexity: linear in the number of slots.
template <order_range R>
[[nodiscard]] constexpr config infer_config(const R& rows) {
    config cfg;
    int ranks = 0, max_stage_seen = -1, max_mb = -1;
    for (const auto& row : rows) {
        ++ranks;
        for (const auto& s : row) {
            const action* a = detail::slot_action(s);
            if (!a) continue;
            std::array<action, 2> parts;
            const int n = a->parts(parts);
            for (int i = 0; i < n; ++i) {
                const action& p = parts[static_cast<std::size_t>(i)];
                if (p.stage() > max_stage_seen) max_stage_seen = p.stage();
                if (p.microbatch() > max_mb) max_mb = p.microbatch();
            }
        }
    }
    cfg.ranks = ranks > 0 ? ranks : 1;
    const int stages = max_stage_seen + 1;
    cfg.stages_per_rank = stages <= 0 ? 1 : (stages + cfg.ranks - 1) / cfg.ranks;
    // `max_mb` may be 2^31 - 1: no `+ 1` in int (such an order cannot be valid; the count
    // then saturates and `validate` reports what is missing).
    constexpr int int_max = static_cast<int>((1U << 31) - 1U);
    cfg.microbatches = max_mb < 0 ? 1 : (max_mb == int_max ? int_max : max_mb + 1);
    detail::choose_placement(rows, cfg);
    return cfg;
}

} // namespace ppsched
