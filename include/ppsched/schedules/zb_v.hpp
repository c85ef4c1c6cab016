#pragma once
/// \file schedules/zb_v.hpp
/// ZB-V, automatic: the zero-bubble authors' cost- and memory-aware greedy on the V placement
/// (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv:2401.10241, section 6
/// "ZB-V"; sail-sg zero-bubble-pipeline-parallelism `zbv.py`).

#include <cstddef>
#include <string_view>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/zbv_greedy.hpp"
#include "ppsched/schedules/zb_costs.hpp"

namespace ppsched {

/// ZB-V planned by the authors' greedy (their `ZB-V`; `zbv_zero_bubble` is the handcrafted
/// pattern PyTorch ships). Two stages per rank in a V (rank r holds stages r and
/// 2 * ranks - 1 - r), backwards split into `I` and `W`. The planner times every action with
/// `costs`: it warms up with as many chunk-0 forwards as fit before the chunk-1 forward comes
/// back and within `memory_limit`, then each round puts one `I` and one `F` per rank, filling
/// gaps with `W`; four tries with different switches (and retries that may spend the bubble
/// the first try left) keep the smallest largest bubble. The order depends on the costs; with
/// F = I = W and microbatches >= 2 * ranks it has no bubble inside any rank's span.
///
/// `memory_limit` counts activations of one stage (a chunk: `costs.activation` each), the unit
/// `simulate` reports per rank; the default 0 means `2 * ranks` of them, the memory of 1F1B.
/// The greedy cannot plan with less, so a smaller limit is rejected. A structural type:
/// `generate<zb_v{.costs = {.backward_input = 1.25, .backward_weight = 0.75}}>(cfg)`.
struct zb_v {
    zb_costs costs{};        ///< the cost model the planner times actions with (per chunk)
    double memory_limit = 0; ///< activation memory per rank; 0: 2 * ranks * costs.activation

    static constexpr std::string_view name = "zb_v";
    static constexpr std::string_view pytorch_name = "ZB-V";
    static constexpr stage_placement placement = stage_placement::v;

    /// The memory limit used for `cfg`.
    [[nodiscard]] constexpr double limit(const config& cfg) const noexcept {
        return memory_limit > 0 ? memory_limit : 2.0 * cfg.ranks * costs.activation;
    }

    /// Requires: two stages per rank; valid costs, equal for every stage; memory_limit 0 or
    /// >= 2 * ranks activations of a stage.
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 2, "zb_v: stages_per_rank (", cfg.stages_per_rank,
                        ") must be 2 (the V placement holds two stages per rank)");
        detail::check_zb_costs(costs, "zb_v");
        if (costs.per_stage_count > 0) {
            // The authors' V planner times every chunk alike; with stages of different costs
            // its warm-up and catch-up rules plan forwards before their inputs.
            const auto stage = detail::zb_stage_costs(costs, cfg.num_stages());
            for (std::size_t s = 1; s < stage.size(); ++s)
                PPSCHED_EXPECTS(stage[s].f == stage[0].f && stage[s].i == stage[0].i &&
                                    stage[s].w == stage[0].w,
                                "zb_v: per-stage costs must be equal across stages (stage ", s,
                                " differs from stage 0): the authors' V planner times every "
                                "chunk alike and plans invalid orders otherwise");
        }
        PPSCHED_EXPECTS(memory_limit >= 0, "zb_v: memory_limit (", memory_limit,
                        ") must be >= 0 (0: the default, 2 * ranks activations)");
        PPSCHED_EXPECTS(limit(cfg) >= 2.0 * cfg.ranks * costs.activation, "zb_v: memory_limit (",
                        memory_limit, ") must be >= 2 * ranks (", cfg.ranks,
                        ") * costs.activation (", costs.activation,
                        ") (1F1B's activations of a rank, counted per stage): its warm-up "
                        "forwards need that much, and with less the authors' greedy fails for "
                        "almost every microbatch count");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 2 (V placement); equal costs for every stage; memory_limit 0 "
               "(default) or >= 2 * ranks stage activations";
    }
    /// Complexity: linear in the actions (a bounded number of tries of a linear greedy).
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::zbv_greedy_order(cfg, costs, limit(cfg));
    }
};
static_assert(schedule<zb_v>);

} // namespace ppsched
