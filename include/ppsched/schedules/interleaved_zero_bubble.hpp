#pragma once
/// \file schedules/interleaved_zero_bubble.hpp
/// Interleaved zero bubble: interleaved 1F1B with backwards split into input and weight
/// gradients, the weight gradients filling the bubbles (Qi et al., "Zero Bubble Pipeline
/// Parallelism", ICLR 2024, arXiv:2401.10241; PyTorch's "ZB1P"-style interleaved variant).

#include <string_view>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/dependency_bubbles.hpp"
#include "ppsched/schedules/detail/rank_ops_1f1b.hpp"

namespace ppsched {

/// Interleaved zero bubble (PyTorch `ScheduleInterleavedZeroBubble`): the rounds and stage
/// order of `interleaved_1f1b`, a warm-up of one forward (not two) per downstream rank,
/// backwards as `I` (input gradient) with the `W` (weight gradient) of the oldest pending `I`
/// following each `I` once rank r has run r of them; the remaining `W` drain at the end. The
/// orders are then replayed in lock step and idle slots inserted where a forward would run
/// before its input is ready (only needed when microbatches < ranks).
struct interleaved_zero_bubble {
    static constexpr std::string_view name = "interleaved_zero_bubble";
    static constexpr std::string_view pytorch_name = "InterleavedZeroBubble";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: microbatches divisible by the number of rounds, max(1, microbatches / ranks).
    constexpr void check(const config& cfg) const {
        const int rounds = detail::interleaved_rounds(cfg);
        PPSCHED_EXPECTS(cfg.microbatches % rounds == 0, "interleaved_zero_bubble: microbatches (",
                        cfg.microbatches, ") must be divisible by the number of rounds (", rounds,
                        "); rounds = max(1, microbatches / ranks) with ", cfg.ranks, " ranks");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "microbatches divisible by rounds = max(1, microbatches / ranks)";
    }
    /// Complexity: linear in the slots produced (see `detail::add_dependency_bubbles`).
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::add_dependency_bubbles(detail::interleaved_rank_ops(cfg, true));
    }
};
static_assert(schedule<interleaved_zero_bubble>);

} // namespace ppsched
