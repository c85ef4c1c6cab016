#pragma once
/// \file schedules/interleaved_1f1b.hpp
/// Interleaved 1F1B: 1F1B over several model chunks per rank (Narayanan et al., "Efficient
/// Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC 2021,
/// arXiv:2104.04473).

#include <string_view>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/rank_ops_1f1b.hpp"

namespace ppsched {

/// Interleaved 1F1B (PyTorch `ScheduleInterleaved1F1B`): rank r holds stages r, r + ranks, ...
/// (loop placement). Microbatches run in rounds of `microbatches / rounds`, with
/// `rounds = max(1, microbatches / ranks)`; a round visits the rank's stages in turn. Each rank
/// warms up with `(stages_per_rank - 1) * per_round + 2 * (ranks - 1 - r)` forwards, then
/// alternates forward and backward, then drains. The bubble shrinks by the number of stages per
/// rank compared to 1F1B, at the price of more communication.
///
/// Idle slots are PyTorch's: `r` leading ones, a gap after the warm-up, and one before each
/// cool-down backward.
struct interleaved_1f1b {
    static constexpr std::string_view name = "interleaved_1f1b";
    static constexpr std::string_view pytorch_name = "Interleaved1F1B";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: microbatches divisible by the number of rounds, max(1, microbatches / ranks).
    constexpr void check(const config& cfg) const {
        const int rounds = detail::interleaved_rounds(cfg);
        PPSCHED_EXPECTS(cfg.microbatches % rounds == 0, "interleaved_1f1b: microbatches (",
                        cfg.microbatches, ") must be divisible by the number of rounds (", rounds,
                        "); rounds = max(1, microbatches / ranks) with ", cfg.ranks, " ranks");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "microbatches divisible by rounds = max(1, microbatches / ranks)";
    }
    /// Complexity: linear in the slots produced.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::interleaved_rank_ops(cfg, false);
    }
};
static_assert(schedule<interleaved_1f1b>);

} // namespace ppsched
