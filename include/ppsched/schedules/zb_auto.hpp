#pragma once
/// \file schedules/zb_auto.hpp
/// The automatic zero-bubble schedules under a memory limit and a cost model: ZB-1P, ZB-2P and
/// the general ZB (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv:2401.10241,
/// section 3 "automatic scheduling"; the heuristic of the authors' code, sail-sg
/// zero-bubble-pipeline-parallelism `zb.py`).

#include <string_view>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/zb_greedy.hpp"
#include "ppsched/schedules/zb_costs.hpp"

namespace ppsched {

namespace detail {
constexpr void check_zb_single_stage(const config& cfg, const zb_costs& costs, const char* who) {
    PPSCHED_EXPECTS(cfg.stages_per_rank == 1, who, ": stages_per_rank (", cfg.stages_per_rank,
                    ") must be 1 (the automatic zero-bubble schedule plans one stage per rank; "
                    "zb_v is its V-placed form)");
    check_zb_costs(costs, who);
}
} // namespace detail

/// ZB (the authors' automatic zero-bubble schedule): one stage per rank, backwards split into
/// `I` and `W`. A greedy planner times every action with `costs`, warms each rank up with as
/// many forwards as fit before its first `I` returns and within `memory_limit`, and places each
/// `W` where the rank would otherwise idle; it makes eight tries with different switches and
/// keeps the one with the shortest longest rank span. The order therefore depends on the costs.
///
/// `memory_limit` is the activation memory a rank may hold, in the units of
/// `costs.activation` (`ranks * activation` is 1F1B's; 0: no limit). A structural type:
/// `generate<zb_auto{.costs = {.backward_input = 1.25}, .memory_limit = 6}>(cfg)`.
struct zb_auto {
    zb_costs costs{};        ///< the cost model the planner times actions with
    double memory_limit = 0; ///< activation memory per rank; 0: no limit

    static constexpr std::string_view name = "zb_auto";
    static constexpr std::string_view pytorch_name = "ZB";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: one stage per rank; valid costs; memory_limit 0 or >= costs.activation.
    constexpr void check(const config& cfg) const {
        detail::check_zb_single_stage(cfg, costs, "zb_auto");
        PPSCHED_EXPECTS(memory_limit == 0 || memory_limit >= costs.activation,
                        "zb_auto: memory_limit (", memory_limit,
                        ") must be 0 (no limit) or >= costs.activation (", costs.activation,
                        "): every rank holds at least the activation of the microbatch it "
                        "runs");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 1; memory_limit 0 (none) or >= one activation";
    }
    /// The memory limit the planner keeps for `cfg` (with no limit, the authors' default of
    /// 3 * microbatches activations, which never binds).
    [[nodiscard]] constexpr double limit(const config& cfg) const noexcept {
        return memory_limit > 0 ? memory_limit : 3.0 * cfg.microbatches * costs.activation;
    }
    /// Complexity: linear in the actions (eight tries of a linear greedy).
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::zb_greedy_order(cfg, costs, limit(cfg), "zb_auto");
    }
};
static_assert(schedule<zb_auto>);

/// ZB-1P: `zb_auto` with 1F1B's memory, `ranks` activations per rank.
struct zb_1p {
    zb_costs costs{}; ///< the cost model the planner times actions with

    static constexpr std::string_view name = "zb_1p";
    static constexpr std::string_view pytorch_name = "ZB-1P";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: one stage per rank; valid costs.
    constexpr void check(const config& cfg) const {
        detail::check_zb_single_stage(cfg, costs, "zb_1p");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 1";
    }
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::zb_greedy_order(cfg, costs, cfg.ranks * costs.activation, "zb_1p");
    }
};
static_assert(schedule<zb_1p>);

/// ZB-2P: `zb_auto` with twice 1F1B's memory, `2 * ranks` activations per rank (enough for
/// no bubble at all when F, I, W are equal).
struct zb_2p {
    zb_costs costs{}; ///< the cost model the planner times actions with

    static constexpr std::string_view name = "zb_2p";
    static constexpr std::string_view pytorch_name = "ZB-2P";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: one stage per rank; valid costs.
    constexpr void check(const config& cfg) const {
        detail::check_zb_single_stage(cfg, costs, "zb_2p");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 1";
    }
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::zb_greedy_order(cfg, costs, 2.0 * cfg.ranks * costs.activation, "zb_2p");
    }
};
static_assert(schedule<zb_2p>);

} // namespace ppsched
