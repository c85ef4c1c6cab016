#pragma once
/// \file generate.hpp
/// `generate<S>(cfg)`: the order of a schedule policy for a configuration.

#include <utility>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// An estimate, from above, of the slots the order of a built-in schedule holds for `cfg`, for
/// callers that must bound memory before generating: at most three compute actions per stage
/// and microbatch, plus the idle steps of PyTorch's step tables through warm-up and cool-down
/// (at most about 6.5 x ranks x stages per rank per rank, ZBVZeroBubble with one microbatch;
/// the V schedules' planning grids are of the same order). Quadratic in the ranks: 2048 ranks
/// with one microbatch make about 60 M slots. In floating point: the product of the counts
/// may exceed any integer type.
[[nodiscard]] constexpr double estimated_slots(const config& cfg) noexcept {
    const double p = cfg.ranks, v = cfg.stages_per_rank, m = cfg.microbatches;
    return 3 * p * v * m + 7 * p * p * v;
}

/// The pipeline order of the schedule `policy` for `cfg` (placement taken from the policy).
/// Throws `config_error` (at compile time: a diagnostic) when `cfg` is malformed, would make
/// 2^31 slots or more (`estimated_slots`), or the schedule does not support it. Complexity: linear
/// in the number of slots produced.
template <schedule S>
[[nodiscard]] constexpr order generate(const S& policy, config cfg) {
    cfg.placement = S::placement;
    // Counts first (a policy may divide by them), then the policy's own message, which says
    // more than the placement's generic requirement (e.g. `dual` needs even stages per rank).
    detail::check_counts(cfg);
    // The generators index slots and steps with int: an order of 2^31 slots or more is out
    // of reach (and of any machine's memory at 16 bytes a slot).
    PPSCHED_EXPECTS(estimated_slots(cfg) < 2147483648.0, "ppsched::generate: ", cfg.ranks,
                    " ranks x ", cfg.stages_per_rank, " stages per rank x ", cfg.microbatches,
                    " microbatches would make about ", estimated_slots(cfg),
                    " slots, more than the 2^31 an order may hold");
    policy.check(cfg);
    check(cfg);
    if constexpr (requires {
                      { policy.generate(cfg) } -> std::same_as<order>;
                  }) {
        return policy.generate(cfg);
    } else {
        order o(cfg);
        for (int r = 0; r < cfg.ranks; ++r) {
            for (const auto& s : policy.rank_actions(cfg, r)) {
                const action* a = detail::slot_action(s);
                if (a)
                    o.push(r, *a);
                else
                    o.push_idle(r);
            }
        }
        return o;
    }
}

/// `generate(S{}, cfg)` for a policy type.
template <schedule S>
[[nodiscard]] constexpr order generate(const config& cfg) {
    return generate(S{}, cfg);
}

/// `generate(Policy, cfg)` for a configured policy value (a structural type), e.g.
/// `generate<megatron_interleaved{.microbatch_group_size = 4}>(cfg)`.
template <auto Policy>
requires schedule<std::remove_cvref_t<decltype(Policy)>>
[[nodiscard]] constexpr order generate(const config& cfg) { return generate(Policy, cfg); }

} // namespace ppsched
