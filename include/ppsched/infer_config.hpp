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
/// Whether every action of `rows` sits on the rank `cfg` puts its stage on and names a
/// microbatch its stage runs. Linear in the number of slots.
template <order_range R>
[[nodiscard]] constexpr bool fits_placement(const R& rows, const config& cfg) {
    int r = 0;
    for (const auto& row : rows) {
        for (const auto& s : row) {
            const action* a = slot_action(s);
            if (!a) continue;
            std::array<action, 2> parts;
            const int n = a->parts(parts);
            for (int i = 0; i < n; ++i) {
                const action& p = parts[static_cast<std::size_t>(i)];
                if (cfg.stage_to_rank(p.stage()) != r) return false;
                if (p.has_microbatch() && !cfg.stage_runs_microbatch(p.stage(), p.microbatch()))
                    return false;
            }
        }
        ++r;
    }
    return true;
}
} // namespace detail

/// The configuration an order makes obvious: ranks = number of rows, stages = highest stage + 1
/// (rounded up to a multiple of the ranks), microbatches = highest microbatch + 1, and the `v`
/// placement when every stage sits where `v` puts it but `loop` does not. The `dual` placement
/// (two pipelines, DualPipe) when, besides, the stages per rank are even, every stage sits
/// where `dual` puts it and runs only its direction's microbatches (the first half of the
/// microbatches in the first half of the stages, the second half in the second).
/// Complexity: linear in the number of slots.
template <order_range R>
[[nodiscard]] constexpr config infer_config(const R& rows) {
    config cfg;
    int ranks = 0, max_stage_seen = -1, max_mb = -1;
    for (const auto& row : rows) {
        (void)row;
        ++ranks;
    }
    bool loop_ok = true, v_ok = true;
    int r = 0;
    for (const auto& row : rows) {
        for (const auto& s : row) {
            const action* a = detail::slot_action(s);
            if (!a) continue;
            std::array<action, 2> parts;
            const int n = a->parts(parts);
            for (int i = 0; i < n; ++i) {
                const action& p = parts[static_cast<std::size_t>(i)];
                if (p.stage() > max_stage_seen) max_stage_seen = p.stage();
                if (p.microbatch() > max_mb) max_mb = p.microbatch();
                const int pass = p.stage() / (ranks > 0 ? ranks : 1);
                const int pos = p.stage() % (ranks > 0 ? ranks : 1);
                if (pos != r) loop_ok = false;
                if ((pass % 2 == 1 ? ranks - 1 - pos : pos) != r) v_ok = false;
            }
        }
        ++r;
    }
    cfg.ranks = ranks > 0 ? ranks : 1;
    const int stages = max_stage_seen + 1;
    cfg.stages_per_rank = stages <= 0 ? 1 : (stages + cfg.ranks - 1) / cfg.ranks;
    // `max_mb` may be 2^31 - 1: no `+ 1` in int (such an order cannot be valid; the count
    // then saturates and `validate` reports what is missing).
    constexpr int int_max = static_cast<int>((1U << 31) - 1U);
    cfg.microbatches = max_mb < 0 ? 1 : (max_mb == int_max ? int_max : max_mb + 1);
    cfg.placement = (!loop_ok && v_ok) ? stage_placement::v : stage_placement::loop;
    if (!loop_ok && cfg.stages_per_rank % 2 == 0) {
        config dual = cfg;
        dual.placement = stage_placement::dual;
        if (detail::fits_placement(rows, dual)) cfg = dual;
    }
    return cfg;
}

} // namespace ppsched
